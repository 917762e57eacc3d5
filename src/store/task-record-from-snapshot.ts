/**
 * Builds the persisted form of a task from a registry snapshot. A producer publishes what recognises its
 * process after the fact in the task's detail (`pid`, `processStartTime`, `bootId`, `pgid`, `processTag`,
 * `statusFile`, `durable`) and the model's read cursor (`readOffset`); they become the record's own
 * columns, so a later runtime finds them without knowing the producer's detail shape.
 */
import type { TaskSnapshot } from '../tasks/index.js';
import type { JsonObject } from './json.js';
import type { TaskProcessInput, TaskRecordInput } from './session-store.js';

export interface TaskRecordExtras {
  /** Where the task's full output was spilled, if the producer spills it. Default: `detail.outputFile` when a string. */
  readonly outputFile?: string;
}

/** The snapshot's facts as a task record. `detail` must hold JSON values (the store checks). */
export function taskRecordFromSnapshot(
  snapshot: TaskSnapshot,
  extras: TaskRecordExtras = {},
): TaskRecordInput {
  const detail = snapshot.detail;
  const outputFile = extras.outputFile ?? stringOf(detail.outputFile);
  const process = processOf(detail as Readonly<Record<string, unknown>>);
  const statusFile = stringOf(detail.statusFile);
  return {
    id: snapshot.id,
    sessionId: snapshot.ownerSessionId,
    kind: snapshot.kind,
    label: snapshot.label,
    status: snapshot.status,
    detail: detail as JsonObject,
    isBackgrounded: snapshot.isBackgrounded,
    branchGeneration: snapshot.branchGeneration,
    stopInitiator: snapshot.stopInitiator,
    startedAt: snapshot.startedAt,
    endedAt: snapshot.endedAt,
    reported: snapshot.reported,
    error: snapshot.error,
    resultText: snapshot.resultText,
    outputFile,
    ...(process === undefined ? {} : { process }),
    ...(statusFile === undefined ? {} : { statusFile }),
    durable: detail.durable === true,
    ...(readOffsetOf(detail.readOffset) === undefined
      ? {}
      : { readOffset: readOffsetOf(detail.readOffset)! }),
    ...(snapshot.traceparent === undefined ? {} : { traceparent: snapshot.traceparent }),
  };
}

function readOffsetOf(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

/**
 * The process facts a producer published in `detail`; undefined without a positive integer `pid` or a
 * `processTag` (a tree whose spawn is not answered yet is recognised by its tag alone).
 */
function processOf(detail: Readonly<Record<string, unknown>>): TaskProcessInput | undefined {
  const pid = positiveOf(detail.pid);
  const tag = stringOf(detail.processTag);
  if (pid === undefined && tag === undefined) return undefined;
  const startTime = detail.processStartTime;
  const bootId = stringOf(detail.bootId);
  const pgid = positiveOf(detail.pgid);
  return {
    ...(pid === undefined ? {} : { pid }),
    ...(typeof startTime === 'number' && Number.isSafeInteger(startTime) && startTime >= 0
      ? { startTime }
      : {}),
    ...(bootId === undefined ? {} : { bootId }),
    ...(pgid === undefined ? {} : { pgid }),
    ...(tag === undefined ? {} : { tag }),
  };
}

function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function positiveOf(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : undefined;
}
