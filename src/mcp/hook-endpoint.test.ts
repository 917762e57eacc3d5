/**
 * The client-hook endpoint over a real Unix socket and a real session: a hook borrows notifications
 * under a lease, and each ends delivered exactly once — committed by the hook that printed it, or back
 * in the queue when the hook released it, vanished, or let its lease run out. The race test throws many
 * hooks that commit, release or disconnect at random at one queue and counts every entry's outcome.
 * End-of-turn blocks: one carries every ending, none is asked for past the client's cap, and a block
 * is recorded delivered only once the client's next hook shows the model continued with it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
import { type Clock, createManualClock, type ManualClock, systemClock } from '../tasks/index.js';
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

async function setup(
  options: Parameters<typeof startHookEndpoint>[1] = {},
  realTime = false,
): Promise<Setup> {
  const directory = mkdtempSync(join(tmpdir(), 'errand-he-'));
  directories.push(directory);
  const store = createMemorySessionStore();
  runtime = await createMcpRuntime({ store, pty: false, logger: capturingLogger() });
  const session = runtime.createSession({ title: 'hooks' });
  const clock = createManualClock(1_000);
  const socketPath = join(directory, 'hook.sock');
  const endpointClock: Clock = realTime ? systemClock : clock;
  endpoint = await startHookEndpoint(
    { session, tasks: runtime.tasks, socketPath, logger: capturingLogger(), clock: endpointClock },
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
        hold: 'none',
        stopHookActive: false,
        blockCap: 0,
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

/** Sends a take and waits until the endpoint holds it (it scheduled a timer on the manual clock). */
async function held(
  s: Setup,
  hook: RawHook,
  request: Partial<TakeRequest>,
): Promise<{ answer: Promise<TakeAnswer> }> {
  const before = s.clock.pending;
  const answer = hook.take(request);
  await untilServed(s, () => s.clock.pending > before);
  // Wrapped: an async function returning the promise itself would wait for it.
  return { answer };
}

