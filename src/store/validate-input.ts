/**
 * Validation of everything a caller hands the store, before any write. Each function checks one input
 * and returns it in stored form; messages name the field and the value.
 */
import {
  InvalidArgumentError,
  type StopInitiator,
  TASK_STATUSES,
  type TaskStatus,
  validateSessionId,
} from '../tasks/index.js';
import { checkTextSize, serializeJson, serializeJsonObject } from './json.js';
import {
  LEDGER_ENTRY_KINDS,
  LEDGER_ENTRY_STATES,
  LEDGER_PRIORITIES,
  type LedgerEntryKind,
  type LedgerEntryState,
  type LedgerPriority,
  MESSAGE_ROLES,
  MESSAGE_VISIBILITIES,
  type MessageRole,
  type MessageVisibility,
  RECORD_SCHEMA_VERSION,
  SESSION_STATES,
  type SessionHolder,
  type SessionState,
  WORKFLOW_RUN_STATUSES,
  WORKFLOW_STEP_STATES,
  type WorkflowRunStatus,
  type WorkflowStepState,
} from './records.js';
import type { RunRow, SessionRow, StepRow, TaskRow } from './rows.js';
import { taskScope } from './rows.js';
import type {
  NewLedgerEntry,
  NewMessage,
  NewSession,
  NewWorkflowRun,
  NewWorkflowStep,
  SessionPatch,
  StoreDurability,
  TaskProcessInput,
  TaskRecordInput,
  WorkflowRunPatch,
} from './session-store.js';

/** Identifiers and short labels: keys, names, paths. Long texts are bounded by `maxFieldBytes` instead. */
export const MAX_NAME_LENGTH = 512;
export const MAX_PATH_LENGTH = 4096;
export const MAX_LABEL_LENGTH = 2000;

const STOP_INITIATORS: readonly StopInitiator[] = ['user', 'model', 'system'];

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function validateObject(field: string, value: unknown): Record<string, unknown> {
  if (!isObject(value)) throw new InvalidArgumentError(field, 'an object', value);
  return value;
}

/** Reads the injected clock; a clock that returns something other than a finite number is a caller bug. */
export function readClock(now: () => number): number {
  const time = now();
  if (typeof time !== 'number' || !Number.isFinite(time)) {
    throw new InvalidArgumentError('now()', 'a finite number of epoch milliseconds', time);
  }
  return Math.trunc(time);
}

export function validateSessionKey(field: string, value: unknown): string {
  return validateSessionId(value, field);
}

export function validateName(field: string, value: unknown, maxLength = MAX_NAME_LENGTH): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > maxLength) {
    throw new InvalidArgumentError(field, `a non-empty string of at most ${maxLength} characters`, value);
  }
  return value;
}

function optionalName(field: string, value: unknown, maxLength = MAX_NAME_LENGTH): string | null {
  return value === undefined ? null : validateName(field, value, maxLength);
}

export function validateText(field: string, value: unknown, maxBytes: number): string {
  if (typeof value !== 'string') throw new InvalidArgumentError(field, 'a string', value);
  checkTextSize(field, value, maxBytes);
  return value;
}

function optionalText(field: string, value: unknown, maxBytes: number): string | null {
  return value === undefined ? null : validateText(field, value, maxBytes);
}

export function validateOneOf<T extends string>(field: string, value: unknown, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw new InvalidArgumentError(field, `one of ${allowed.map((word) => `"${word}"`).join(', ')}`, value);
  }
  return value as T;
}

export function validateCount(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new InvalidArgumentError(field, 'a non-negative integer', value);
  }
  return value;
}

function validateTimestamp(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw new InvalidArgumentError(field, 'an integer number of epoch milliseconds', value);
  }
  return value;
}

function validateBoolean(field: string, value: unknown): number {
  if (typeof value !== 'boolean') throw new InvalidArgumentError(field, 'a boolean', value);
  return value ? 1 : 0;
}

export function validateList<T>(
  field: string,
  value: unknown,
  validateItem: (field: string, item: unknown) => T,
): T[] {
  if (!Array.isArray(value)) throw new InvalidArgumentError(field, 'an array', value);
  return value.map((item, index) => validateItem(`${field}[${index}]`, item));
}

// ---- sessions -------------------------------------------------------------------------------------

