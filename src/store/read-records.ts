/**
 * Turns stored rows back into records, defensively: a corrupt JSON column, an unknown enum word or a row
 * written by a newer schema throws `STORE_RECORD_CORRUPT` naming the table, the key and the column.
 */
import {
  asSessionId,
  type StopInitiator,
  TASK_STATUSES,
  type TaskFacts,
  type TaskStatus,
} from '../tasks/index.js';
import { StoreRecordCorruptError } from './errors.js';
import { type JsonValue, parseJsonColumn, parseJsonObjectColumn } from './json.js';
import {
  LEDGER_ENTRY_KINDS,
  LEDGER_ENTRY_STATES,
  LEDGER_PRIORITIES,
  type LedgerEntry,
  MESSAGE_ROLES,
  MESSAGE_VISIBILITIES,
  type MessageContent,
  type MessageRecord,
  RECORD_SCHEMA_VERSION,
  SESSION_STATES,
  type SessionHolder,
  type SessionRecord,
  type StoredTask,
  type TaskProcessFacts,
  WORKFLOW_RUN_STATUSES,
  WORKFLOW_STEP_STATES,
  type WorkflowRun,
  type WorkflowStep,
} from './records.js';
import type { LedgerRow, MessageRow, RunRow, SessionRow, StepRow, TaskRow } from './rows.js';

const STOP_INITIATORS: readonly StopInitiator[] = ['user', 'model', 'system'];

class RowReader {
  constructor(
    readonly table: string,
    readonly key: string,
  ) {}

  fail(column: string, problem: string, cause?: unknown): never {
    throw new StoreRecordCorruptError({ table: this.table, key: this.key, column }, problem, cause);
  }

  schemaVersion(value: number): typeof RECORD_SCHEMA_VERSION {
    if (!Number.isSafeInteger(value) || value < 1 || value > RECORD_SCHEMA_VERSION) {
      this.fail(
        'schemaVersion',
        `record schema version ${String(value)} is not one this version of Errand reads (1-${RECORD_SCHEMA_VERSION})`,
      );
    }
    return RECORD_SCHEMA_VERSION;
  }

  oneOf<T extends string>(column: string, value: string, allowed: readonly T[]): T {
    if (!(allowed as readonly string[]).includes(value)) {
      this.fail(column, `${JSON.stringify(value)} is not one of ${allowed.join(', ')}`);
    }
    return value as T;
  }

  optionalOneOf<T extends string>(
    column: string,
    value: string | null,
    allowed: readonly T[],
  ): T | undefined {
    return value === null ? undefined : this.oneOf(column, value, allowed);
  }

  json(column: string, text: string): JsonValue {
    return parseJsonColumn({ table: this.table, key: this.key, column }, text);
  }

  optionalJson(column: string, text: string | null): JsonValue | undefined {
    return text === null ? undefined : this.json(column, text);
  }
}

function optional<T>(value: T | null): T | undefined {
  return value === null ? undefined : value;
}

export function readSession(row: SessionRow): SessionRecord {
  const reader = new RowReader('sessions', row.id);
  return {
    schemaVersion: reader.schemaVersion(row.schemaVersion),
    id: asSessionId(row.id),
    parentId: row.parentId === null ? undefined : asSessionId(row.parentId),
    cwd: row.cwd,
    title: optional(row.title),
    branchGeneration: row.branchGeneration,
    state: reader.oneOf('state', row.state, SESSION_STATES),
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    metadata: parseJsonObjectColumn({ table: 'sessions', key: row.id, column: 'metadata' }, row.metadata),
    holder: readHolder(row),
  };
}

/** A holder column that is not a well-formed holder reads as none: it cannot keep anyone out. */
function readHolder(row: SessionRow): SessionHolder | undefined {
  if (row.holder === null || row.holder === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(row.holder);
  } catch {
    return undefined;
  }
  const holder = value as Partial<SessionHolder> | null;
  if (
    typeof holder !== 'object' ||
    holder === null ||
    typeof holder.runtime !== 'string' ||
    !Number.isSafeInteger(holder.pid) ||
    typeof holder.acquiredAt !== 'number'
  ) {
    return undefined;
  }
  return Object.freeze({
    runtime: holder.runtime,
    pid: holder.pid as number,
    processStart: typeof holder.processStart === 'string' ? holder.processStart : undefined,
    acquiredAt: holder.acquiredAt,
  });
}

