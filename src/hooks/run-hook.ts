/**
 * One client hook run, as `errand hook <client> <event>` does it: find the Errand servers of the client
 * that runs this hook (its nearest ancestor that launched `errand mcp`), ask each for the session's
 * queued notifications, print them in the client's JSON, then confirm each reservation — or give it back
 * when nothing was printed. Whatever goes wrong (no server, a dead one, a broken socket, a slow answer),
 * the hook prints nothing and the client goes on: a hook must never break its client.
 *
 * At the end of a turn what the hold waits for depends on the client: a headless run is held until its
 * work ends (up to `headlessWaitMs`); Claude Code interactive is not held (its `wake` hook wakes the model
 * later); Codex and Gemini CLI interactive wait for the first ending, up to `stopWaitMs`.
 */
import { createConnection, type Socket } from 'node:net';
import { systemClock } from '../tasks/clock.js';
import { isHeadlessCommandLine } from './client-mode.js';
import { handOverText } from './hand-over-text.js';
import {
  canWake,
  formatHookOutput,
  type HookClient,
  type HookMoment,
  promptContinuesBlock,
} from './hook-clients.js';
import {
  encodeLine,
  HOOK_PROTOCOL_VERSION,
  type HoldMode,
  LineReader,
  parseTakeAnswer,
  type TakeAnswer,
} from './hook-protocol.js';
import {
  ancestorsOf,
  type CommandLineReader,
  listLiveServers,
  procfsCommandLine,
  type ServerRecord,
  serversOfClient,
} from './server-registry.js';