export function validateNewSession(input: NewSession, time: number, maxFieldBytes: number): SessionRow {
  validateObject('session', input);
  const metadata = serializeJsonObject('metadata', input.metadata ?? {}, maxFieldBytes);
  return {
    id: validateSessionKey('id', input.id),
    schemaVersion: RECORD_SCHEMA_VERSION,
    parentId: input.parentId === undefined ? null : validateSessionKey('parentId', input.parentId),
    cwd: validateName('cwd', input.cwd, MAX_PATH_LENGTH),
    title: optionalText('title', input.title, MAX_LABEL_LENGTH),
    branchGeneration:
      input.branchGeneration === undefined ? 0 : validateCount('branchGeneration', input.branchGeneration),
    state: 'active',
    lastSeq: 0,
    metadata,
    createdAt: time,
    updatedAt: time,
    holder: null,
  };
}

export interface NormalizedSessionPatch {
  readonly title?: string | null;
  readonly state?: SessionState;
  readonly branchGeneration?: number;
  readonly metadata?: string;
}

export function validateSessionPatch(patch: SessionPatch, maxFieldBytes: number): NormalizedSessionPatch {
  validateObject('patch', patch);
  const normalized: {
    title?: string | null;
    state?: SessionState;
    branchGeneration?: number;
    metadata?: string;
  } = {};
  if (patch.title !== undefined) {
    normalized.title = patch.title === null ? null : validateText('title', patch.title, MAX_LABEL_LENGTH);
  }
  if (patch.state !== undefined) normalized.state = validateOneOf('state', patch.state, SESSION_STATES);
  if (patch.branchGeneration !== undefined) {
    normalized.branchGeneration = validateCount('branchGeneration', patch.branchGeneration);
  }
  if (patch.metadata !== undefined) {
    normalized.metadata = serializeJsonObject('metadata', patch.metadata, maxFieldBytes);
  }
  return normalized;
}

// ---- messages -------------------------------------------------------------------------------------

export interface NormalizedMessage {
  readonly role: MessageRole;
  readonly content: string;
  readonly visibility: MessageVisibility;
  readonly source: string;
  readonly expectedGeneration: number | undefined;
}

const CONTENT_KEYS = new Set(['text', 'toolCalls', 'toolResults']);

function validateToolCall(field: string, value: unknown): void {
  const call = validateObject(field, value);
  validateName(`${field}.id`, call.id);
  validateName(`${field}.name`, call.name);
  if (call.input === undefined) throw new InvalidArgumentError(`${field}.input`, 'a JSON value', call.input);
}

function validateToolResult(field: string, value: unknown): void {
  const result = validateObject(field, value);
  validateName(`${field}.toolCallId`, result.toolCallId);
  if (result.output === undefined)
    throw new InvalidArgumentError(`${field}.output`, 'a JSON value', result.output);
  if (result.isError !== undefined) validateBoolean(`${field}.isError`, result.isError);
}

function validateContent(value: unknown, maxFieldBytes: number): string {
  const content = validateObject('content', value);
  for (const key of Object.keys(content)) {
    if (!CONTENT_KEYS.has(key) && content[key] !== undefined) {
      throw new InvalidArgumentError(
        'content',
        'an object with only `text`, `toolCalls` and `toolResults`',
        key,
      );
    }
  }
  if (content.text === undefined && content.toolCalls === undefined && content.toolResults === undefined) {
    throw new InvalidArgumentError('content', 'an object with `text`, `toolCalls` or `toolResults`', value);
  }
  if (content.text !== undefined && typeof content.text !== 'string') {
    throw new InvalidArgumentError('content.text', 'a string', content.text);
  }
  if (content.toolCalls !== undefined) validateList('content.toolCalls', content.toolCalls, validateToolCall);
  if (content.toolResults !== undefined) {
    validateList('content.toolResults', content.toolResults, validateToolResult);
  }
  return serializeJson('content', content, maxFieldBytes);
}

export function validateNewMessage(message: NewMessage, maxFieldBytes: number): NormalizedMessage {
  validateObject('message', message);
  return {
    role: validateOneOf('role', message.role, MESSAGE_ROLES),
    content: validateContent(message.content, maxFieldBytes),
    visibility:
      message.visibility === undefined
        ? 'all'
        : validateOneOf('visibility', message.visibility, MESSAGE_VISIBILITIES),
    source: validateName('source', message.source, 64),
    expectedGeneration:
      message.branchGeneration === undefined
        ? undefined
        : validateCount('branchGeneration', message.branchGeneration),
  };
}

