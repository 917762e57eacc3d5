/**
 * What a bounded listing of background tasks (`task_list`) reads from a task service: the newest live
 * ones and the newest finished ones, at most `max` of each, in `list`'s order, and how many of each
 * there are. `TaskService.listBackground` answers it without reading every task; `backgroundListingOf`
 * derives the same from a full `list` (for a service without it, or a caller that sees every session).
 */
import { isTerminalStatus } from './status.js';
import type { TaskSnapshot } from './types.js';

export interface BackgroundListing {
  /** The newest `max` live background tasks and the newest `max` finished ones, oldest first. */
  readonly tasks: readonly TaskSnapshot[];
  /** Every live background task the caller has. */
  readonly live: number;
  /** Every finished background task the service still holds for the caller. */
  readonly finished: number;
}

/** The listing of `snapshots` (in `list`'s order): foreground tasks left out. */
export function backgroundListingOf(snapshots: readonly TaskSnapshot[], max: number): BackgroundListing {
  const background = snapshots.filter((snapshot) => snapshot.isBackgrounded);
  const live = background.filter((snapshot) => !isTerminalStatus(snapshot.status));
  const finished = background.filter((snapshot) => isTerminalStatus(snapshot.status));
  const keep = new Set([
    ...live.slice(Math.max(0, live.length - max)),
    ...finished.slice(Math.max(0, finished.length - max)),
  ]);
  return {
    tasks: background.filter((snapshot) => keep.has(snapshot)),
    live: live.length,
    finished: finished.length,
  };
}
