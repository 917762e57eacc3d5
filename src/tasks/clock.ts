/**
 * The clock Errand reads and schedules with. Injected so throttles, deadlines, debounces and retries can be
 * driven by a test instead of by wall time; core code never reads `Date.now()` itself.
 */

/** Cancels a scheduled callback; calling it after the callback ran (or twice) does nothing. */
export type CancelTimer = () => void;

export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
  /** Runs `callback` once after `delayMs` (0: on the event loop's next turn, after its pending I/O). */
  schedule(delayMs: number, callback: () => void): CancelTimer;
}

/**
 * The longest delay one `setTimeout` can express. Node runs a longer one after 1 ms, so longer delays
 * are waited out in legs of at most this length.
 */
export const MAX_TIMER_DELAY_MS = 2_147_483_647;

export const systemClock: Clock = Object.freeze({
  now: () => Date.now(),
  schedule(delayMs: number, callback: () => void): CancelTimer {
    // `setTimeout(0)` waits a whole millisecond; the check phase of this very turn does not.
    if (delayMs <= 0) {
      const immediate = setImmediate(callback);
      return () => clearImmediate(immediate);
    }
    let timer: NodeJS.Timeout;
    const arm = (remaining: number) => {
      timer =
        remaining > MAX_TIMER_DELAY_MS
          ? setTimeout(() => arm(remaining - MAX_TIMER_DELAY_MS), MAX_TIMER_DELAY_MS)
          : setTimeout(callback, remaining);
    };
    arm(delayMs);
    return () => clearTimeout(timer);
  },
});

/** Milliseconds on the process's monotonic clock (never steps back, unlike the wall clock). */
export const monotonicNow = (): number => performance.now();

/** A clock that moves only when told to: `advance(ms)` runs every callback that came due, in order. */
export interface ManualClock extends Clock {
  /** Moves time forward and runs the callbacks that came due. */
  advance(milliseconds: number): void;
  /** Callbacks scheduled and not yet run or cancelled. */
  readonly pending: number;
}

interface ManualTimer {
  readonly due: number;
  readonly sequence: number;
  readonly callback: () => void;
  cancelled: boolean;
}

export function createManualClock(start = 0): ManualClock {
  let now = start;
  let sequence = 0;
  const timers: ManualTimer[] = [];
  return {
    now: () => now,
    schedule(delayMs, callback) {
      const timer: ManualTimer = {
        due: now + Math.max(0, delayMs),
        sequence: sequence++,
        callback,
        cancelled: false,
      };
      timers.push(timer);
      return () => {
        timer.cancelled = true;
      };
    },
    advance(milliseconds) {
      const target = now + milliseconds;
      for (;;) {
        let next: ManualTimer | undefined;
        for (const timer of timers) {
          if (timer.cancelled || timer.due > target) continue;
          if (!next || timer.due < next.due || (timer.due === next.due && timer.sequence < next.sequence)) {
            next = timer;
          }
        }
        if (!next) break;
        next.cancelled = true;
        timers.splice(timers.indexOf(next), 1);
        now = Math.max(now, next.due);
        next.callback();
      }
      now = target;
      for (let index = timers.length - 1; index >= 0; index -= 1) {
        if (timers[index]!.cancelled) timers.splice(index, 1);
      }
    },
    get pending() {
      return timers.filter((timer) => !timer.cancelled).length;
    },
  };
}
