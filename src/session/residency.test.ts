/**
 * Session residency on a manual clock: of 1,000 sessions only those with running background work stay in
 * memory once the others have been idle for `unloadIdleAfterMs`; an unloaded one is loaded again through
 * the resume path with its conversation and ledger as they were.
 */
import { describe, expect, it } from 'vitest';
import { capturingLogger, flushMicrotasks } from '../../test/support/registry.js';
import { createMemorySessionStore } from '../store/index.js';
import { createManualClock } from '../tasks/index.js';
import { type ScriptedTask, scriptedModel, scriptedTask } from '../testing/index.js';
import type { Session } from './session.js';
import { createSessionRuntime } from './session-runtime.js';

const IDLE_MS = 60_000;

function residentRuntime(steps: Parameters<typeof scriptedModel>[0] = []) {
  const store = createMemorySessionStore();
  const clock = createManualClock(1_000_000);
  const model = scriptedModel(steps);
  const runtime = createSessionRuntime({
    store,
    model,
    clock,
    logger: capturingLogger(),
    unloadIdleAfterMs: IDLE_MS,
    limits: { idleDrainQuietMs: 0, idleDrainMaxDelayMs: 0 },
  });
  runtime.tasks.attachController('residency-tests');
  /** Sends through the manual clock: the idle drain that runs the turn is a timer on it. */
  const send = async (session: Session, text: string) => {
    const outcome = session.send(text);
    clock.advance(0);
    return outcome;
  };
  /** Moves time on and lets the unloads it started finish. */
  const advance = async (milliseconds: number) => {
    clock.advance(milliseconds);
    await flushMicrotasks(20);
  };
  return { runtime, store, clock, model, send, advance };
}

describe('session residency', () => {
  it('keeps 1,000 sessions bounded to those with running work, and reloads one with everything intact', async () => {
    const { runtime, store, send, advance } = residentRuntime([
      { text: 'hi' },
      { text: 'noted' },
      { text: 'again' },
    ]);
    const sessions = Array.from({ length: 1000 }, (_, index) => runtime.createSession({ id: `s-${index}` }));
    expect(runtime.residentSessions).toBe(1000);
    // One session with a conversation and a delivered notification in its ledger.
    const talker = sessions[5]!;
    await send(talker, 'hello');
    const told = scriptedTask({ label: 'told', owner: talker.owner });
    await runtime.tasks.start(told.spec);
    told.settle({ status: 'completed', detail: { exitCode: 0 } });
    await flushMicrotasks();
    await advance(0);
    await talker.whenIdle();
    const messages = store.listMessages('s-5');
    const ledger = store.listLedger('s-5');
    expect(messages.map((message) => message.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(ledger.map((entry) => [entry.kind, entry.state])).toEqual([
      ['user_input', 'delivered'],
      ['notification', 'delivered'],
    ]);
    // Ten sessions keep background work running.
    const running: ScriptedTask[] = [];
    for (let index = 0; index < 10; index += 1) {
      const task = scriptedTask({ label: `work ${index}`, owner: sessions[100 + index]!.owner });
      await runtime.tasks.start(task.spec);
      running.push(task);
    }

    await advance(IDLE_MS - 1);
    expect(runtime.residentSessions).toBe(1000);
    await advance(1);
    // Only the sessions with running work stay; the others are unloaded, and still active in the store.
    expect(runtime.residentSessions).toBe(10);
    expect(runtime.listSessions().map((session) => session.id)).toEqual(
      Array.from({ length: 10 }, (_, index) => `s-${100 + index}`),
    );
    expect(talker.state).toBe('closed');
    expect(store.getSession('s-5')).toMatchObject({ state: 'active', holder: undefined });
    expect(store.listSessions({ state: 'active' })).toHaveLength(1000);
    // Long after, a session whose work still runs stays.
    await advance(10 * IDLE_MS);
    expect(runtime.residentSessions).toBe(10);

    // Loaded again on demand, through the resume path: its conversation and ledger as they were.
    const reloaded = await runtime.loadSession('s-5');
    expect(reloaded).not.toBe(talker);
    expect(runtime.getSession('s-5')).toBe(reloaded);
    expect(store.listMessages('s-5')).toEqual(messages);
    expect(store.listLedger('s-5')).toEqual(ledger);
    expect(store.getTask(told.context!.taskId, 's-5')).toMatchObject({ status: 'completed', reported: true });
    await expect(send(reloaded, 'still there?')).resolves.toMatchObject({ text: 'again' });
    expect(store.listMessages('s-5')).toHaveLength(6);
    // The stale object refuses: the reopened one is the session now.
    await expect(talker.send('hello?')).rejects.toMatchObject({ code: 'SESSION_CLOSED' });

    // Once their work ends (and its notifications are delivered), the others go too.
    for (const task of running) task.settle({ status: 'completed' });
    await flushMicrotasks();
    await advance(0);
    await advance(2 * IDLE_MS);
    expect(runtime.residentSessions).toBe(0);
    for (let index = 100; index < 110; index += 1) {
      expect(store.listLedger(`s-${index}`).map((entry) => entry.state)).toEqual(['delivered']);
    }
    await runtime.dispose();
  });

  it('never unloads a session a surface holds (a reservation, a held drain), and is off by default', async () => {
    const { runtime, advance } = residentRuntime();
    const held = runtime.createSession({ id: 'held' });
    const release = held.holdIdleDrain();
    runtime.createSession({ id: 'free' });
    await advance(IDLE_MS);
    expect(runtime.listSessions().map((session) => session.id)).toEqual(['held']);
    release();
    await advance(0);
    await advance(IDLE_MS);
    expect(runtime.residentSessions).toBe(0);
    await runtime.dispose();

    const clock = createManualClock(0);
    const keeping = createSessionRuntime({
      store: createMemorySessionStore(),
      model: scriptedModel(),
      clock,
    });
    keeping.createSession({ id: 'kept' });
    clock.advance(365 * 24 * 3_600_000);
    expect(keeping.residentSessions).toBe(1);
    await keeping.dispose();
    expect(() =>
      createSessionRuntime({
        store: createMemorySessionStore(),
        model: scriptedModel(),
        unloadIdleAfterMs: 0,
      }),
    ).toThrow(
      expect.objectContaining({
        code: 'INVALID_ARGUMENT',
        message: expect.stringContaining('unloadIdleAfterMs'),
      }),
    );
  });
});