// ---- input ledger ---------------------------------------------------------------------------------

export interface NormalizedLedgerEntry {
  readonly sessionId: string;
  readonly kind: LedgerEntryKind;
  readonly idempotencyKey: string;
  readonly priority: LedgerPriority;
  readonly lane: string | null;
  readonly branchGeneration: number | undefined;
  readonly taskId: string | null;
  readonly text: string;
}

export function validateNewLedgerEntry(entry: NewLedgerEntry, maxFieldBytes: number): NormalizedLedgerEntry {
  validateObject('entry', entry);
  return {
    sessionId: validateSessionKey('sessionId', entry.sessionId),
    kind: validateOneOf('kind', entry.kind, LEDGER_ENTRY_KINDS),
    idempotencyKey: validateName('idempotencyKey', entry.idempotencyKey),
    priority:
      entry.priority === undefined ? 'next' : validateOneOf('priority', entry.priority, LEDGER_PRIORITIES),
    lane: optionalName('lane', entry.lane, 64),
    branchGeneration:
      entry.branchGeneration === undefined
        ? undefined
        : validateCount('branchGeneration', entry.branchGeneration),
    taskId: optionalName('taskId', entry.taskId),
    text: validateText('text', entry.text, maxFieldBytes),
  };
}

function validateLedgerId(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new InvalidArgumentError(field, 'a ledger entry id (a positive integer)', value);
  }
  return value;
}

/** A list of distinct ledger entry ids; empty only when `allowEmpty`. */
export function validateLedgerIds(field: string, value: unknown, allowEmpty = false): number[] {
  const ids = validateList(field, value, validateLedgerId);
  if (ids.length === 0 && !allowEmpty) {
    throw new InvalidArgumentError(field, 'a non-empty array of ledger entry ids', value);
  }
  if (new Set(ids).size !== ids.length) {
    throw new InvalidArgumentError(field, 'an array of distinct ledger entry ids', value);
  }
  return ids;
}

export function validateLedgerEntryId(field: string, value: unknown): number {
  return validateLedgerId(field, value);
}

export function validateReason(value: unknown): string {
  return validateName('reason', value, 256);
}

export function validateLedgerStates(value: unknown): LedgerEntryState[] {
  return validateList('states', value, (field, item) => validateOneOf(field, item, LEDGER_ENTRY_STATES));
}

export function validateTaskIdList(field: string, value: unknown): Set<string> {
  return new Set(
    value === undefined ? [] : validateList(field, value, (itemField, item) => validateName(itemField, item)),
  );
}

/** A write's `options` (`TransactionOptions`): its durability, undefined when it names none. */
export function validateDurability(options: unknown): StoreDurability | undefined {
  if (options === undefined) return undefined;
  const { durability } = validateObject('options', options);
  return durability === undefined
    ? undefined
    : validateOneOf('options.durability', durability, STORE_DURABILITIES);
}

const STORE_DURABILITIES: readonly StoreDurability[] = ['immediate', 'deferred'];

// ---- task records ---------------------------------------------------------------------------------

export function validateTaskStatuses(value: unknown): TaskStatus[] {
  return validateList('statuses', value, (field, item) => validateOneOf(field, item, TASK_STATUSES));
}

