/**
 * A session's idle drain on an injected manual clock: nothing but `clock.advance` decides when a turn
 * starts — the debounce window, and the retry back-off after the store failed to record a delivery.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { runtimeForTest, switchableStore } from '../../test/support/session.js';
import { createManualClock, type ManualClock } from '../tasks/index.js';
import { type ScriptedTask, scriptedTask } from '../testing/index.js';
import type { Session } from './session.js';

const disposers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const dispose of disposers.splice(0)) await dispose();
});

async function startTasks(session: Session, count: number): Promise<ScriptedTask[]> {
  const tasks: ScriptedTask[] = [];
  for (let index = 0; index < count; index += 1) {
    const task = scriptedTask({ kind: 'scripted', label: `job ${index}`, owner: session.owner });
    await session.tasks.start(task.spec);
    tasks.push(task);
  }
  return tasks;
}

function turnStarts(session: Session): { count: number } {
  const seen = { count: 0 };
  session.on((event) => {
    if (event.type === 'turn-start') seen.count += 1;
  });
  return seen;
}

describe('the idle drain on an injected clock', () => {
  it('starts one turn for a burst, once the quiet window has passed', async () => {
    const clock: ManualClock = createManualClock(10_000);
    const { runtime, model } = runtimeForTest([{ text: 'noted' }], {
      clock,
      limits: { idleDrainQuietMs: 5, idleDrainMaxDelayMs: 50 },
    });
    disposers.push(() => runtime.dispose());
    const session = runtime.createSession({ id: 's1' });
    const tasks = await startTasks(session, 3);
    for (const task of tasks) task.settle();
    await vi.waitFor(() => expect(session.queuedCommands).toBe(3));
    clock.advance(4);
    await Promise.resolve();
    expect(model.requests).toHaveLength(0);
    clock.advance(1);
    await vi.waitFor(() => expect(model.requests).toHaveLength(1));
    // One message carries the whole burst.
    const delivered = session.messages().filter((message) => message.source === 'background_task');
    expect(delivered).toHaveLength(1);
    expect(delivered[0]?.content.text?.match(/<task-notification>/g)).toHaveLength(3);
    await session.whenIdle();
  });

  it('retries a delivery the store failed to record after deliveryRetryMs, doubling up to deliveryRetryMaxMs', async () => {
    const clock = createManualClock(10_000);
    const { store, failing } = switchableStore();
    const { runtime, model } = runtimeForTest([{ text: 'noted' }], {
      clock,
      store,
      limits: { idleDrainQuietMs: 1, deliveryRetryMs: 100, deliveryRetryMaxMs: 250 },
    });
    disposers.push(() => runtime.dispose());
    const session = runtime.createSession({ id: 's1' });
    const attempts = turnStarts(session);
    const [task] = await startTasks(session, 1);
    task!.settle();
    await vi.waitFor(() => expect(session.queuedCommands).toBe(1));
    failing.add('commitDelivery');
    const expectAttemptsAfter = async (milliseconds: number, count: number) => {
      clock.advance(milliseconds);
      await vi.waitFor(() => expect(attempts.count).toBe(count));
    };
    await expectAttemptsAfter(1, 1);
    // 100, then 200, then the 250 cap: nothing happens a millisecond early.
    for (const [delay, count] of [
      [100, 2],
      [200, 3],
      [250, 4],
      [250, 5],
    ] as const) {
      clock.advance(delay - 1);
      await Promise.resolve();
      expect(attempts.count).toBe(count - 1);
      await expectAttemptsAfter(1, count);
    }
    expect(model.requests).toHaveLength(0);
    failing.delete('commitDelivery');
    await expectAttemptsAfter(250, 6);
    await vi.waitFor(() => expect(model.requests).toHaveLength(1));
    expect(store.listQueued('s1')).toEqual([]);
    expect(session.queuedCommands).toBe(0);
  });

  it('rejects a clock that is not one', () => {
    expect(() => runtimeForTest([], { clock: { now: () => 0 } as never })).toThrow(
      'Expected `clock` to be a Clock ({ now, schedule }), got an object',
    );
  });
});
