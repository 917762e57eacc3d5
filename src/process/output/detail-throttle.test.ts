import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../tasks/clock.js';
import { DetailThrottle } from './detail-throttle.js';

describe('DetailThrottle', () => {
  it('publishes the first change at once, then at most once per interval, always the last change', () => {
    const clock = createManualClock(10_000);
    const published: number[] = [];
    const throttle = new DetailThrottle(clock, 250, () => void published.push(clock.now()));
    throttle.notify();
    throttle.notify();
    throttle.notify();
    expect(published).toEqual([10_000]);
    clock.advance(249);
    expect(published).toEqual([10_000]);
    clock.advance(1);
    expect(published).toEqual([10_000, 10_250]);
    clock.advance(1_000);
    throttle.notify();
    expect(published).toEqual([10_000, 10_250, 11_250]);
  });

  it('publishes nothing after stop', () => {
    const clock = createManualClock();
    const published: number[] = [];
    const throttle = new DetailThrottle(clock, 250, () => void published.push(clock.now()));
    throttle.notify();
    throttle.notify();
    throttle.stop();
    clock.advance(1_000);
    throttle.notify();
    expect(published).toEqual([0]);
    expect(clock.pending).toBe(0);
  });
});

describe('createManualClock', () => {
  it('runs due callbacks in order, and none that were cancelled', () => {
    const clock = createManualClock();
    const ran: string[] = [];
    clock.schedule(20, () => ran.push('b'));
    clock.schedule(10, () => ran.push('a'));
    const cancel = clock.schedule(15, () => ran.push('never'));
    cancel();
    clock.schedule(10, () => clock.schedule(5, () => ran.push('nested')));
    clock.advance(30);
    expect(ran).toEqual(['a', 'nested', 'b']);
    expect(clock.now()).toBe(30);
  });
});
