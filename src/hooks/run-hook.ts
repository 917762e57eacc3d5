/**
 * One client hook run, as `errand hook <client> <event>` does it: find the Errand servers of the client
 * that runs this hook (its nearest ancestor that launched `errand mcp`), ask each for the session's
 * queued notifications, print them in the client's JSON, then confirm each reservation — or give it back
 * when nothing was printed. Whatever goes wrong (no server, a dead one, a broken socket, a slow answer),
 * the hook prints nothing and the client goes on: a hook must never break its client.
 */
import { createConnection, type Socket } from 'node:net';
import { systemClock } from '../tasks/clock.js';
import { formatHookOutput, type HookClient, type HookMoment } from './hook-clients.js';
import {
  encodeLine,
  HOOK_PROTOCOL_VERSION,
  LineReader,
  parseTakeAnswer,
  type RunningTask,
  type TakeAnswer,
} from './hook-protocol.js';
import { ancestorsOf, listLiveServers, type ServerRecord, serversOfClient } from './server-registry.js';

export const RUN_HOOK_DEFAULTS = Object.freeze({
  /** The most bytes of notification text one hook prints. */
  maxBytes: 10_000,
  /** How long the end of a turn waits for running background work to end, in ms. */
  stopWaitMs: 120_000,
  /** How long a tool-result or prompt hook waits for a server's answer, in ms. */
  answerTimeoutMs: 5_000,
  /** How long the hook waits for a server to acknowledge its commit, in ms. */
  settleTimeoutMs: 2_000,
});

export interface RunHookOptions {
  readonly client: HookClient;
  readonly moment: HookMoment;
  /** The data directory the servers registered in. */
  readonly home: string;
  readonly stopHookActive: boolean;
  readonly maxBytes?: number;
  readonly stopWaitMs?: number;
  /** The process whose ancestors are searched. Default: this one. */
  readonly pid?: number;
  /** Writes the hook's output (synchronously: once it returns, the output was handed over). */
  readonly write: (text: string) => void;
  /** Diagnostics (never stdout). */
  readonly warn: (message: string) => void;
  readonly now?: () => number;
}

export interface HookRunResult {
  /** What was printed ('' for nothing). */
  readonly output: string;
  /** Notifications printed and confirmed. */
  readonly delivered: number;
  /** Servers the hook asked. */
  readonly servers: number;
}

interface Borrowed {
  readonly connection: HookConnection;
  readonly answer: TakeAnswer;
  readonly receivedAt: number;
}

export async function runHook(options: RunHookOptions): Promise<HookRunResult> {
  const now = options.now ?? systemClock.now;
  const maxBytes = options.maxBytes ?? RUN_HOOK_DEFAULTS.maxBytes;
  const waitMs = options.moment === 'stop' ? (options.stopWaitMs ?? RUN_HOOK_DEFAULTS.stopWaitMs) : 0;
  const servers = serversOfClient(listLiveServers(options.home), ancestorsOf(options.pid ?? process.pid));
  if (servers.length === 0) return { output: '', delivered: 0, servers: 0 };

  const borrowed: Borrowed[] = [];
  let budget = maxBytes;
  // First, what is queued now, server by server within one budget.
  for (const server of servers) {
    if (budget <= 0) break;
    const taken = await borrow(server, { moment: options.moment, maxBytes: budget, waitMs: 0 }, options);
    if (taken === undefined) continue;
    borrowed.push(taken);
    budget -= bytesOf(taken.answer);
  }
  // At the end of a turn with nothing queued: wait on every server at once; the first ending wins.
  if (options.moment === 'stop' && !borrowed.some((taken) => taken.answer.notifications.length > 0)) {
    for (const taken of borrowed) taken.connection.settle('release');
    borrowed.length = 0;
    borrowed.push(...(await waitForEnding(servers, maxBytes, waitMs, options)));
  }

  const notifications = borrowed.flatMap((taken) => taken.answer.notifications);
  const stillRunning = borrowed.flatMap((taken) => taken.answer.stillRunning);
  const more = borrowed.reduce((sum, taken) => sum + taken.answer.more, 0);
  const text =
    notifications.length > 0
      ? notificationText(options.moment, notifications, more)
      : options.moment === 'stop'
        ? reminderText(stillRunning)
        : '';
  // A reservation held so long that its lease may have run out could be someone else's by now.
  const fresh = borrowed.every((taken) => now() - taken.receivedAt < taken.answer.leaseMs / 2);
  const output = fresh ? formatHookOutput(options.client, options.moment, text) : '';
  if (output !== '') {
    try {
      options.write(`${output}\n`);
    } catch (error) {
      options.warn(`writing the hook output failed: ${describe(error)}`);
      await Promise.all(borrowed.map((taken) => taken.connection.settle('release')));
      return { output: '', delivered: 0, servers: servers.length };
    }
  }
  // Only what was printed is confirmed: a reminder left out because notifications were printed goes back.
  const printed = (taken: Borrowed): boolean =>
    output !== '' &&
    (taken.answer.notifications.length > 0 ||
      (notifications.length === 0 && taken.answer.stillRunning.length > 0));
  const settled = await Promise.all(
    borrowed.map((taken) => taken.connection.settle(printed(taken) ? 'commit' : 'release')),
  );
  const delivered = borrowed.reduce(
    (sum, taken, index) => sum + (settled[index] && printed(taken) ? taken.answer.notifications.length : 0),
    0,
  );
  return { output, delivered, servers: servers.length };
}

