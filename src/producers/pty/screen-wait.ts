/**
 * Waiting on a pseudo-terminal's screen without fixed delays: until a predicate holds, or until the
 * output has been quiet for a while. Both are bounded by a timeout and an optional abort signal, and both
 * return early when the program has stopped.
 */
import { type Clock, systemClock } from '../bash/clock.js';
import type { PtyProcess } from './pty-process.js';
import type { ScreenView } from './terminal-screen.js';

export interface ScreenWaitOptions {
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  /** Default: the system clock. */
  readonly clock?: Clock;
}

/** Resolves to true as soon as `predicate` holds for the screen, false on timeout, abort or stop. */
export function waitForScreen(
  pty: PtyProcess,
  predicate: (screen: ScreenView) => boolean,
  options: ScreenWaitOptions,
): Promise<boolean> {
  return new Promise((resolve) => {
    let finished = false;
    const finish = (matched: boolean) => {
      if (finished) return;
      finished = true;
      cancelTimeout();
      unsubscribe();
      options.signal?.removeEventListener('abort', onAbort);
      resolve(matched);
    };
    const check = () => {
      if (predicate(pty.screen())) finish(true);
      else if (pty.exit !== undefined) finish(false);
    };
    const onAbort = () => finish(false);
    const unsubscribe = pty.onChange(check);
    const cancelTimeout = (options.clock ?? systemClock).schedule(options.timeoutMs, () => finish(false));
    if (options.signal?.aborted) finish(false);
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