export function readMessage(row: MessageRow): MessageRecord {
  const reader = new RowReader('messages', `${row.sessionId}#${row.seq}`);
  const content = reader.json('content', row.content);
  if (typeof content !== 'object' || content === null || Array.isArray(content)) {
    reader.fail('content', 'expected a JSON object');
  }
  return {
    schemaVersion: reader.schemaVersion(row.schemaVersion),
    sessionId: asSessionId(row.sessionId),
    seq: row.seq,
    role: reader.oneOf('role', row.role, MESSAGE_ROLES),
    content: content as MessageContent,
    visibility: reader.oneOf('visibility', row.visibility, MESSAGE_VISIBILITIES),
    source: row.source,
    branchGeneration: row.branchGeneration,
    createdAt: row.createdAt,
    abandoned: row.abandonedAt !== null,
  };
}

export function readLedgerEntry(row: LedgerRow): LedgerEntry {
  const reader = new RowReader('input_ledger', String(row.id));
  return {
    schemaVersion: reader.schemaVersion(row.schemaVersion),
    id: row.id,
    sessionId: asSessionId(row.sessionId),
    kind: reader.oneOf('kind', row.kind, LEDGER_ENTRY_KINDS),
    idempotencyKey: row.idempotencyKey,
    state: reader.oneOf('state', row.state, LEDGER_ENTRY_STATES),
    reason: optional(row.reason),
    priority: reader.oneOf('priority', row.priority, LEDGER_PRIORITIES),
    lane: optional(row.lane),
    branchGeneration: row.branchGeneration,
    taskId: optional(row.taskId),
    text: row.text,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    deliveredInMessageSeq: optional(row.deliveredInMessageSeq),
  };
}

export function readTask(row: TaskRow): StoredTask {
  const key = row.scope === '' ? row.id : `${row.scope}/${row.id}`;
  const reader = new RowReader('tasks', key);
  return {
    schemaVersion: reader.schemaVersion(row.schemaVersion),
    id: row.id,
    sessionId: row.sessionId === null ? undefined : asSessionId(row.sessionId),
    kind: row.kind,
    label: row.label,
    status: reader.oneOf<TaskStatus>('status', row.status, TASK_STATUSES),
    // Stored as published; readers check each fact's type (`taskFact`).
    detail: parseJsonObjectColumn({ table: 'tasks', key, column: 'detail' }, row.detail) as TaskFacts,
    isBackgrounded: row.isBackgrounded !== 0,
    branchGeneration: row.branchGeneration,
    stopInitiator: reader.optionalOneOf('stopInitiator', row.stopInitiator, STOP_INITIATORS),
    startedAt: row.startedAt,
    endedAt: optional(row.endedAt),
    reported: row.reported !== 0,
    error: optional(row.error),
    resultText: optional(row.resultText),
    outputFile: optional(row.outputFile),
    traceparent: optional(row.traceparent),
    updatedAt: row.updatedAt,
    process: readTaskProcess(row),
    statusFile: optional(row.statusFile),
    durable: row.durable === 1,
    readOffset: row.readOffset,
  };
}

function readTaskProcess(row: TaskRow): TaskProcessFacts | undefined {
  if (row.pid === null && row.processTag === null) return undefined;
  return {
    pid: optional(row.pid),
    startTime: optional(row.processStartTime),
    bootId: optional(row.bootId),
    pgid: optional(row.pgid),
    tag: optional(row.processTag),
  };
}

export function readRun(row: RunRow): WorkflowRun {
  const reader = new RowReader('workflow_runs', row.runId);
  return {
    schemaVersion: reader.schemaVersion(row.schemaVersion),
    runId: row.runId,
    sessionId: asSessionId(row.sessionId),
    taskId: row.taskId,
    scriptPath: row.scriptPath,
    scriptHash: row.scriptHash,
    status: reader.oneOf('status', row.status, WORKFLOW_RUN_STATUSES),
    supersededBy: optional(row.supersededBy),
    stopInitiator: reader.optionalOneOf('stopInitiator', row.stopInitiator, STOP_INITIATORS),
    input: reader.json('input', row.input),
    result: reader.optionalJson('result', row.result),
    error: optional(row.error),
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

export function readStep(row: StepRow): WorkflowStep {
  const reader = new RowReader('workflow_steps', `${row.runId}/${row.name}`);
  return {
    schemaVersion: reader.schemaVersion(row.schemaVersion),
    runId: row.runId,
    name: row.name,
    seq: row.seq,
    state: reader.oneOf('state', row.state, WORKFLOW_STEP_STATES),
    result: reader.optionalJson('result', row.result),
    error: optional(row.error),
    startedAt: row.startedAt,
    endedAt: row.endedAt,
  };
}
