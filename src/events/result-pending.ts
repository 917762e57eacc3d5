/**
 * When a background work's result is pending: the one rule both dashboard backends apply — the
 * in-process feed over the task service and the store feed of `errand serve` — so they agree. A result
 * is pending from the task's end until the model was told it or can no longer be: its notification was
 * delivered or discarded (the session's ledger), or the model read the end itself.
 */
import { isTerminalStatus, type StopInitiator, type TaskStatus } from '../tasks/index.js';

/** The facts of the task the rule reads. */
export interface ResultPendingTask {
  readonly status: TaskStatus;
  /** The end's one-shot delivery claim is taken (the registry's `reported`). */
  readonly reported: boolean;
  readonly stopInitiator: StopInitiator | undefined;
  readonly branchGeneration: number;
  /** Replaced by another run (`detail.supersededBy`): its end is never notified. */
  readonly superseded: boolean;
}

/** What the session's side says about the task's notification. */
export interface ResultPendingLedger {
  /**
   * The session's branch generation while it can still be told something; undefined once it cannot
   * (it ended or is closing, it is sealed, or no runtime holds it).
   */
  readonly sessionGeneration: number | undefined;
  /** A notification of the task waits in the session's ledger: admitted, neither delivered nor discarded. */
  readonly queued: boolean;
  /**
   * The notifier took the end's claim and has not queued its notification yet (the in-process feed
   * sees this; the ledger cannot show it, and it lasts as long as reading the output tail).
   */
  readonly notifying: boolean;
}

/**
 * True while the task ended and the model is still to be told: a notification is queued or being
 * queued, or nobody took the end at all. False for live work; for a session that can no longer be told
 * anything; for an end a tool call reported (a waiter took the claim: the call's own result, `task_kill`,
 * `task_output` with `wait`), the model stopped itself, or `task_output` read (its notification discarded);
 * and for an end the notifier never tells (another branch, a superseded run).
 */
export function isResultPending(task: ResultPendingTask, ledger: ResultPendingLedger): boolean {
  if (!isTerminalStatus(task.status)) return false;
  if (ledger.sessionGeneration === undefined) return false;
  if (ledger.queued) return true;
  // The model's own stop was answered by its tool call (a kind notified anyway shows up as queued).
  if (task.stopInitiator === 'model') return false;
  if (ledger.notifying) return true;
  if (task.reported) return false;
  return task.branchGeneration === ledger.sessionGeneration && !task.superseded;
}

/** Whether `detail.supersededBy` names a replacement run. */
export function isSupersededDetail(detail: Readonly<Record<string, unknown>>): boolean {
  const value = detail.supersededBy;
  return value !== undefined && value !== null && value !== false && value !== '';
}