export const RUN_HOOK_DEFAULTS = Object.freeze({
  /** The most bytes of notification text one hook prints (past it, a compact form). */
  maxBytes: 10_000,
  /** Codex and Gemini CLI interactive: how long the end of a turn waits for the first ending, in ms. */
  stopWaitMs: 120_000,
  /** A headless run: how long the end of a turn holds it for its running work, in ms (30 minutes). */
  headlessWaitMs: 1_800_000,
  /** Claude Code interactive: how long the wake hook waits for the next ending, in ms (a day). */
  wakeWaitMs: 86_400_000,
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
  /** The client's limit on end-of-turn blocks in a row (0: none); see `blockCapOf`. */
  readonly blockCap: number;
  readonly maxBytes?: number;
  readonly stopWaitMs?: number;
  readonly headlessWaitMs?: number;
  readonly wakeWaitMs?: number;
  /** Whether the client runs headless. Default: read from its command line. */
  readonly headless?: boolean;
  /** The process whose ancestors are searched. Default: this one. */
  readonly pid?: number;
  /** Writes the hook's output (synchronously: once it returns, the output was handed over). */
  readonly write: (text: string) => void;
  /** Writes a wake's text (to stderr, synchronously). Default: `write`. */
  readonly writeWake?: (text: string) => void;
  /** Diagnostics (never stdout). */
  readonly warn: (message: string) => void;
  readonly now?: () => number;
  readonly commandLine?: CommandLineReader;
}

export interface HookRunResult {
  /** What was printed ('' for nothing). */
  readonly output: string;
  /** Notifications printed and confirmed. */
  readonly delivered: number;
  /** Servers the hook asked. */
  readonly servers: number;
  /** The exit code for the client: 2 for a wake that wakes the model, else 0. */
  readonly exitCode: 0 | 2;
}

interface Borrowed {
  readonly connection: HookConnection;
  readonly answer: TakeAnswer;
  readonly receivedAt: number;
}

interface Hold {
  readonly hold: HoldMode;
  readonly waitMs: number;
}

/** What an end-of-turn (or wake) take waits for, for this client and how it runs. */
function holdOf(options: RunHookOptions, headless: boolean): Hold {
  if (options.moment === 'wake') {
    return { hold: 'first', waitMs: options.wakeWaitMs ?? RUN_HOOK_DEFAULTS.wakeWaitMs };
  }
  if (options.moment !== 'stop') return { hold: 'none', waitMs: 0 };
  if (headless) return { hold: 'all', waitMs: options.headlessWaitMs ?? RUN_HOOK_DEFAULTS.headlessWaitMs };
  if (canWake(options.client)) return { hold: 'none', waitMs: 0 };
  return { hold: 'first', waitMs: options.stopWaitMs ?? RUN_HOOK_DEFAULTS.stopWaitMs };
}

export async function runHook(options: RunHookOptions): Promise<HookRunResult> {
  const now = options.now ?? systemClock.now;
  const maxBytes = options.maxBytes ?? RUN_HOOK_DEFAULTS.maxBytes;
  const servers = serversOfClient(listLiveServers(options.home), ancestorsOf(options.pid ?? process.pid));
  const nothing = { output: '', delivered: 0, servers: servers.length, exitCode: 0 as const };
  if (servers.length === 0) {
    options.warn(`no Errand server of this client is registered in ${options.home}; nothing to hand over`);
    return nothing;
  }
  const headless =
    options.headless ??
    isHeadlessCommandLine(
      options.client,
      (options.commandLine ?? procfsCommandLine)((servers[0] as ServerRecord).client.pid) ?? [],
    );
  // A headless run ends with its turn, and kills background hooks: its end-of-turn hook holds instead.
  if (options.moment === 'wake' && headless) return nothing;
  const hold = holdOf(options, headless);

  const pending = servers.map((server) =>
    borrow(
      server,
      { moment: options.moment, maxBytes, ...hold, blockCap: options.blockCap },
      options,
      hold.waitMs + RUN_HOOK_DEFAULTS.answerTimeoutMs,
    ),
  );
  const borrowed = await gather(pending, hold.hold === 'first');

  const notifications = borrowed.flatMap((taken) => taken.answer.notifications);
  const stillRunning = borrowed.flatMap((taken) => taken.answer.stillRunning);
  const notice = borrowed.find((taken) => taken.answer.notice !== undefined)?.answer.notice;
  const more = borrowed.reduce((sum, taken) => sum + taken.answer.more, 0);
  // After a compaction: the digest first (the oldest server's; each server's own session is its own).
  const digests = borrowed.flatMap((taken) =>
    taken.answer.digest === undefined ? [] : [taken.answer.digest],
  );
  const digestText = digests.join('\n\n');
  const notificationText = handOverText(
    { notifications, more, stillRunning, notice },
    Math.max(1, maxBytes - Buffer.byteLength(digestText)),
    { moment: options.moment, headless, wakes: canWake(options.client), heldMs: hold.waitMs },
  );
  const text = [digestText, notificationText].filter((part) => part !== '').join('\n\n');
  // A reservation held so long that its lease may have run out could be someone else's by now.
  const fresh = borrowed.every((taken) => now() - taken.receivedAt < taken.answer.leaseMs / 2);
  const output = fresh ? formatHookOutput(options.client, options.moment, text) : '';
  if (output !== '') {
    try {
      if (options.moment === 'wake')
        (options.writeWake ?? options.write)(`${output}
`);
      else
        options.write(`${output}
`);
    } catch (error) {
      options.warn(`writing the hook output failed: ${describe(error)}`);
      await Promise.all(borrowed.map((taken) => taken.connection.settle('release')));
      return nothing;
    }
  }
  const printed = (taken: Borrowed): boolean =>
    output !== '' &&
    (taken.answer.notifications.length > 0 ||
      taken.answer.stillRunning.length > 0 ||
      taken.answer.digest !== undefined);
  const settled = await Promise.all(
    borrowed.map((taken) => taken.connection.settle(printed(taken) ? 'commit' : 'release')),
  );
  const delivered = borrowed.reduce(
    (sum, taken, index) => sum + (settled[index] && printed(taken) ? taken.answer.notifications.length : 0),
    0,
  );
  return {
    output,
    delivered,
    servers: servers.length,
    exitCode: options.moment === 'wake' && output !== '' ? 2 : 0,
  };
}

/**
 * Every server's answer; with `firstWins`, the first answer that carries notifications, the others given
 * back (a wait still open is abandoned: its server releases what it held).
 */
async function gather(
  pending: readonly Promise<Borrowed | undefined>[],
  firstWins: boolean,
): Promise<Borrowed[]> {
  if (!firstWins) {
    return (await Promise.all(pending)).filter((taken): taken is Borrowed => taken !== undefined);
  }
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
  if (winner === undefined) return answers;
  for (const promise of pending) {
    void promise.then((taken) => {
      if (taken !== undefined && taken !== winner) void taken.connection.settle('release');
    });
  }
  return [winner];
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function borrow(
  server: ServerRecord,
  request: { moment: HookMoment; maxBytes: number; waitMs: number; hold: HoldMode; blockCap: number },
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
        hold: request.hold,
        stopHookActive: options.stopHookActive,
        blockCap: request.blockCap,
        promptContinues: promptContinuesBlock(options.client),
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
