/**
 * The session runtime while its store refuses writes, on a manual clock: endings are kept in memory and
 * retried with back-off, background work is refused, tool results say so once, and once the store takes
 * writes every kept ending is recorded and told once. (The real thing — SQLite on a full tmpfs — is
 * `src/mcp/store-full.integration.test.ts`.)
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { capturingLogger, flushMicrotasks } from '../../test/support/registry.js';
import { switchableStore } from '../../test/support/session.js';
import type { SessionStore } from '../store/index.js';
import { createManualClock } from '../tasks/index.js';
import { scriptedModel, scriptedTask } from '../testing/index.js';
import { defineTool } from '../tools/index.js';
import type { Session } from './session.js';
import { createSessionRuntime } from './session-runtime.js';

function failingRuntime(steps: Parameters<typeof scriptedModel>[0] = []) {
  const { store: switchable, failing } = switchableStore();
  // Counts the runtime's attempts to write a task record, refused or not.
  const counts = { upserts: 0 };
  const store = new Proxy(switchable, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (property !== 'upsertTask') return value;
      return (...args: Parameters<SessionStore['upsertTask']>) => {
        counts.upserts += 1;
        return (value as SessionStore['upsertTask'])(...args);
      };
    },
  });
  const clock = createManualClock(1_000_000);
  const model = scriptedModel(steps);
  const logger = capturingLogger();
  const runtime = createSessionRuntime({
    store,
    model,
    clock,
    logger,
    limits: { deliveryRetryMs: 100, deliveryRetryMaxMs: 400, idleDrainQuietMs: 0, idleDrainMaxDelayMs: 0 },
    tools: () => [
      defineTool({
        name: 'look',
        description: 'Looks around.',
        inputSchema: z.object({}),
        async execute() {
          return { text: 'looked', isError: false };
        },
      }),
    ],
  });
  runtime.tasks.attachController('store-failure-tests');
  /** Sends through the manual clock: the idle drain that runs the turn is a timer on it. */
  const send = async (session: Session, text: string) => {
    const outcome = session.send(text);
    clock.advance(0);
    return outcome;
  };
  return { runtime, store, failing, clock, model, logger, counts, send };
}

describe('a store that refuses writes', () => {
  it('keeps an ending, retries it with back-off, refuses background work, and tells the ending once it can', async () => {
    const { runtime, store, failing, clock, model, counts } = failingRuntime([{ text: 'told' }]);
    const session = runtime.createSession({ id: 's1' });
    const task = scriptedTask({ label: 'build', owner: session.owner });
    const { id } = await runtime.tasks.start(task.spec);
    expect(runtime.persistence).toBeUndefined();

    failing.add('upsertTask');
    failing.add('admit');
    task.settle({ status: 'completed', detail: { exitCode: 0 } });
    await flushMicrotasks();
    // The ending is not in the store, not lost: it waits in memory, with its notification behind it.
    expect(store.getTask(id, 's1')?.status).toBe('running');
    expect(runtime.persistence).toMatchObject({ pending: 2, since: 1_000_000 });
    await expect(
      runtime.tasks.start(scriptedTask({ label: 'another', owner: session.owner }).spec),
    ).rejects.toMatchObject({
      code: 'PERSISTENCE_FAILING',
      message: expect.stringContaining('store unavailable'),
    });
    // Foreground work is not refused: its result goes back to the call that waits for it.
    const foreground = scriptedTask({ label: 'foreground', owner: session.owner, background: false });
    await expect(runtime.tasks.start(foreground.spec)).resolves.toMatchObject({ isBackgrounded: false });
    foreground.settle();

    // Retried after 100 ms, then 200, then 400 (the cap), while the store still refuses.
    const before = counts.upserts;
    const attempts = () => counts.upserts - before;
    clock.advance(99);
    expect(attempts()).toBe(0);
    clock.advance(1);
    expect(attempts()).toBe(1);
    clock.advance(199);
    expect(attempts()).toBe(1);
    clock.advance(1);
    expect(attempts()).toBe(2);
    clock.advance(400);
    expect(attempts()).toBe(3);
    clock.advance(400);
    expect(attempts()).toBe(4);

    failing.clear();
    clock.advance(400);
    expect(runtime.persistence).toBeUndefined();
    // The record first, then its notification, admitted behind it: it wakes the session, and one turn
    // delivers it, once.
    await session.whenIdle();
    expect(model.requests).toHaveLength(1);
    expect(JSON.stringify(model.requests[0]).split(`<task-id>${id}</task-id>`)).toHaveLength(2);
    expect(store.listLedger('s1').map((entry) => entry.state)).toEqual(['delivered']);
    expect(store.getTask(id, 's1')).toMatchObject({ reported: true });
    await expect(
      runtime.tasks.start(scriptedTask({ label: 'again', owner: session.owner }).spec),
    ).resolves.toMatchObject({ status: 'running' });
    await runtime.dispose();
  });

  it('says so in the next tool result, once, and once more when the store works again', async () => {
    const look = { toolCalls: [{ name: 'look', input: {} }] };
    const { runtime, failing, clock, send } = failingRuntime([
      look,
      { text: 'a' },
      look,
      { text: 'b' },
      look,
      { text: 'c' },
    ]);
    const session = runtime.createSession({ id: 's1' });
    const task = scriptedTask({ owner: session.owner });
    await runtime.tasks.start(task.spec);
    failing.add('upsertTask');
    task.settle();
    await flushMicrotasks();
    const results = () =>
      session
        .messages()
        .flatMap((message) => message.content.toolResults ?? [])
        .map((result) => String(result.output));

    await send(session, 'first');
    await send(session, 'second');
    expect(results()).toEqual([
      'looked\n[errand: the session store cannot be written (store unavailable (upsertTask)): task endings are kept in memory and retried; new background work is refused until it can]',
      'looked',
    ]);
    failing.clear();
    clock.advance(100);
    await send(session, 'third');
    expect(results()[2]).toBe(
      'looked\n[errand: the session store can be written again: endings kept meanwhile are recorded and told]',
    );
    await runtime.dispose();
  });

  it('a surface that showed an end while the store refused writes forgets its notification now and records that later', async () => {
    const { runtime, store, failing, clock } = failingRuntime();
    const session = runtime.createSession({ id: 's1' });
    const task = scriptedTask({ owner: session.owner });
    const { id } = await runtime.tasks.start(task.spec);
    session.holdIdleDrain();
    task.settle();
    await flushMicrotasks();
    expect(session.inbox.queued).toBe(1);
    failing.add('transaction');
    // The MCP server showed the end in a tool result it already sent.
    expect(() => session.taskEndTold({ taskId: id, attempt: 1 })).not.toThrow();
    expect(session.inbox.queued).toBe(0);
    expect(store.listLedger('s1').map((entry) => entry.state)).toEqual(['queued']);
    expect(runtime.persistence).toMatchObject({ pending: 1 });
    failing.clear();
    clock.advance(100);
    expect(store.listLedger('s1').map((entry) => [entry.state, entry.reason])).toEqual([
      ['discarded', 'result_read'],
    ]);
    expect(store.getTask(id, 's1')).toMatchObject({ reported: true });
    expect(runtime.persistence).toBeUndefined();
    await runtime.dispose();
  });
});
