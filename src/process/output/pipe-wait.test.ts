import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../tasks/clock.js';
import { drainedWithin } from './pipe-wait.js';

/** Lets promise reactions run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function track(promise: Promise<void>): { readonly done: boolean } {
  const state = { done: false };
  void promise.then(() => {
    state.done = true;
  });
  return state;
}

describe('drainedWithin', () => {
  it('ends after idleMs without output, or at maxMs while output keeps coming', async () => {
    const clock = createManualClock(1000);
    const never = new Promise<void>(() => {});
    let activity = 0;
    const idle = track(drainedWithin(never, clock, () => activity, 100, 2000));
    clock.advance(99);
    await settle();
    expect(idle.done).toBe(false);
    clock.advance(1);
    await settle();
    expect(idle.done).toBe(true);

    const busy = track(drainedWithin(never, clock, () => activity, 100, 2000));
    for (let step = 0; step < 40; step += 1) {
      activity = clock.now();
      clock.advance(50);
      await settle();
    }
    expect(busy.done).toBe(true);
    expect(clock.pending).toBe(0);
  });

  it('counts time paused for the disk neither as quiet nor towards maxMs', async () => {
    const clock = createManualClock(1000);
    const never = new Promise<void>(() => {});
    let paused = true;
    let activity = 0;
    const wait = track(
      drainedWithin(
        never,
        clock,
        () => activity,
        100,
        300,
        () => paused,
      ),
    );
    clock.advance(10_000);
    await settle();
    expect(wait.done).toBe(false);
    // Resumed: the pipes get their grace from now on.
    paused = false;
    activity = clock.now();
    clock.advance(99);
    await settle();
    expect(wait.done).toBe(false);
    clock.advance(1);
    await settle();
    expect(wait.done).toBe(true);
    expect(clock.pending).toBe(0);
  });

  it('ends as soon as the pipes close, paused or not', async () => {
    const clock = createManualClock();
    let close!: () => void;
    const closed = new Promise<void>((resolve) => {
      close = resolve;
    });
    const wait = track(
      drainedWithin(
        closed,
        clock,
        () => 0,
        100,
        300,
        () => true,
      ),
    );
    close();
    await settle();
    expect(wait.done).toBe(true);
    expect(clock.pending).toBe(0);
  });
});
