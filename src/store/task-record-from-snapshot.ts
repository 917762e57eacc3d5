/** Builds the persisted form of a task from a registry snapshot. */
import type { TaskSnapshot } from '../tasks/index.js';
import type { JsonObject } from './json.js';
import type { TaskRecordInput } from './session-store.js';

export interface TaskRecordExtras {
  /** Where the task's full output was spilled, if the producer spills it. Default: `detail.outputFile` when a string. */
  readonly outputFile?: string;
}

/** The snapshot's facts as a task record. `detail` must hold JSON values (the store checks). */
export function taskRecordFromSnapshot(
  snapshot: TaskSnapshot,
  extras: TaskRecordExtras = {},
): TaskRecordInput {
  const detailOutputFile = snapshot.detail.outputFile;
  const outputFile =
    extras.outputFile ?? (typeof detailOutputFile === 'string' ? detailOutputFile : undefined);
  return {
    id: snapshot.id,
    sessionId: snapshot.ownerSessionId,
    kind: snapshot.kind,
    label: snapshot.label,
    status: snapshot.status,
    detail: snapshot.detail as JsonObject,
    isBackgrounded: snapshot.isBackgrounded,
    branchGeneration: snapshot.branchGeneration,
    stopInitiator: snapshot.stopInitiator,
    startedAt: snapshot.startedAt,
    endedAt: snapshot.endedAt,
    reported: snapshot.reported,
    error: snapshot.error,
    resultText: snapshot.resultText,
    outputFile,
    ...(snapshot.traceparent === undefined ? {} : { traceparent: snapshot.traceparent }),
  };
}