/** Waits until the endpoint has handled the hook's disappearance (its socket is gone on the server too). */
async function untilServed(setup: Setup, predicate: () => boolean): Promise<void> {
  // The peer check asks `ss` who connected before a request is served: wait for the condition, not turns.
  const deadline = Date.now() + 20_000;
  while (!predicate() && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 2));
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

  it('hands over every queued notification at once (the hook fits them in its budget), up to the per-hook limit', async () => {
    const s = await setup({ maxNotificationsPerHook: 2 });
    for (const id of ['bash-1', 'bash-2', 'bash-3']) s.admit(id);
    const hook = new RawHook(s.socketPath);
    const answer = await hook.take({ maxBytes: 1 });
    expect(answer.notifications.map((notification) => notification.taskId)).toEqual(['bash-1', 'bash-2']);
    expect(answer.more).toBe(1);
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
    const answering = (await held(s, hook, { moment: 'stop', waitMs: 60_000, hold: 'first' })).answer;
    let answered = false;
    void answering.then(() => {
      answered = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(answered).toBe(false);
    s.admit('bash-1');
    // The gathering window: work still runs, so more may land with it.
    s.clock.advance(endpoint!.options.gatherMs);
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

  it('one block carries them all: a headless hold waits for 20 background commands and hands over 20 endings at once', async () => {
    const s = await setup({}, true);
    const directory = directories[0] as string;
    const go = join(directory, 'go');
    const total = 20;
    for (let index = 1; index <= total; index += 1) {
      const started = await startBackground(
        s,
        `while [ ! -e ${go} ]; do sleep 0.02; done; exit ${index % 3} # ${index}`,
        `call-${index}`,
      );
      expect(started).toBe(false);
    }
    const hook = new RawHook(s.socketPath);
    const answering = hook.take({ moment: 'stop', waitMs: 60_000, hold: 'all', blockCap: 8 });
    let answered = false;
    void answering.then(() => {
      answered = true;
    });
    await untilServed(s, () => endpoint!.connections === 1);
    expect(answered).toBe(false);
    writeFileSync(go, '');
    const answer = await answering;
    expect(answer.notifications).toHaveLength(total);
    expect(new Set(answer.notifications.map((notification) => notification.taskId)).size).toBe(total);
    expect(answer.stillRunning).toEqual([]);
    expect(await hook.settle('commit')).toBe(true);
    // Printed, but not yet known to have reached the model: still queued in the ledger.
    expect(states(s.store, s.session).filter((state) => state === 'delivered')).toHaveLength(0);
    expect(endpoint!.blocksInRow).toBe(1);
    // The client continues (its next Stop says stop_hook_active): now they are delivered, and the turn ends.
    const next = new RawHook(s.socketPath);
    const after = await next.take({
      moment: 'stop',
      waitMs: 60_000,
      hold: 'all',
      blockCap: 8,
      stopHookActive: true,
    });
    expect(after.notifications).toEqual([]);
    expect(after.stillRunning).toEqual([]);
    await next.settle('release');
    expect(states(s.store, s.session)).toEqual(Array.from({ length: total }, () => 'delivered'));
  }, 60_000);

  it('a block the client discarded (its next hook is a fresh turn) is not recorded: it goes to that hook instead', async () => {
    const s = await setup();
    s.admit('bash-1');
    const stop = new RawHook(s.socketPath);
    expect((await stop.take({ moment: 'stop', blockCap: 8 })).notifications).toHaveLength(1);
    expect(await stop.settle('commit')).toBe(true);
    expect(states(s.store, s.session)).toEqual(['queued']);
    // The client overrode the block and ended the turn; the person's next prompt comes.
    const prompt = new RawHook(s.socketPath);
    const answer = await prompt.take({ moment: 'prompt' });
    expect(answer.notifications.map((notification) => notification.taskId)).toEqual(['bash-1']);
    expect(await prompt.settle('commit')).toBe(true);
    expect(states(s.store, s.session)).toEqual(['delivered']);
    expect(endpoint!.blocksInRow).toBe(0);
  });

  it('a client that sends the block as the next prompt (Gemini CLI): that prompt hook confirms it, and hands nothing twice', async () => {
    const s = await setup();
    s.admit('bash-1');
    const stop = new RawHook(s.socketPath);
    expect(
      (await stop.take({ moment: 'stop', blockCap: 8, promptContinues: true })).notifications,
    ).toHaveLength(1);
    await stop.settle('commit');
    const prompt = new RawHook(s.socketPath);
    expect((await prompt.take({ moment: 'prompt', promptContinues: true })).notifications).toEqual([]);
    await prompt.settle('release');
    expect(states(s.store, s.session)).toEqual(['delivered']);
  });

  it('a tool hook after a block shows the model continued: the block is recorded delivered', async () => {
    const s = await setup();
    s.admit('bash-1');
    const stop = new RawHook(s.socketPath);
    await stop.take({ moment: 'stop', blockCap: 8 });
    await stop.settle('commit');
    const tool = new RawHook(s.socketPath);
    expect((await tool.take({ moment: 'tool' })).notifications).toEqual([]);
    await tool.settle('release');
    expect(states(s.store, s.session)).toEqual(['delivered']);
  });

  it('never blocks past the cap: the last allowed block names what still runs, the next stop lets the turn end', async () => {
    const s = await setup();
    expect(await startBackground(s, 'sleep 30', 'call-1')).toBe(false);
    const cap = 3;
    // Blocks 1 .. cap-1 are allowed; each carries what is queued.
    s.admit('bash-x1');
    const first = new RawHook(s.socketPath);
    const oneAnswering = (await held(s, first, { moment: 'stop', blockCap: cap })).answer;
    s.clock.advance(endpoint!.options.gatherMs);
    const one = await oneAnswering;
    expect(one.notifications.map((notification) => notification.taskId)).toEqual(['bash-x1']);
    expect(one.stillRunning).toEqual([]);
    await first.settle('commit');
    s.admit('bash-x2');
    const last = new RawHook(s.socketPath);
    const lastAnswering = (await held(s, last, { moment: 'stop', blockCap: cap, stopHookActive: true }))
      .answer;
    s.clock.advance(endpoint!.options.gatherMs);
    const two = await lastAnswering;
    expect(two.notifications.map((notification) => notification.taskId)).toEqual(['bash-x2']);
    expect(two.notice).toBe('final');
    expect(two.stillRunning.map((task) => task.id)).toHaveLength(1);
    await last.settle('commit');
    expect(endpoint!.blocksInRow).toBe(2);
    // One more would be the client's cap: nothing is reserved, the queue waits for the next moment.
    s.admit('bash-x3');
    const over = new RawHook(s.socketPath);
    const three = await over.take({ moment: 'stop', blockCap: cap, stopHookActive: true });
    expect(three.notifications).toEqual([]);
    expect(three.stillRunning).toEqual([]);
    await over.settle('release');
    expect(s.session.inbox.queued).toBe(1);
    // Both blocks were confirmed by the hooks after them.
    expect(states(s.store, s.session)).toEqual(['delivered', 'delivered', 'queued']);
  });

  it('a headless hold that expires names the tasks that will be stopped, once', async () => {
    const s = await setup();
    expect(await startBackground(s, 'sleep 30', 'call-1')).toBe(false);
    const hook = new RawHook(s.socketPath);
    const answering = (await held(s, hook, { moment: 'stop', waitMs: 10_000, hold: 'all', blockCap: 8 }))
      .answer;
    s.clock.advance(10_000);
    const answer = await answering;
    expect(answer.notice).toBe('expired');
    expect(answer.stillRunning).toHaveLength(1);
    await hook.settle('commit');
    // Told: the continuation's stop no longer holds for it.
    const next = new RawHook(s.socketPath);
    const after = (
      await held(s, next, {
        moment: 'stop',
        waitMs: 10_000,
        hold: 'all',
        blockCap: 8,
        stopHookActive: true,
      })
    ).answer;
    s.clock.advance(endpoint!.options.gatherMs);
    expect((await after).stillRunning).toEqual([]);
    await next.settle('release');
  });

  it('a wake waits for the next ending; a newer wake replaces it; it leaves the queue to an end-of-turn hook at work', async () => {
    const s = await setup();
    expect(await startBackground(s, 'sleep 30', 'call-1')).toBe(false);
    const older = new RawHook(s.socketPath);
    const olderAnswer = (await held(s, older, { moment: 'wake', waitMs: 600_000, hold: 'first' })).answer;
    const wake = new RawHook(s.socketPath);
    const answering = (await held(s, wake, { moment: 'wake', waitMs: 600_000, hold: 'first' })).answer;
    expect((await olderAnswer).notifications).toEqual([]);
    await older.settle('release');
    // An end-of-turn hook is at work: the wake leaves what is queued to it.
    const stop = new RawHook(s.socketPath);
    const stopAnswering = (await held(s, stop, { moment: 'stop', blockCap: 8 })).answer;
    s.admit('bash-1');
    s.clock.advance(endpoint!.options.gatherMs);
    expect((await stopAnswering).notifications.map((notification) => notification.taskId)).toEqual([
      'bash-1',
    ]);
    await stop.settle('commit');
    // The model continues with the block and ends again: the stop confirms it, then the wake may take.
    const again = new RawHook(s.socketPath);
    const againAnswering = (await held(s, again, { moment: 'stop', blockCap: 8, stopHookActive: true }))
      .answer;
    s.clock.advance(endpoint!.options.gatherMs);
    expect((await againAnswering).notifications).toEqual([]);
    await again.settle('release');
    s.admit('bash-2');
    s.clock.advance(endpoint!.options.gatherMs);
    const answer = await answering;
    expect(answer.notifications.map((notification) => notification.taskId)).toEqual(['bash-2']);
    expect(await wake.settle('commit')).toBe(true);
    expect(states(s.store, s.session)).toEqual(['delivered', 'delivered']);
  });

  it('around a compaction: the compacted start gets the digest; a compact marks it due for the next tool or prompt hook, once', async () => {
    const s = await setup();
    expect(await startBackground(s, 'sleep 30; echo digest-a', 'call-1')).toBe(false);
    expect(await startBackground(s, 'sleep 30; echo digest-b', 'call-2')).toBe(false);
    // Not due: a tool hook carries no digest.
    const before = new RawHook(s.socketPath);
    expect((await before.take()).digest).toBeUndefined();
    await before.settle('release');
    // A compacted conversation's start: the digest, every live task once.
    const start = new RawHook(s.socketPath);
    const started = await start.take({ moment: 'context' });
    const ids = (text: string) => [...text.matchAll(/- (bash-\d+) \[bash\]/g)].map((match) => match[1]);
    expect(ids(started.digest ?? '')).toEqual(['bash-1', 'bash-2']);
    expect(await start.settle('commit')).toBe(true);
    // Before the next compaction: due; the next tool hook carries it with whatever is queued.
    const compact = new RawHook(s.socketPath);
    const compacting = await compact.take({ moment: 'compact' });
    expect(compacting.digest).toBeUndefined();
    await compact.settle('release');
    s.admit('bash-9');
    // A hook that printed nothing leaves it due.
    const released = new RawHook(s.socketPath);
    expect(ids((await released.take({ moment: 'prompt' })).digest ?? '')).toEqual(['bash-1', 'bash-2']);
    await released.settle('release');
    const tool = new RawHook(s.socketPath);
    const carried = await tool.take();
    expect(ids(carried.digest ?? '')).toEqual(['bash-1', 'bash-2']);
    expect(carried.notifications.map((notification) => notification.taskId)).toEqual(['bash-9']);
    expect(await tool.settle('commit')).toBe(true);
    // Handed over: not again.
    const after = new RawHook(s.socketPath);
    expect((await after.take({ moment: 'prompt' })).digest).toBeUndefined();
    await after.settle('release');
  });
});

/** Starts `command` in the background in the session; the result's isError. */
async function startBackground(s: Setup, command: string, toolCallId: string): Promise<boolean> {
  const started = await executeTool(
    runtime!.bashTool,
    { command, run_in_background: true },
    {
      caller: s.session.owner,
      toolCallId,
      signal: new AbortController().signal,
      cwd: tmpdir(),
      env: s.session.env,
    },
  );
  return started.isError;
}
