/**
 * The client-hook endpoint over a real Unix socket and a real session: a hook borrows notifications
 * under a lease, and each ends delivered exactly once — committed by the hook that printed it, or back
 * in the queue when the hook released it, vanished, or let its lease run out. The race test throws many
 * hooks that commit, release or disconnect at random at one queue and counts every entry's outcome.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { capturingLogger } from '../../test/support/registry.js';
import {
  encodeLine,
  HOOK_PROTOCOL_VERSION,
  LineReader,
  parseTakeAnswer,
  type TakeAnswer,
  type TakeRequest,
} from '../hooks/index.js';
import type { ErrandRuntime } from '../host/index.js';
import type { Session } from '../session/index.js';
import { createMemorySessionStore, type SessionStore } from '../store/index.js';
import { createManualClock, type ManualClock } from '../tasks/index.js';
import { executeTool } from '../tools/index.js';
import { CLIENT_HOOK_SOURCE, type HookEndpoint, startHookEndpoint } from './hook-endpoint.js';
import { createMcpRuntime } from './mcp-runtime.js';

let runtime: ErrandRuntime | undefined;
let endpoint: HookEndpoint | undefined;
const directories: string[] = [];

afterEach(async () => {
  await endpoint?.close();
  endpoint = undefined;
  await runtime?.dispose();
  runtime = undefined;
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

interface Setup {
  readonly session: Session;
  readonly store: SessionStore;
  readonly socketPath: string;
  readonly clock: ManualClock;
  /** Queues a notification for task `taskId` as the delivery policy would. */
  admit(taskId: string): void;
}

async function setup(options: Parameters<typeof startHookEndpoint>[1] = {}): Promise<Setup> {
  const directory = mkdtempSync(join(tmpdir(), 'errand-he-'));
  directories.push(directory);
  const store = createMemorySessionStore();
  runtime = await createMcpRuntime({ store, pty: false, logger: capturingLogger() });
  const session = runtime.createSession({ title: 'hooks' });
  const clock = createManualClock(1_000);
  const socketPath = join(directory, 'hook.sock');
  endpoint = await startHookEndpoint(
    { session, tasks: runtime.tasks, socketPath, logger: capturingLogger(), clock },
    options,
  );
  let sequence = 0;
  return {
    session,
    store,
    socketPath,
    clock,
    admit(taskId) {
      sequence += 1;
      const admission = session.deliverNotification({
        taskId,
        label: taskId,
        text: `<task-notification>\n<task-id>${taskId}</task-id>\n</task-notification>`,
        branchGeneration: session.branchGeneration,
        idempotencyKey: `test:${taskId}:${sequence}`,
        lane: 'quiet',
      });
      expect(admission.admitted).toBe(true);
    },
  };
}

/** A hook speaking the protocol by hand: take, then commit, release, or just disappear. */
class RawHook {
  readonly socket: Socket;
  readonly #lines = new LineReader();
  readonly #received: unknown[] = [];
  readonly #waiters: Array<(line: unknown) => void> = [];
  closed = false;

