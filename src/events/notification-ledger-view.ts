/**
 * The port through which the in-process feed learns what the sessions' ledgers say about task
 * notifications — which ones wait to be delivered, which sessions can still be told anything — and when
 * that may have changed. The assembled runtime implements it over its sessions and its store
 * (`src/host/runtime-ledger-view.ts`); the store feed of `errand serve` reads the same store directly.
 */
import type { SessionStore } from '../store/index.js';
import type { Disposer } from '../tasks/index.js';

/**
 * Called when a session's notifications may have changed: one was queued, delivered or discarded, or the
 * session began closing. `taskId` when the change is about one task's notification.
 */
export type LedgerChangeListener = (sessionId: string, taskId: string | undefined) => void;

export interface NotificationLedgerView {
  /**
   * The session's branch generation while it can still be told something; undefined once it cannot (it
   * ended or is closing, it is sealed, or this runtime does not hold it).
   */
  deliverableGeneration(sessionId: string): number | undefined;
  /** Ids of the session's tasks with a notification in its ledger that is neither delivered nor discarded. */
  queuedTaskIds(sessionId: string): ReadonlySet<string>;
  /** Tells `listener` about changes as they happen; a delivery made elsewhere may come without one. */
  subscribe(listener: LedgerChangeListener): Disposer;
  /**
   * Forgets whatever the view kept of earlier reads, so the next ones see the store as it is now: the
   * feed calls it before each periodic check (a view that keeps nothing leaves it out).
   */
  refresh?(): void;
}

/** The ids of the tasks whose notifications wait in `sessionId`'s ledger (one indexed read of its queue). */
export function queuedNotificationTaskIds(
  store: Pick<SessionStore, 'listQueued'>,
  sessionId: string,
): Set<string> {
  const ids = new Set<string>();
  for (const entry of store.listQueued(sessionId)) {
    if (entry.kind === 'notification' && entry.taskId !== undefined) ids.add(entry.taskId);
  }
  return ids;
}
