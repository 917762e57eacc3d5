/**
 * Waiting for a command's pipes after its shell exited, bounded so that a process holding a pipe
 * open can never keep a command from finishing.
 */
import type { CancelTimer, Clock } from './clock.js';

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

/**
 * Resolves when `closed` does, or once no output arrived for `idleMs` (the pipe may still hold data,
 * or the disk may be draining it), or after `maxMs` in all. `lastActivity` reads when output last came.
 */
export function drainedWithin(
  closed: Promise<void>,
  clock: Clock,
  lastActivity: () => number,
  idleMs: number,
  maxMs: number,
): Promise<void> {
  const started = clock.now();
  const deadline = started + maxMs;
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
      // Idle time counts from the wait's start at the earliest: the pipes get one full grace.
      const idleFor = now - Math.max(lastActivity(), started);
      if (idleFor >= idleMs || now >= deadline) finish();
      else cancel = clock.schedule(Math.min(idleMs - idleFor, deadline - now), check);
    };
    void closed.then(finish);
    check();
  });
}
