import { afterEach, describe, expect, it, vi } from 'vitest';
import { systemClock } from './clock.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('systemClock', () => {
  it('waits the whole delay when it is longer than one timer can express (2^31 - 1 ms)', () => {
    vi.useFakeTimers();
    const callback = vi.fn();
    const delay = 3_000_000_000;
    systemClock.schedule(delay, callback);
    vi.advanceTimersByTime(1000);
    expect(callback).not.toHaveBeenCalled();
    vi.advanceTimersByTime(delay - 1001);
    expect(callback).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(callback).toHaveBeenCalledTimes(1);
  });

  it('cancels a long delay in any of its legs', () => {
    vi.useFakeTimers();
    const callback = vi.fn();
    const cancel = systemClock.schedule(5_000_000_000, callback);
    vi.advanceTimersByTime(2_500_000_000);
    cancel();
    vi.advanceTimersByTime(5_000_000_000);
    expect(callback).not.toHaveBeenCalled();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('runs a short delay once, and not at all once cancelled', () => {
    vi.useFakeTimers();
    const ran = vi.fn();
    const cancelled = vi.fn();
    systemClock.schedule(10, ran);
    systemClock.schedule(10, cancelled)();
    vi.advanceTimersByTime(10);
    expect(ran).toHaveBeenCalledTimes(1);
    expect(cancelled).not.toHaveBeenCalled();
  });

  it('runs a delay of 0 on the next turn of the event loop (setImmediate), not after a 1 ms timer', async () => {
    const order: string[] = [];
    // From a timer's callback: the check phase of this turn comes before the next turn's timers.
    await new Promise<void>((resolve) =>
      setTimeout(() => {
        setTimeout(() => {
          order.push('1 ms timer');
          resolve();
        }, 1);
        systemClock.schedule(0, () => order.push('delay 0'));
        systemClock.schedule(0, () => order.push('cancelled'))();
      }, 0),
    );
    expect(order).toEqual(['delay 0', '1 ms timer']);
  });
});