export function validateTaskRecord(record: TaskRecordInput, time: number, maxFieldBytes: number): TaskRow {
  validateObject('task', record);
  const sessionId = record.sessionId === undefined ? null : validateSessionKey('sessionId', record.sessionId);
  const detail = serializeJsonObject('detail', record.detail ?? {}, maxFieldBytes);
  const startedAt = validateTimestamp('startedAt', record.startedAt);
  const endedAt = record.endedAt === undefined ? null : validateTimestamp('endedAt', record.endedAt);
  return {
    scope: taskScope(sessionId),
    id: validateName('id', record.id),
    sessionId,
    schemaVersion: RECORD_SCHEMA_VERSION,
    kind: validateName('kind', record.kind, 32),
    label: validateText('label', record.label, MAX_LABEL_LENGTH * 4),
    status: validateOneOf('status', record.status, TASK_STATUSES),
    detail,
    isBackgrounded: validateBoolean('isBackgrounded', record.isBackgrounded),
    branchGeneration: validateCount('branchGeneration', record.branchGeneration),
    stopInitiator:
      record.stopInitiator === undefined
        ? null
        : validateOneOf('stopInitiator', record.stopInitiator, STOP_INITIATORS),
    startedAt,
    endedAt,
    reported: validateBoolean('reported', record.reported),
    error: optionalText('error', record.error, maxFieldBytes),
    resultText: optionalText('resultText', record.resultText, maxFieldBytes),
    outputFile: optionalName('outputFile', record.outputFile, MAX_PATH_LENGTH),
    traceparent: validateTraceparent(record.traceparent),
    updatedAt: time,
    ...validateTaskProcess(record.process),
    statusFile: optionalName('statusFile', record.statusFile, MAX_PATH_LENGTH),
    durable: record.durable === undefined ? 0 : validateBoolean('durable', record.durable),
    readOffset: record.readOffset === undefined ? 0 : validateCount('readOffset', record.readOffset),
  };
}

type ProcessColumns = Pick<TaskRow, 'pid' | 'processStartTime' | 'bootId' | 'pgid' | 'processTag'>;

function validateTaskProcess(process: TaskProcessInput | undefined): ProcessColumns {
  if (process === undefined) {
    return { pid: null, processStartTime: null, bootId: null, pgid: null, processTag: null };
  }
  validateObject('process', process);
  // Without a pid only the tag can recognise the tree.
  if (process.pid === undefined && process.tag === undefined) {
    throw new InvalidArgumentError('process', 'process facts with a pid or a tag', process);
  }
  return {
    pid: process.pid === undefined ? null : validatePositive('process.pid', process.pid),
    processStartTime:
      process.startTime === undefined ? null : validateCount('process.startTime', process.startTime),
    bootId: optionalName('process.bootId', process.bootId, 64),
    pgid: process.pgid === undefined ? null : validatePositive('process.pgid', process.pgid),
    processTag: optionalName('process.tag', process.tag),
  };
}

function validatePositive(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new InvalidArgumentError(field, 'a positive integer', value);
  }
  return value;
}

/** The W3C version-00 traceparent form (the store checks the shape; tracing/ gives it meaning). */
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** A task's W3C traceparent: absent, or exactly the 55-character version-00 form. */
function validateTraceparent(value: unknown): string | null {
  if (value === undefined) return null;
  if (typeof value !== 'string' || !TRACEPARENT.test(value)) {
    throw new InvalidArgumentError('traceparent', 'a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)', value);
  }
  return value;
}

// ---- workflow journals ----------------------------------------------------------------------------

export function validateNewRun(input: NewWorkflowRun, time: number, maxFieldBytes: number): RunRow {
  validateObject('run', input);
  return {
    runId: validateName('runId', input.runId),
    sessionId: validateSessionKey('sessionId', input.sessionId),
    schemaVersion: RECORD_SCHEMA_VERSION,
    taskId: validateName('taskId', input.taskId),
    scriptPath: validateName('scriptPath', input.scriptPath, MAX_PATH_LENGTH),
    scriptHash: validateName('scriptHash', input.scriptHash),
    status: 'running',
    supersededBy: null,
    stopInitiator: null,
    input: serializeJson('input', input.input === undefined ? null : input.input, maxFieldBytes),
    result: null,
    error: null,
    createdAt: time,
    updatedAt: time,
  };
}

export interface NormalizedRunPatch {
  readonly status?: Exclude<WorkflowRunStatus, 'superseded'>;
  readonly stopInitiator?: string | null;
  readonly result?: string;
  readonly error?: string | null;
}

const PATCHABLE_RUN_STATUSES = WORKFLOW_RUN_STATUSES.filter(
  (status): status is Exclude<WorkflowRunStatus, 'superseded'> => status !== 'superseded',
);

