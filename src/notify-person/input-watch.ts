/**
 * "Needs input": a terminal program that printed something and then went quiet is, most of the time, at a
 * prompt waiting for a person (a password, a y/n, a REPL). The watch fires once per quiet spell — after
 * `quietMs` without output following some output — and again only after the program printed more.
 */
import type { Clock } from '../tasks/index.js';

/** What the watch needs of a terminal program: its output changes, and whether it ended. */
export interface QuietSource {
  onChange(listener: () => void): () => void;
  readonly exit: unknown;
}

export interface InputWatchOptions {
  readonly quietMs: number;
  readonly clock: Clock;
  /** Called once per quiet spell while the program runs. */
  readonly onQuiet: () => void;
}

/** Watches `source`; returns the function that stops watching. */
export function watchForInput(source: QuietSource, options: InputWatchOptions): () => void {
  let cancel: (() => void) | undefined;
  let stopped = false;
  const arm = () => {
    cancel?.();
    cancel = undefined;
    if (stopped || source.exit !== undefined) return;
    cancel = options.clock.schedule(options.quietMs, () => {
      cancel = undefined;
      if (!stopped && source.exit === undefined) options.onQuiet();
    });
  };
  const unsubscribe = source.onChange(arm);
  // A program that already printed its prompt before the watch began is quiet now.
  arm();
  return () => {
    stopped = true;
    cancel?.();
    unsubscribe();
  };
}
