/**
 * The rules a state change must pass, shared by every provider so they refuse the same things: branch
 * generations only grow, finished runs stay finished, and a delivery takes only queued, current entries.
 */
import { SessionInUseError, StoreInvalidTransitionError } from './errors.js';
import { readSession } from './read-records.js';
import type { SessionHolder } from './records.js';
import type { LedgerRow, RunRow, SessionRow } from './rows.js';
import type { DeliveryResult, TaskSequenceBlock } from './session-store.js';
import type { NormalizedRunPatch, NormalizedSessionPatch } from './validate-input.js';

/** The diagnosis `markLiveAsLost` writes when the caller gives none. */
export const LOST_TASK_ERROR =
  'The runtime that ran this task stopped before the task settled; its process is gone (marked lost on resume)';

export function applySessionPatch(row: SessionRow, patch: NormalizedSessionPatch, time: number): SessionRow {
  if (patch.branchGeneration !== undefined && patch.branchGeneration < row.branchGeneration) {
    throw new StoreInvalidTransitionError(
      'session',
      row.id,
      'branchGeneration',
      row.branchGeneration,
      patch.branchGeneration,
    );
  }
  return {
    ...row,
    title: patch.title === undefined ? row.title : patch.title,
    state: patch.state ?? row.state,
    branchGeneration: patch.branchGeneration ?? row.branchGeneration,
    metadata: patch.metadata ?? row.metadata,
    updatedAt: time,
  };
}

/** The row with `holder` in it, unless a different, live holder has the session (`SESSION_IN_USE`). */
export function applyAcquire(
  row: SessionRow,
  holder: SessionHolder,
  isLive: (current: SessionHolder) => boolean,
): SessionRow {
  const current = readSession(row).holder;
  if (current !== undefined && current.runtime !== holder.runtime && isLive(current)) {
    throw new SessionInUseError(row.id, current);
  }
  return { ...row, holder: JSON.stringify(holder) };
}

/** The row without its holder if that is still `runtime`; undefined when nothing changes. */
export function applyRelease(row: SessionRow, runtime: string): SessionRow | undefined {
  return readSession(row).holder?.runtime === runtime ? { ...row, holder: null } : undefined;
}

export type DeliveryConflict = Extract<DeliveryResult, { ok: false }>['code'];

/**
 * Which entries block a delivery, if any. Entries already settled win over stale ones: a notification
 * delivered before a rewind reports `LEDGER_ENTRY_NOT_QUEUED`, the fact that matters for "never twice".
 */
export function findDeliveryConflicts(
  sessionGeneration: number,
  entries: readonly LedgerRow[],
): { code: DeliveryConflict; conflicts: LedgerRow[] } | undefined {
  const settled = entries.filter((entry) => entry.state !== 'queued');
  if (settled.length > 0) return { code: 'LEDGER_ENTRY_NOT_QUEUED', conflicts: settled };
  const stale = entries.filter(
    (entry) => entry.kind === 'notification' && entry.branchGeneration !== sessionGeneration,
  );
  if (stale.length > 0) return { code: 'LEDGER_ENTRY_STALE_BRANCH', conflicts: stale };
  return undefined;
}

/** `completed` and `superseded` are final; `failed` and `killed` may resume as `running`. */
export function applyRunPatch(row: RunRow, patch: NormalizedRunPatch, time: number): RunRow {
  const finalStatus = row.status === 'superseded' || row.status === 'completed';
  if (
    row.status === 'superseded' ||
    (finalStatus && patch.status !== undefined && patch.status !== row.status)
  ) {
    throw new StoreInvalidTransitionError(
      'workflow run',
      row.runId,
      'status',
      row.status,
      patch.status ?? row.status,
    );
  }
  return {
    ...row,
    status: patch.status ?? row.status,
    stopInitiator: patch.stopInitiator === undefined ? row.stopInitiator : patch.stopInitiator,
    result: patch.result === undefined ? row.result : patch.result,
    error: patch.error === undefined ? row.error : patch.error,
    updatedAt: time,
  };
}

/** The superseded form of a run; only a run that is not already final can be superseded. */
export function supersedeRunRow(row: RunRow, replacementRunId: string, time: number): RunRow {
  if (row.status === 'superseded' || row.status === 'completed') {
    throw new StoreInvalidTransitionError('workflow run', row.runId, 'status', row.status, 'superseded');
  }
  return { ...row, status: 'superseded', supersededBy: replacementRunId, updatedAt: time };
}

/** The reserved counter after giving back `block` beyond `lastUsed`; undefined when a later block exists. */
export function releasedSequence(
  reserved: number,
  block: TaskSequenceBlock,
  lastUsed: number,
): number | undefined {
  if (reserved !== block.last) return undefined;
  return Math.min(block.last, Math.max(block.first - 1, lastUsed));
}
