/**
 * Waiting for a command's pipes after its shell exited, bounded so that a process holding a pipe
 * open can never keep a command from finishing.
 */
import type { CancelTimer, Clock } from '../../tasks/clock.js';

/** Resolves when `closed` does or after `milliseconds`, whichever comes first. */
export function closedWithin(closed: Promise<void>, clock: Clock, milliseconds: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const cancel = clock.schedule(milliseconds, resolve);
    void closed.then(() => {
      cancel();
      resolve();
    });
  });
}

/** How often a wait looks again while the pipes are paused for the disk. */
const PAUSED_POLL_MS = 10;

/**
 * Resolves when `closed` does, or once no output arrived for `idleMs` (the pipe may still hold data,
 * or the disk may be draining it), or after `maxMs` in all. `lastActivity` reads when output last came.
 * While `paused()` (the pipes are not read until the disk catches up) the pipes are neither quiet nor
 * using up their time: output waiting behind a slow disk is still read, not given up.
 */
export function drainedWithin(
  closed: Promise<void>,
  clock: Clock,
  lastActivity: () => number,
  idleMs: number,
  maxMs: number,
  paused: () => boolean = () => false,
): Promise<void> {
  const started = clock.now();
  let deadline = started + maxMs;
  let pausedSince: number | undefined;
  return new Promise<void>((resolve) => {
    let cancel: CancelTimer = () => {};
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      cancel();
      resolve();
    };
    const check = () => {
      const now = clock.now();
      if (paused()) {
        pausedSince ??= now;
        cancel = clock.schedule(PAUSED_POLL_MS, check);
        return;
      }
      if (pausedSince !== undefined) {
        deadline += now - pausedSince;
        pausedSince = undefined;
      }
      // Idle time counts from the wait's start at the earliest: the pipes get one full grace.
      const idleFor = now - Math.max(lastActivity(), started);
      if (idleFor >= idleMs || now >= deadline) finish();
      else cancel = clock.schedule(Math.min(idleMs - idleFor, deadline - now), check);
    };
    void closed.then(finish);
    check();
  });
}