  constructor(path: string) {
    this.socket = createConnection(path);
    this.socket.on('data', (chunk: Buffer) => {
      for (const line of this.#lines.push(chunk)) {
        const parsed: unknown = JSON.parse(line);
        const waiter = this.#waiters.shift();
        if (waiter) waiter(parsed);
        else this.#received.push(parsed);
      }
    });
    this.socket.on('close', () => {
      this.closed = true;
      for (const waiter of this.#waiters.splice(0)) waiter(undefined);
    });
    this.socket.on('error', () => {});
  }

  next(): Promise<unknown> {
    if (this.#received.length > 0) return Promise.resolve(this.#received.shift());
    if (this.closed) return Promise.resolve(undefined);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  async take(request: Partial<TakeRequest> = {}): Promise<TakeAnswer> {
    this.socket.write(
      encodeLine({
        op: 'take',
        version: HOOK_PROTOCOL_VERSION,
        moment: 'tool',
        maxBytes: 100_000,
        waitMs: 0,
        stopHookActive: false,
        ...request,
      }),
    );
    const answer = parseTakeAnswer(await this.next());
    if (!answer) throw new Error('no take answer');
    return answer;
  }

  async settle(op: 'commit' | 'release'): Promise<boolean> {
    this.socket.write(encodeLine({ op }));
    const answer = (await this.next()) as { ok?: boolean } | undefined;
    return answer?.ok === true;
  }

  /** The hook process died: its connection closes without a word. */
  vanish(): Promise<void> {
    return new Promise((resolve) => {
      this.socket.once('close', () => resolve());
      this.socket.destroy();
    });
  }
}

function states(store: SessionStore, session: Session) {
  return store
    .listLedger(session.id)
    .filter((entry) => entry.kind === 'notification')
    .map((entry) => entry.state);
}

/** Waits until the endpoint has handled the hook's disappearance (its socket is gone on the server too). */
async function untilServed(setup: Setup, predicate: () => boolean): Promise<void> {
  for (let round = 0; round < 1000 && !predicate(); round += 1) {
    await new Promise((resolve) => setImmediate(resolve));
  }
  expect(predicate()).toBe(true);
  void setup;
}

describe('the client-hook endpoint', () => {
  it('commits what a hook printed: delivered once, recorded with source client_hook', async () => {
    const s = await setup();
    s.admit('bash-1');
    const hook = new RawHook(s.socketPath);
    const answer = await hook.take();
    expect(answer.notifications.map((notification) => notification.taskId)).toEqual(['bash-1']);
    // While the hook holds it, nobody else gets it.
    const other = new RawHook(s.socketPath);
    expect((await other.take()).notifications).toEqual([]);
    expect(await other.settle('release')).toBe(true);
    expect(await hook.settle('commit')).toBe(true);
    expect(states(s.store, s.session)).toEqual(['delivered']);
    expect(s.store.listMessages(s.session.id).map((message) => message.source)).toContain(CLIENT_HOOK_SOURCE);
    const late = new RawHook(s.socketPath);
    expect((await late.take()).notifications).toEqual([]);
    await late.settle('release');
  });

  it('gives the notifications back when the hook releases them or vanishes before confirming', async () => {
    const s = await setup();
    s.admit('bash-1');
    const releasing = new RawHook(s.socketPath);
    expect((await releasing.take()).notifications).toHaveLength(1);
    expect(await releasing.settle('release')).toBe(true);
    expect(s.session.inbox.queued).toBe(1);

    const dying = new RawHook(s.socketPath);
    expect((await dying.take()).notifications).toHaveLength(1);
    expect(s.session.inbox.queued).toBe(0);
    await dying.vanish();
    await untilServed(s, () => s.session.inbox.queued === 1);

    const next = new RawHook(s.socketPath);
    expect((await next.take()).notifications.map((notification) => notification.taskId)).toEqual(['bash-1']);
    expect(await next.settle('commit')).toBe(true);
    expect(states(s.store, s.session)).toEqual(['delivered']);
  });

  it('releases a reservation whose lease ran out, and refuses the late commit', async () => {
    const s = await setup({ leaseMs: 5_000 });
    s.admit('bash-1');
    const slow = new RawHook(s.socketPath);
    expect((await slow.take()).notifications).toHaveLength(1);
    s.clock.advance(4_999);
    expect(s.session.inbox.queued).toBe(0);
    s.clock.advance(1);
    await untilServed(s, () => s.session.inbox.queued === 1);
    expect(await slow.settle('commit')).toBe(false);
    expect(states(s.store, s.session)).toEqual(['queued']);
  });

  it('takes what fits in the byte budget (always at least one) and says how many are left', async () => {
    const s = await setup();
    for (const id of ['bash-1', 'bash-2', 'bash-3']) s.admit(id);
    const hook = new RawHook(s.socketPath);
    const answer = await hook.take({ maxBytes: 1 });
    expect(answer.notifications.map((notification) => notification.taskId)).toEqual(['bash-1']);
    expect(answer.more).toBe(2);
    await hook.settle('commit');
  });

  it('at the end of a turn, waits for running work and answers with its ending', async () => {
    const s = await setup();
    const started = await executeTool(
      runtime!.bashTool,
      { command: 'sleep 30', run_in_background: true },
      {
        caller: s.session.owner,
        toolCallId: 'call-1',
        signal: new AbortController().signal,
        cwd: tmpdir(),
        env: s.session.env,
      },
    );
    expect(started.isError).toBe(false);
    const hook = new RawHook(s.socketPath);
    const answering = hook.take({ moment: 'stop', waitMs: 60_000 });
    let answered = false;
    void answering.then(() => {
      answered = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(answered).toBe(false);
    s.admit('bash-1');
    const answer = await answering;
    expect(answer.notifications.map((notification) => notification.taskId)).toEqual(['bash-1']);
    await hook.settle('commit');
  });

  it('counts outcomes: many hooks committing, releasing and vanishing at random deliver each entry once', async () => {
    const s = await setup({ maxNotificationsPerHook: 3 });
    const total = 40;
    for (let index = 1; index <= total; index += 1) s.admit(`bash-${index}`);
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const printed = new Map<string, number>();
    const worker = async () => {
      for (
        let round = 0;
        round < 200 && (s.session.inbox.queued > 0 || endpoint!.connections > 1);
        round += 1
      ) {
        const hook = new RawHook(s.socketPath);
        const answer = await hook.take({ maxBytes: Math.floor(random() * 200) + 1 });
        const roll = random();
        if (roll < 0.4) {
          if (await hook.settle('commit')) {
            for (const notification of answer.notifications) {
              printed.set(notification.taskId, (printed.get(notification.taskId) ?? 0) + 1);
            }
          }
        } else if (roll < 0.7) await hook.settle('release');
        else await hook.vanish();
        if (s.session.inbox.queued === 0 && answer.notifications.length === 0) break;
      }
    };
    await Promise.all(Array.from({ length: 6 }, worker));
    await untilServed(s, () => endpoint!.connections === 0);
    // Whatever is left (released by the last vanishing hooks) goes to one last, careful hook.
    while (s.session.inbox.queued > 0) {
      const last = new RawHook(s.socketPath);
      const rest = await last.take({ maxBytes: 1_000_000 });
      expect(await last.settle('commit')).toBe(true);
      for (const notification of rest.notifications) {
        printed.set(notification.taskId, (printed.get(notification.taskId) ?? 0) + 1);
      }
    }
    expect(printed.size).toBe(total);
    expect([...printed.values()].every((count) => count === 1)).toBe(true);
    expect(states(s.store, s.session).every((state) => state === 'delivered')).toBe(true);
    expect(states(s.store, s.session)).toHaveLength(total);
  });
});
