/**
 * Waiting on a pseudo-terminal's screen without fixed delays: until a predicate holds, or until the
 * output has been quiet for a while. Both are bounded by a timeout and an optional abort signal, and both
 * return early when the program has stopped.
 */
import { type Clock, systemClock } from '../../tasks/clock.js';
import type { PtyProcess } from './pty-process.js';
import type { ScreenView } from './terminal-screen.js';

export interface ScreenWaitOptions {
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  /** Default: the system clock. */
  readonly clock?: Clock;
}

/**
 * Resolves to true as soon as `predicate` holds for the screen, false on timeout, abort or stop. A
 * predicate that throws ends the wait: the promise rejects with its error, which never escapes into the
 * terminal's change callback.
 */
export function waitForScreen(
  pty: PtyProcess,
  predicate: (screen: ScreenView) => boolean,
  options: ScreenWaitOptions,
): Promise<boolean> {
  return new Promise((resolve, reject) => {
    let finished = false;
    const finish = (settle: () => void) => {
      if (finished) return;
      finished = true;
      cancelTimeout();
      unsubscribe();
      options.signal?.removeEventListener('abort', onAbort);
      settle();
    };
    const check = () => {
      let matched: boolean;
      try {
        matched = predicate(pty.screen());
      } catch (error) {
        finish(() => reject(error));
        return;
      }
      if (matched) finish(() => resolve(true));
      else if (pty.exit !== undefined) finish(() => resolve(false));
    };
    const onAbort = () => finish(() => resolve(false));
    const unsubscribe = pty.onChange(check);
    const cancelTimeout = (options.clock ?? systemClock).schedule(options.timeoutMs, () =>
      finish(() => resolve(false)),
    );
    if (options.signal?.aborted) finish(() => resolve(false));
    else options.signal?.addEventListener('abort', onAbort, { once: true });
    check();
  });
}

export interface QuietWaitOptions extends ScreenWaitOptions {
  /** How long the screen must stay unchanged. */
  readonly quietMs: number;
}

/** Resolves once no output arrived for `quietMs` (or on timeout, abort or stop). */
export function waitForQuiet(pty: PtyProcess, options: QuietWaitOptions): Promise<void> {
  return new Promise((resolve) => {
    const clock = options.clock ?? systemClock;
    let finished = false;
    let cancelQuiet: (() => void) | undefined;
    const finish = () => {
      if (finished) return;
      finished = true;
      cancelTimeout();
      cancelQuiet?.();
      unsubscribe();
      options.signal?.removeEventListener('abort', finish);
      resolve();
    };
    const restartQuiet = () => {
      if (pty.exit !== undefined) {
        finish();
        return;
      }
      cancelQuiet?.();
      cancelQuiet = clock.schedule(options.quietMs, finish);
    };
    const unsubscribe = pty.onChange(restartQuiet);
    const cancelTimeout = clock.schedule(options.timeoutMs, finish);
    if (options.signal?.aborted) finish();
    else options.signal?.addEventListener('abort', finish, { once: true });
    if (!finished) restartQuiet();
  });
}