export function validateRunPatch(patch: WorkflowRunPatch, maxFieldBytes: number): NormalizedRunPatch {
  validateObject('patch', patch);
  const normalized: {
    status?: Exclude<WorkflowRunStatus, 'superseded'>;
    stopInitiator?: string | null;
    result?: string;
    error?: string | null;
  } = {};
  if (patch.status !== undefined)
    normalized.status = validateOneOf('status', patch.status, PATCHABLE_RUN_STATUSES);
  if (patch.stopInitiator !== undefined) {
    normalized.stopInitiator =
      patch.stopInitiator === null
        ? null
        : validateOneOf('stopInitiator', patch.stopInitiator, STOP_INITIATORS);
  }
  if (patch.result !== undefined) normalized.result = serializeJson('result', patch.result, maxFieldBytes);
  if (patch.error !== undefined) {
    normalized.error = patch.error === null ? null : validateText('error', patch.error, maxFieldBytes);
  }
  return normalized;
}

export function validateRunStatuses(value: unknown): WorkflowRunStatus[] {
  return validateList('statuses', value, (field, item) => validateOneOf(field, item, WORKFLOW_RUN_STATUSES));
}

/** The step in stored form; `seq` is assigned by the store. */
export function validateNewStep(
  runId: string,
  step: NewWorkflowStep,
  maxFieldBytes: number,
): Omit<StepRow, 'seq'> {
  validateObject('step', step);
  const state: WorkflowStepState = validateOneOf('state', step.state, WORKFLOW_STEP_STATES);
  return {
    runId,
    name: validateName('name', step.name),
    schemaVersion: RECORD_SCHEMA_VERSION,
    state,
    result: step.result === undefined ? null : serializeJson('result', step.result, maxFieldBytes),
    error: optionalText('error', step.error, maxFieldBytes),
    startedAt: validateTimestamp('startedAt', step.startedAt),
    endedAt: validateTimestamp('endedAt', step.endedAt),
  };
}

/** A session holder as `acquireSession` takes it, and its liveness check. */
export function validateHolder(holder: SessionHolder, isLive: unknown): SessionHolder {
  validateObject('holder', holder);
  if (typeof holder.runtime !== 'string' || holder.runtime === '' || holder.runtime.length > 200) {
    throw new InvalidArgumentError(
      'holder.runtime',
      'a non-empty string of at most 200 characters',
      holder.runtime,
    );
  }
  if (!Number.isSafeInteger(holder.pid) || holder.pid < 1) {
    throw new InvalidArgumentError('holder.pid', 'a positive integer', holder.pid);
  }
  if (
    holder.processStart !== undefined &&
    (typeof holder.processStart !== 'string' || holder.processStart.length > 64)
  ) {
    throw new InvalidArgumentError(
      'holder.processStart',
      'a string of at most 64 characters',
      holder.processStart,
    );
  }
  if (typeof holder.acquiredAt !== 'number' || !Number.isFinite(holder.acquiredAt)) {
    throw new InvalidArgumentError('holder.acquiredAt', 'a finite number', holder.acquiredAt);
  }
  if (typeof isLive !== 'function') throw new InvalidArgumentError('isLive', 'a function', isLive);
  return {
    runtime: holder.runtime,
    pid: holder.pid,
    ...(holder.processStart === undefined ? {} : { processStart: holder.processStart }),
    acquiredAt: holder.acquiredAt,
  };
}

/** The arguments of `reserveTaskSequences`: a task kind, a count of numbers already used, a block size. */
export function validateSequenceReservation(kind: unknown, after: unknown, count: unknown): void {
  if (typeof kind !== 'string' || !/^[a-z][a-z0-9_]{0,31}$/.test(kind)) {
    throw new InvalidArgumentError('kind', 'a task kind', kind);
  }
  validateCount('after', after);
  if (!Number.isSafeInteger(count) || (count as number) < 1 || (count as number) > 1_000_000) {
    throw new InvalidArgumentError('count', 'an integer from 1 to 1000000', count);
  }
}

export function validateSequenceRelease(kind: unknown, block: unknown, lastUsed: unknown): void {
  validateSequenceReservation(kind, 0, 1);
  validateObject('block', block);
  const { first, last } = block as { first: unknown; last: unknown };
  if (!Number.isSafeInteger(first) || (first as number) < 1) {
    throw new InvalidArgumentError('block.first', 'a positive integer', first);
  }
  if (!Number.isSafeInteger(last) || (last as number) < (first as number)) {
    throw new InvalidArgumentError('block.last', `an integer of at least block.first (${first})`, last);
  }
  validateCount('lastUsed', lastUsed);
}
