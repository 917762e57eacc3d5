import { describe, expect, it } from 'vitest';
import { createManualClock } from '../tasks/index.js';
import { DrainScheduler, type DrainTimingLimits } from './drain-scheduler.js';

const LIMITS: DrainTimingLimits = {
  idleDrainQuietMs: 5,
  idleDrainMaxDelayMs: 20,
  idleDrainLoneAtOnce: true,
  deliveryRetryMs: 100,
  deliveryRetryMaxMs: 1_000,
};

/** A scheduler on a manual clock; `ending.count` is how many commands it is told are ending. */
function scheduler(limits: Partial<DrainTimingLimits> = {}, ending = { count: 0 }) {
  const clock = createManualClock(1_000);
  const drains: number[] = [];
  let closing = false;
  const drain = new DrainScheduler({
    clock,
    limits: { ...LIMITS, ...limits },
    isClosing: () => closing,
    drain: () => drains.push(clock.now()),
    endingsUnderway: () => ending.count,
  });
  return {
    clock,
    drain,
    drains,
    ending,
    close: () => {
      closing = true;
    },
  };
}

describe('DrainScheduler (on a manual clock)', () => {
  it("drains a lone arrival on the clock's next turn, without waiting out the window", () => {
    const { clock, drain, drains } = scheduler();
    drain.schedule();
    expect(drain.scheduled).toBe(true);
    clock.advance(0);
    expect(drains).toEqual([1_000]);
    expect(clock.pending).toBe(0);
  });

  it('with idleDrainLoneAtOnce false, a lone arrival waits out the quiet window like any other', () => {
    const { clock, drain, drains } = scheduler({ idleDrainLoneAtOnce: false });
    drain.schedule();
    clock.advance(0);
    expect(drains).toEqual([]);
    clock.advance(4);
    expect(drains).toEqual([]);
    clock.advance(1);
    expect(drains).toEqual([1_005]);
  });

  it('gathers an arrival that follows another within idleDrainQuietMs', () => {
    const { clock, drain, drains } = scheduler();
    drain.schedule();
    clock.advance(0);
    clock.advance(2);
    // Endings arriving close together: this one waits for quiet, as the next of a burst would.
    drain.schedule();
    clock.advance(4);
    expect(drains).toEqual([1_000]);
    clock.advance(1);
    expect(drains).toEqual([1_000, 1_007]);
  });

  it('keeps the window open while other commands are ending, up to idleDrainMaxDelayMs', () => {
    const { clock, drain, drains, ending } = scheduler({}, { count: 2 });
    drain.schedule();
    // Quiet for 5 ms, but two commands are still ending: their endings join this turn.
    clock.advance(12);
    expect(drains).toEqual([]);
    ending.count = 0;
    clock.advance(3);
    expect(drains).toEqual([1_015]);
    // However long they take, the turn starts idleDrainMaxDelayMs after the first arrival.
    ending.count = 1;
    clock.advance(10);
    drain.schedule();
    clock.advance(30);
    expect(drains).toEqual([1_015, 1_045]);
  });

  it('drains once arrivals have been quiet for idleDrainQuietMs', () => {
    // A command is ending as the first arrives (so it is no lone one), and none by the time it is quiet.
    const { clock, drain, drains, ending } = scheduler({}, { count: 1 });
    drain.schedule();
    ending.count = 0;
    expect(drain.scheduled).toBe(true);
    clock.advance(4);
    expect(drains).toEqual([]);
    // A second arrival inside the window restarts the quiet period.
    drain.schedule();
    clock.advance(4);
    expect(drains).toEqual([]);
    clock.advance(1);
    expect(drains).toEqual([1_009]);
    expect(drain.scheduled).toBe(false);
    expect(clock.pending).toBe(0);
  });

  it('drains at most idleDrainMaxDelayMs after the first arrival, however busy the arrivals', () => {
    const { clock, drain, drains } = scheduler({}, { count: 1 });
    drain.schedule();
    for (let elapsed = 0; elapsed < 40; elapsed += 3) {
      clock.advance(3);
      drain.schedule();
    }
    // Arrivals every 3 ms never leave 5 quiet ones; the window closed 20 ms after the first.
    expect(drains[0]).toBe(1_020);
    // The next window opened with the first arrival after that drain, and is capped the same way.
    expect(drains[1]).toBe(1_041);
  });

  it('a quiet period of 0 drains on the next turn of the clock, one drain per burst', () => {
    const { clock, drain, drains } = scheduler({ idleDrainQuietMs: 0, idleDrainMaxDelayMs: 0 });
    drain.schedule();
    drain.schedule();
    drain.schedule();
    clock.advance(0);
    expect(drains).toEqual([1_000]);
  });

  it('retries after deliveryRetryMs, doubling with each failure in a row up to deliveryRetryMaxMs', () => {
    const { clock, drain, drains } = scheduler();
    const delays: number[] = [];
    for (let failure = 0; failure < 6; failure += 1) {
      drain.noteFailure();
      const before = clock.now();
      drain.retry();
      clock.advance(2_000);
      delays.push(drains.at(-1)! - before);
    }
    expect(drain.failures).toBe(6);
    expect(delays).toEqual([100, 200, 400, 800, 1_000, 1_000]);
    drain.noteSuccess();
    drain.noteFailure();
    const before = clock.now();
    drain.retry();
    clock.advance(2_000);
    // A recorded delivery started the back-off over.
    expect(drains.at(-1)! - before).toBe(100);
  });

  it('keeps doubling bounded after very many failures', () => {
    const { clock, drain, drains } = scheduler({ deliveryRetryMs: 1, deliveryRetryMaxMs: 2_147_483_647 });
    for (let failure = 0; failure < 100; failure += 1) drain.noteFailure();
    const before = clock.now();
    drain.retry();
    clock.advance(2 ** 30);
    expect(drains.at(-1)! - before).toBe(2 ** 30);
  });

  it('an arrival during a retry wait drains sooner, with the usual quiet period', () => {
    const { clock, drain, drains } = scheduler();
    drain.noteFailure();
    drain.retry();
    clock.advance(10);
    drain.schedule();
    clock.advance(5);
    expect(drains).toEqual([1_015]);
    expect(clock.pending).toBe(0);
  });

  it('a hold keeps idle draining off until released; its release schedules a drain once', () => {
    const { clock, drain, drains } = scheduler();
    const release = drain.hold();
    const second = drain.hold();
    expect(drain.held).toBe(true);
    release();
    release();
    expect(drain.held).toBe(true);
    second();
    expect(drain.held).toBe(false);
    clock.advance(5);
    // Each first release schedules; the debounce turns them into one drain.
    expect(drains).toEqual([1_005]);
  });

  it('schedules nothing once the session is closing, and cancel drops the due drain', () => {
    const { clock, drain, drains, close } = scheduler();
    drain.schedule();
    drain.cancel();
    expect(drain.scheduled).toBe(false);
    clock.advance(100);
    expect(drains).toEqual([]);
    close();
    drain.schedule();
    drain.noteFailure();
    drain.retry();
    expect(drain.scheduled).toBe(false);
    expect(clock.pending).toBe(0);
  });
});
