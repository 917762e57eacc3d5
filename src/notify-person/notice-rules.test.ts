/** The notifier's rules on their own: filters, the back-off's ceiling, the rate limit and the quiet watch. */
import { describe, expect, it } from 'vitest';
import { createManualClock } from '../tasks/clock.js';
import { watchForInput } from './input-watch.js';
import { matchesFilter } from './notice-filter.js';
import type { PersonNotice } from './person-notice.js';
import { RateLimiter } from './rate-limit.js';
import { backoffDelay } from './webhook-sink.js';

const notice = (sessionId: string | null, event: PersonNotice['event'], kind = 'bash') =>
  ({ event, sessionId, task: { kind } }) as PersonNotice;

describe('notice filters', () => {
  it('take by event, session (null: ownerless) and kind; absent takes all, empty takes none', () => {
    expect(matchesFilter({}, notice('s1', 'task-ended'))).toBe(true);
    expect(matchesFilter({ events: [] }, notice('s1', 'task-ended'))).toBe(false);
    expect(matchesFilter({ events: ['task-failed'] }, notice('s1', 'task-ended'))).toBe(false);
    expect(matchesFilter({ sessions: ['s2', null] }, notice('s1', 'task-failed'))).toBe(false);
    expect(matchesFilter({ sessions: ['s2', null] }, notice(null, 'task-failed'))).toBe(true);
    expect(matchesFilter({ kinds: ['subagent'] }, notice('s1', 'task-failed', 'bash'))).toBe(false);
  });
});

describe('the back-off', () => {
  it('doubles its ceiling each attempt up to the maximum, with full jitter', () => {
    expect([1, 2, 3, 4, 10].map((attempt) => backoffDelay(attempt, 500, 3000, () => 0.999999))).toEqual([
      499, 999, 1999, 2999, 2999,
    ]);
    expect(backoffDelay(3, 500, 3000, () => 0)).toBe(0);
  });
});

describe('the rate limit', () => {
  it('allows a burst, then refills at its rate', () => {
    const clock = createManualClock(0);
    const limiter = new RateLimiter({ perMinute: 2, burst: 2 }, clock);
    expect([limiter.take(), limiter.take(), limiter.take()]).toEqual([true, true, false]);
    clock.advance(29_000);
    expect(limiter.take()).toBe(false);
    clock.advance(1000);
    expect([limiter.take(), limiter.take()]).toEqual([true, false]);
  });
});

describe('the quiet watch ("needs input")', () => {
  it('fires once per quiet spell after output, never after the program ended', () => {
    const clock = createManualClock(0);
    const listeners = new Set<() => void>();
    const source = {
      exit: undefined as unknown,
      onChange(listener: () => void) {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
    };
    const output = () => {
      for (const listener of listeners) listener();
    };
    let fired = 0;
    const stop = watchForInput(source, { quietMs: 1000, clock, onQuiet: () => (fired += 1) });
    output();
    clock.advance(999);
    output();
    clock.advance(999);
    expect(fired).toBe(0);
    clock.advance(1);
    expect(fired).toBe(1);
    clock.advance(10_000);
    expect(fired).toBe(1);
    output();
    source.exit = { exitCode: 0 };
    clock.advance(5000);
    expect(fired).toBe(1);
    stop();
    expect(listeners.size).toBe(0);
  });
});
