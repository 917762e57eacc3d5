/**
 * What a resumed session takes back from the store, so no ending is lost to a crash:
 *
 * - the notifications an earlier process left `queued` in the ledger. They were provably never
 *   delivered — a delivery appends its message and settles its entries in one transaction — so they go
 *   back into the queue, in order, with their entries;
 * - the endings the store recorded as finished but never told (`reported` false): the process died
 *   between writing the ending and queueing its notification, or the notification was discarded before
 *   it reached the model (the session closed first). They are told now.
 *
 * A person's queued input is not taken back: the caller waiting for its turn died with the old process.
 */
import type { LedgerEntry, StoredTask } from '../store/records.js';
import type { SessionStore } from '../store/session-store.js';
import { type SessionId, TERMINAL_STATUSES } from '../tasks/index.js';
import type { RestoredNotification } from './notification-inbox.js';

/** The idempotency-key prefix of a notification about a running task (a workflow's progress). */
export const PROGRESS_KEY_PREFIX = 'progress:';

/** True unless the entry is about a running task: delivering it tells the task's ending. */
export function entryTellsEnding(entry: Pick<LedgerEntry, 'idempotencyKey'>): boolean {
  return !entry.idempotencyKey.startsWith(PROGRESS_KEY_PREFIX);
}

/**
 * Discards the session's queued inputs (`session_resumed`) and returns its queued notifications, in
 * queue order, ready to go back into the queue.
 */
export function takeQueuedResidue(store: SessionStore, sessionId: SessionId): RestoredNotification[] {
  const queued = store.listQueued(sessionId);
  const inputs = queued.filter((entry) => entry.kind === 'user_input');
  if (inputs.length > 0) {
    store.markDiscarded(
      inputs.map((entry) => entry.id),
      'session_resumed',
    );
  }
  const labels = new Map<string, string>();
  const labelOf = (taskId: string): string => {
    let label = labels.get(taskId);
    if (label === undefined) {
      label = store.getTask(taskId, sessionId)?.label ?? taskId;
      labels.set(taskId, label);
    }
    return label;
  };
  return queued
    .filter((entry) => entry.kind === 'notification')
    .map((entry) => ({
      priority: entry.priority,
      ledgerId: entry.id,
      taskId: entry.taskId ?? '',
      label: entry.taskId === undefined ? '' : labelOf(entry.taskId),
      text: entry.text,
      lane: entry.lane === 'quiet' ? 'quiet' : 'wakeup',
      branchGeneration: entry.branchGeneration,
      ending: entryTellsEnding(entry),
    }));
}

/**
 * The session's finished background tasks of branch `branchGeneration` whose endings were never told,
 * oldest first, less those in `queued` (a notification of theirs is back in the queue).
 */
export function untoldEndings(
  store: SessionStore,
  sessionId: SessionId,
  branchGeneration: number,
  queued: ReadonlySet<string>,
): StoredTask[] {
  // By the index of untold records: a resume costs the same after 10 endings as after 100k.
  return store
    .listTasks({ sessionId, statuses: TERMINAL_STATUSES, reported: false })
    .filter(
      (task) => task.isBackgrounded && task.branchGeneration === branchGeneration && !queued.has(task.id),
    );
}
