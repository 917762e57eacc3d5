/**
 * A task snapshot rebuilt from its stored record, for a task the running task service does not know: one
 * an earlier runtime ran (a resumed session's). What the registry kept only in memory is given its
 * neutral value: not cancellable (nothing here can stop it), attempt 1, no output budget.
 */
import { asSessionId, asTaskId, type TaskSnapshot } from '../tasks/index.js';
import type { StoredTask } from './records.js';

/** Kinds whose result is a final output (a subagent's answer, a workflow's result), not a byte stream. */
const FINAL_OUTPUT_KINDS = new Set(['agent', 'workflow']);

export function taskSnapshotFromRecord(record: StoredTask): TaskSnapshot {
  const detail =
    record.outputFile !== undefined && record.detail.outputFile === undefined
      ? { ...record.detail, outputFile: record.outputFile }
      : record.detail;
  return Object.freeze({
    id: asTaskId(record.id),
    kind: record.kind,
    label: record.label,
    status: record.status,
    ownerSessionId: record.sessionId === undefined ? undefined : asSessionId(record.sessionId),
    outputLimitBytes: undefined,
    reported: record.reported,
    detail: Object.freeze({ ...detail }),
    isBackgrounded: record.isBackgrounded,
    branchGeneration: record.branchGeneration,
    stopInitiator: record.stopInitiator,
    cancellable: false,
    cancelRequestedAt: undefined,
    startedAt: record.startedAt,
    endedAt: record.endedAt,
    error: record.error,
    resultText: record.resultText,
    attempt: 1,
    finalOutput: FINAL_OUTPUT_KINDS.has(record.kind),
    traceparent: record.traceparent,
  });
}