async function waitForEnding(
  servers: readonly ServerRecord[],
  maxBytes: number,
  waitMs: number,
  options: RunHookOptions,
): Promise<Borrowed[]> {
  const pending = servers.map((server) =>
    borrow(server, { moment: 'stop', maxBytes, waitMs }, options, waitMs + RUN_HOOK_DEFAULTS.answerTimeoutMs),
  );
  const answers: Borrowed[] = [];
  let winner: Borrowed | undefined;
  await new Promise<void>((resolve) => {
    let open = pending.length;
    for (const promise of pending) {
      void promise.then((taken) => {
        open -= 1;
        if (taken !== undefined) {
          if (winner === undefined && taken.answer.notifications.length > 0) {
            winner = taken;
            resolve();
          } else answers.push(taken);
        }
        if (open === 0) resolve();
      });
    }
  });
  if (winner !== undefined) {
    // The others go back (a wait still open is abandoned: its server releases what it held).
    for (const promise of pending) {
      void promise.then((taken) => {
        if (taken !== undefined && taken !== winner) taken.connection.settle('release');
      });
    }
    return [winner];
  }
  return answers;
}

function bytesOf(answer: TakeAnswer): number {
  return answer.notifications.reduce(
    (sum, notification) => sum + Buffer.byteLength(notification.text) + 2,
    0,
  );
}

function notificationText(
  moment: HookMoment,
  notifications: readonly { readonly text: string }[],
  more: number,
): string {
  const parts = notifications.map((notification) => notification.text);
  if (more > 0) {
    parts.push(`(${more} more task notification${more === 1 ? '' : 's'} will follow)`);
  }
  if (moment === 'stop') {
    parts.push(
      'Background work you started has ended (above). Take its result into account before you finish.',
    );
  }
  return parts.join('\n\n');
}

function reminderText(stillRunning: readonly RunningTask[]): string {
  if (stillRunning.length === 0) return '';
  const listed = stillRunning.map((task) => `${task.id} (${task.label})`).join(', ');
  return [
    `Background work you started is still running: ${listed}.`,
    'Wait for it with task_output (wait: true) if its result matters, or stop it with task_kill if it no longer does.',
    'If this session ends now, it is stopped unreported.',
  ].join(' ');
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function borrow(
  server: ServerRecord,
  request: { moment: HookMoment; maxBytes: number; waitMs: number },
  options: RunHookOptions,
  timeoutMs: number = RUN_HOOK_DEFAULTS.answerTimeoutMs,
): Promise<Borrowed | undefined> {
  const connection = new HookConnection(server.socket);
  try {
    const answer = await connection.take(
      {
        op: 'take',
        version: HOOK_PROTOCOL_VERSION,
        moment: request.moment,
        maxBytes: Math.max(1, request.maxBytes),
        waitMs: request.waitMs,
        stopHookActive: options.stopHookActive,
      },
      timeoutMs,
    );
    return { connection, answer, receivedAt: (options.now ?? systemClock.now)() };
  } catch (error) {
    connection.close();
    options.warn(
      `server ${server.server.pid} (session ${server.sessionId}) did not answer: ${describe(error)}`,
    );
    return undefined;
  }
}

/** One connection to a server's socket: a `take`, then one `commit` or `release`. */
class HookConnection {
  readonly #socket: Socket;
  readonly #lines = new LineReader();
  readonly #received: unknown[] = [];
  #waiting: ((line: unknown) => void) | undefined;
  #failed: Error | undefined;
  #settled = false;

  constructor(path: string) {
    this.#socket = createConnection(path);
    this.#socket.on('data', (chunk: Buffer) => {
      try {
        for (const line of this.#lines.push(chunk)) this.#deliver(JSON.parse(line));
      } catch (error) {
        this.#fail(error instanceof Error ? error : new Error(String(error)));
      }
    });
    this.#socket.on('error', (error) => this.#fail(error));
    this.#socket.on('close', () => this.#fail(new Error('the server closed the connection')));
  }

  async take(request: object, timeoutMs: number): Promise<TakeAnswer> {
    this.#socket.write(encodeLine(request));
    const answer = parseTakeAnswer(await this.#next(timeoutMs));
    if (answer === undefined) throw new Error('the server answered something that is not a take answer');
    return answer;
  }

  /** Commits or releases what the take reserved; true when the server confirmed it. Never throws. */
  async settle(op: 'commit' | 'release'): Promise<boolean> {
    if (this.#settled) return false;
    this.#settled = true;
    try {
      this.#socket.write(encodeLine({ op }));
      const answer = (await this.#next(RUN_HOOK_DEFAULTS.settleTimeoutMs)) as { ok?: unknown } | null;
      return answer?.ok === true;
    } catch {
      return false;
    } finally {
      this.close();
    }
  }

  close(): void {
    this.#socket.destroy();
  }

  #deliver(line: unknown): void {
    const waiting = this.#waiting;
    this.#waiting = undefined;
    if (waiting) waiting(line);
    else this.#received.push(line);
  }

  #fail(error: Error): void {
    this.#failed ??= error;
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.(undefined);
  }

  #next(timeoutMs: number): Promise<unknown> {
    if (this.#received.length > 0) return Promise.resolve(this.#received.shift());
    if (this.#failed) return Promise.reject(this.#failed);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiting = undefined;
        reject(new Error(`no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#waiting = (line) => {
        clearTimeout(timer);
        if (line === undefined && this.#failed) reject(this.#failed);
        else resolve(line);
      };
    });
  }
}
