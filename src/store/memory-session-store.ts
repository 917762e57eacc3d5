/**
 * The in-memory session store, for tests and for hosts that persist nothing. It keeps the same stored rows
 * as the SQLite store and reads them back through the same code, and it checks every guard before it
 * changes anything, so each call is all-or-nothing like a transaction.
 */
import { InvalidArgumentError, type SessionId } from '../tasks/index.js';
import { rejectUnknownOptions } from '../tasks/option-keys.js';
import {
  StoreClosedError,
  StoreRecordExistsError,
  StoreRecordNotFoundError,
  StoreStaleBranchError,
} from './errors.js';
import {
  type ResolvedSessionStoreOptions,
  resolvePruneOptions,
  resolveSessionStoreOptions,
  SESSION_STORE_OPTION_KEYS,
  type SessionStoreOptions,
} from './options.js';
import { readLedgerEntry, readMessage, readRun, readSession, readStep, readTask } from './read-records.js';
import {
  LEDGER_PRIORITIES,
  type LedgerEntry,
  type MessageRecord,
  RECORD_SCHEMA_VERSION,
  type RuntimeCommand,
  SESSION_STATES,
  type SessionHolder,
  type SessionRecord,
  type StoredTask,
  type WorkflowRun,
  type WorkflowStep,
} from './records.js';
import type { CommandRow, LedgerRow, MessageRow, RunRow, SessionRow, StepRow, TaskRow } from './rows.js';
import { taskScope } from './rows.js';
import {
  applyAnswer,
  readCommand,
  validateCommandAnswer,
  validateCommandId,
  validateCommandLimit,
  validateNewCommand,
} from './runtime-commands.js';
import type {
  AdmitResult,
  AnswerCommandResult,
  CommandAnswer,
  DeliveryResult,
  DiscardQueuedOptions,
  DiscardResult,
  ListLedgerOptions,
  ListMessagesOptions,
  MarkLostOptions,
  NewLedgerEntry,
  NewMessage,
  NewRuntimeCommand,
  NewSession,
  NewWorkflowRun,
  NewWorkflowStep,
  PruneOptions,
  PruneResult,
  RecordStepResult,
  RewindResult,
  RunFilter,
  SessionFilter,
  SessionPatch,
  SessionStore,
  SupersedeResult,
  TaskFilter,
  TaskRecordInput,
  TaskSequenceBlock,
  WorkflowRunPatch,
} from './session-store.js';
import {
  applyAcquire,
  applyRelease,
  applyRunPatch,
  applySessionPatch,
  findDeliveryConflicts,
  LOST_TASK_ERROR,
  releasedSequence,
  supersedeRunRow,
} from './transition-rules.js';
import {
  type NormalizedMessage,
  readClock,
  validateCount,
  validateHolder,
  validateLedgerEntryId,
  validateLedgerIds,
  validateLedgerStates,
  validateName,
  validateNewLedgerEntry,
  validateNewMessage,
  validateNewRun,
  validateNewSession,
  validateNewStep,
  validateObject,
  validateOneOf,
  validateReason,
  validateRunPatch,
  validateRunStatuses,
  validateSequenceRelease,
  validateSequenceReservation,
  validateSessionKey,
  validateSessionPatch,
  validateTaskIdList,
  validateTaskRecord,
  validateTaskStatuses,
} from './validate-input.js';

function compare(a: number | string, b: number | string): number {
  if (a === b) return 0;
  return a < b ? -1 : 1;
}

function byStart(a: TaskRow, b: TaskRow): number {
  return compare(a.startedAt, b.startedAt) || compare(a.scope, b.scope) || compare(a.id, b.id);
}

function priorityRank(row: LedgerRow): number {
  return LEDGER_PRIORITIES.indexOf(row.priority as (typeof LEDGER_PRIORITIES)[number]);
}

function taskKey(scope: string, id: string): string {
  return `${scope}\u0000${id}`;
}

function ledgerKey(sessionId: string, idempotencyKey: string): string {
  return `${sessionId}\u0000${idempotencyKey}`;
}

/** A session store that lives in this process's memory. */
export class MemorySessionStore implements SessionStore {
  readonly #options: ResolvedSessionStoreOptions;
  readonly #sessions = new Map<string, SessionRow>();
  /** Per session, in seq order. */
  readonly #messages = new Map<string, MessageRow[]>();
  /** In id order (insertion order). */
  readonly #ledger = new Map<number, LedgerRow>();
  readonly #ledgerByKey = new Map<string, number>();
  #lastLedgerId = 0;
  readonly #tasks = new Map<string, TaskRow>();
  readonly #runs = new Map<string, RunRow>();
  /** Per run, by step name. */
  readonly #steps = new Map<string, Map<string, StepRow>>();
  /** In id order (insertion order). */
  readonly #commands = new Map<number, CommandRow>();
  /** The highest task id number reserved per kind. */
  readonly #taskSequences = new Map<string, number>();
  #lastCommandId = 0;
  #closed = false;

  constructor(options: SessionStoreOptions = {}) {
    rejectUnknownOptions(options, SESSION_STORE_OPTION_KEYS, { where: 'createMemorySessionStore' });
    this.#options = resolveSessionStoreOptions(options);
  }

  #open(operation: string): void {
    if (this.#closed) throw new StoreClosedError(operation);
  }

  #now(): number {
    return readClock(this.#options.now);
  }

  #sessionRow(sessionId: string): SessionRow {
    const row = this.#sessions.get(sessionId);
    if (!row) throw new StoreRecordNotFoundError('session', sessionId);
    return row;
  }

  #runRow(runId: string): RunRow {
    const row = this.#runs.get(runId);
    if (!row) throw new StoreRecordNotFoundError('workflow run', runId);
    return row;
  }

  #checkGeneration(session: SessionRow, message: NormalizedMessage): void {
    if (message.expectedGeneration !== undefined && message.expectedGeneration !== session.branchGeneration) {
      throw new StoreStaleBranchError(session.id, message.expectedGeneration, session.branchGeneration);
    }
  }

  /** Appends after every guard passed: next seq, the session's generation, the session touched. */
  #appendMessageRow(session: SessionRow, message: NormalizedMessage, time: number): MessageRow {
    const seq = session.lastSeq + 1;
    this.#sessions.set(session.id, { ...session, lastSeq: seq, updatedAt: time });
    const row: MessageRow = {
      sessionId: session.id,
      seq,
      schemaVersion: RECORD_SCHEMA_VERSION,
      role: message.role,
      content: message.content,
      visibility: message.visibility,
      source: message.source,
      branchGeneration: session.branchGeneration,
      createdAt: time,
      abandonedAt: null,
    };
    const list = this.#messages.get(session.id);
    if (list) list.push(row);
    else this.#messages.set(session.id, [row]);
    return row;
  }

  #deleteSession(sessionId: string): void {
    this.#sessions.delete(sessionId);
    this.#messages.delete(sessionId);
    for (const [id, row] of this.#ledger) {
      if (row.sessionId !== sessionId) continue;
      this.#ledger.delete(id);
      this.#ledgerByKey.delete(ledgerKey(row.sessionId, row.idempotencyKey));
    }
    for (const [key, row] of this.#tasks) if (row.sessionId === sessionId) this.#tasks.delete(key);
    for (const [runId, row] of this.#runs) {
      if (row.sessionId !== sessionId) continue;
      this.#runs.delete(runId);
      this.#steps.delete(runId);
    }
    for (const [id, row] of this.#commands) if (row.sessionId === sessionId) this.#commands.delete(id);
  }

  // ---- sessions -----------------------------------------------------------------------------------

  createSession(input: NewSession): SessionRecord {
    this.#open('create a session');
    const row = validateNewSession(input, this.#now(), this.#options.maxFieldBytes);
    if (this.#sessions.has(row.id)) throw new StoreRecordExistsError('session', row.id);
    if (row.parentId !== null) this.#sessionRow(row.parentId);
    this.#sessions.set(row.id, row);
    return readSession(row);
  }

  getSession(id: SessionId | string): SessionRecord | undefined {
    this.#open('read a session');
    const row = this.#sessions.get(validateSessionKey('id', id));
    return row ? readSession(row) : undefined;
  }

  listSessions(filter: SessionFilter = {}): SessionRecord[] {
    this.#open('list sessions');
    validateObject('filter', filter);
    const parentId =
      filter.parentId === undefined ? undefined : validateSessionKey('parentId', filter.parentId);
    const state =
      filter.state === undefined ? undefined : validateOneOf('state', filter.state, SESSION_STATES);
    return [...this.#sessions.values()]
      .filter(
        (row) =>
          (parentId === undefined || row.parentId === parentId) &&
          (state === undefined || row.state === state),
      )
      .sort((a, b) => compare(a.createdAt, b.createdAt) || compare(a.id, b.id))
      .map(readSession);
  }

  updateSession(id: SessionId | string, patch: SessionPatch): SessionRecord {
    this.#open('update a session');
    const key = validateSessionKey('id', id);
    const normalized = validateSessionPatch(patch, this.#options.maxFieldBytes);
    const next = applySessionPatch(this.#sessionRow(key), normalized, this.#now());
    this.#sessions.set(key, next);
    return readSession(next);
  }

  acquireSession(
    id: SessionId | string,
    holder: SessionHolder,
    isLive: (current: SessionHolder) => boolean,
  ): SessionRecord {
    this.#open('acquire a session');
    const key = validateSessionKey('id', id);
    const valid = validateHolder(holder, isLive);
    const next = applyAcquire(this.#sessionRow(key), valid, isLive);
    this.#sessions.set(key, next);
    return readSession(next);
  }

  releaseSession(id: SessionId | string, runtime: string): void {
    this.#open('release a session');
    const key = validateSessionKey('id', id);
    const row = this.#sessions.get(key);
    const next = row === undefined ? undefined : applyRelease(row, runtime);
    if (next !== undefined) this.#sessions.set(key, next);
  }

  // ---- messages -----------------------------------------------------------------------------------

  appendMessage(sessionId: SessionId | string, message: NewMessage): MessageRecord {
    this.#open('append a message');
    const key = validateSessionKey('sessionId', sessionId);
    const normalized = validateNewMessage(message, this.#options.maxFieldBytes);
    const time = this.#now();
    const session = this.#sessionRow(key);
    this.#checkGeneration(session, normalized);
    return readMessage(this.#appendMessageRow(session, normalized, time));
  }

  listMessages(sessionId: SessionId | string, options: ListMessagesOptions = {}): MessageRecord[] {
    this.#open('list messages');
    const key = validateSessionKey('sessionId', sessionId);
    validateObject('options', options);
    const afterSeq = options.afterSeq === undefined ? 0 : validateCount('afterSeq', options.afterSeq);
    const limit =
      options.limit === undefined ? Number.POSITIVE_INFINITY : validateCount('limit', options.limit);
    if (options.includeAbandoned !== undefined && typeof options.includeAbandoned !== 'boolean') {
      throw new InvalidArgumentError('includeAbandoned', 'a boolean', options.includeAbandoned);
    }
    const includeAbandoned = options.includeAbandoned === true;
    const beforeSeq =
      options.beforeSeq === undefined ? undefined : validateCount('beforeSeq', options.beforeSeq);
    const rows = (this.#messages.get(key) ?? []).filter(
      (row) =>
        row.seq > afterSeq &&
        (beforeSeq === undefined || row.seq < beforeSeq) &&
        (includeAbandoned || row.abandonedAt === null),
    );
    // With beforeSeq the limit keeps the newest rows.
    const page =
      beforeSeq === undefined ? rows.slice(0, limit) : rows.slice(Math.max(0, rows.length - limit));
    return page.map(readMessage);
  }

  rewind(sessionId: SessionId | string, toSeq: number): RewindResult {
    this.#open('rewind a session');
    const key = validateSessionKey('sessionId', sessionId);
    const seq = validateCount('toSeq', toSeq);
    const time = this.#now();
    const session = this.#sessionRow(key);
    if (seq > session.lastSeq) {
      throw new InvalidArgumentError(
        'toSeq',
        `a seq no greater than ${session.lastSeq}, the session's last`,
        seq,
      );
    }
    const abandoned: MessageRow[] = [];
    const list = this.#messages.get(key) ?? [];
    list.forEach((row, index) => {
      if (row.seq <= seq || row.abandonedAt !== null) return;
      const next = { ...row, abandonedAt: time };
      list[index] = next;
      abandoned.push(next);
    });
    const next: SessionRow = { ...session, branchGeneration: session.branchGeneration + 1, updatedAt: time };
    this.#sessions.set(key, next);
    return { session: readSession(next), abandoned: abandoned.map(readMessage) };
  }

  // ---- input ledger -------------------------------------------------------------------------------

  admit(entry: NewLedgerEntry): AdmitResult {
    this.#open('admit a ledger entry');
    const normalized = validateNewLedgerEntry(entry, this.#options.maxFieldBytes);
    const time = this.#now();
    const session = this.#sessionRow(normalized.sessionId);
    const existingId = this.#ledgerByKey.get(ledgerKey(normalized.sessionId, normalized.idempotencyKey));
    if (existingId !== undefined)
      return { entry: readLedgerEntry(this.#ledger.get(existingId)!), admitted: false };
    this.#lastLedgerId += 1;
    const row: LedgerRow = {
      ...normalized,
      id: this.#lastLedgerId,
      schemaVersion: RECORD_SCHEMA_VERSION,
      state: 'queued',
      reason: null,
      branchGeneration: normalized.branchGeneration ?? session.branchGeneration,
      createdAt: time,
      updatedAt: time,
      deliveredInMessageSeq: null,
    };
    this.#ledger.set(row.id, row);
    this.#ledgerByKey.set(ledgerKey(row.sessionId, row.idempotencyKey), row.id);
    return { entry: readLedgerEntry(row), admitted: true };
  }

  getLedgerEntry(id: number): LedgerEntry | undefined {
    this.#open('read a ledger entry');
    const row = this.#ledger.get(validateLedgerEntryId('id', id));
    return row ? readLedgerEntry(row) : undefined;
  }

  listLedger(sessionId: SessionId | string, options: ListLedgerOptions = {}): LedgerEntry[] {
    this.#open('list ledger entries');
    const key = validateSessionKey('sessionId', sessionId);
    validateObject('options', options);
    const states =
      options.states === undefined ? undefined : new Set<string>(validateLedgerStates(options.states));
    return [...this.#ledger.values()]
      .filter((row) => row.sessionId === key && (states === undefined || states.has(row.state)))
      .map(readLedgerEntry);
  }

  listQueued(sessionId: SessionId | string): LedgerEntry[] {
    this.#open('list queued entries');
    const key = validateSessionKey('sessionId', sessionId);
    return [...this.#ledger.values()]
      .filter((row) => row.sessionId === key && row.state === 'queued')
      .sort((a, b) => priorityRank(a) - priorityRank(b) || a.id - b.id)
      .map(readLedgerEntry);
  }

  markDiscarded(ids: readonly number[], reason: string): DiscardResult {
    this.#open('discard ledger entries');
    const keys = validateLedgerIds('ids', ids, true);
    const why = validateReason(reason);
    const time = this.#now();
    const rows = keys.map((id) => {
      const row = this.#ledger.get(id);
      if (!row) throw new StoreRecordNotFoundError('ledger entry', id);
      return row;
    });
    const discarded: LedgerEntry[] = [];
    const unchanged: LedgerEntry[] = [];
    for (const row of rows) {
      if (row.state !== 'queued') {
        unchanged.push(readLedgerEntry(row));
        continue;
      }
      const next: LedgerRow = { ...row, state: 'discarded', reason: why, updatedAt: time };
      this.#ledger.set(row.id, next);
      discarded.push(readLedgerEntry(next));
    }
    return { discarded, unchanged };
  }

  discardQueued(
    sessionId: SessionId | string,
    reason: string,
    options: DiscardQueuedOptions = {},
  ): LedgerEntry[] {
    this.#open('discard queued entries');
    const key = validateSessionKey('sessionId', sessionId);
    const why = validateReason(reason);
    validateObject('options', options);
    const keep = validateTaskIdList('keepTaskIds', options.keepTaskIds);
    const time = this.#now();
    this.#sessionRow(key);
    const discarded: LedgerEntry[] = [];
    for (const row of this.#ledger.values()) {
      if (row.sessionId !== key || row.state !== 'queued') continue;
      if (row.taskId !== null && keep.has(row.taskId)) continue;
      const next: LedgerRow = { ...row, state: 'discarded', reason: why, updatedAt: time };
      this.#ledger.set(row.id, next);
      discarded.push(readLedgerEntry(next));
    }
    return discarded;
  }

  commitDelivery(
    sessionId: SessionId | string,
    ledgerIds: readonly number[],
    message: NewMessage,
  ): DeliveryResult {
    this.#open('commit a delivery');
    const key = validateSessionKey('sessionId', sessionId);
    const ids = validateLedgerIds('ledgerIds', ledgerIds);
    const normalized = validateNewMessage(message, this.#options.maxFieldBytes);
    const time = this.#now();
    const session = this.#sessionRow(key);
    const rows = ids.map((id) => {
      const row = this.#ledger.get(id);
      if (!row || row.sessionId !== key)
        throw new StoreRecordNotFoundError(`ledger entry of session ${key}`, id);
      return row;
    });
    const conflict = findDeliveryConflicts(session.branchGeneration, rows);
    if (conflict)
      return { ok: false, code: conflict.code, conflicts: conflict.conflicts.map(readLedgerEntry) };
    this.#checkGeneration(session, normalized);
    const messageRow = this.#appendMessageRow(session, normalized, time);
    const delivered = rows.map((row) => {
      const next: LedgerRow = {
        ...row,
        state: 'delivered',
        deliveredInMessageSeq: messageRow.seq,
        updatedAt: time,
      };
      this.#ledger.set(row.id, next);
      return readLedgerEntry(next);
    });
    return { ok: true, message: readMessage(messageRow), entries: delivered };
  }

  // ---- task records -------------------------------------------------------------------------------

  upsertTask(record: TaskRecordInput): StoredTask {
    this.#open('save a task record');
    const row = validateTaskRecord(record, this.#now(), this.#options.maxFieldBytes);
    if (row.sessionId !== null) this.#sessionRow(row.sessionId);
    this.#tasks.set(taskKey(row.scope, row.id), row);
    return readTask(row);
  }

  getTask(id: string, sessionId?: SessionId | string): StoredTask | undefined {
    this.#open('read a task record');
    const taskId = validateName('id', id);
    const scope = taskScope(sessionId === undefined ? null : validateSessionKey('sessionId', sessionId));
    const row = this.#tasks.get(taskKey(scope, taskId));
    return row ? readTask(row) : undefined;
  }

  #selectTasks(scope: string | undefined, statuses: ReadonlySet<string> | undefined): TaskRow[] {
    return [...this.#tasks.values()]
      .filter(
        (row) =>
          (scope === undefined || row.scope === scope) &&
          (statuses === undefined || statuses.has(row.status)),
      )
      .sort(byStart);
  }

  listTasks(filter: TaskFilter = {}): StoredTask[] {
    this.#open('list task records');
    validateObject('filter', filter);
    const scope =
      filter.sessionId === undefined
        ? undefined
        : taskScope(filter.sessionId === null ? null : validateSessionKey('sessionId', filter.sessionId));
    const statuses =
      filter.statuses === undefined ? undefined : new Set<string>(validateTaskStatuses(filter.statuses));
    const since = filter.updatedSince === undefined ? 0 : validateCount('updatedSince', filter.updatedSince);
    return this.#selectTasks(scope, statuses)
      .filter((row) => row.updatedAt >= since)
      .map(readTask);
  }

  markLiveAsLost(options: MarkLostOptions = {}): StoredTask[] {
    this.#open('mark live tasks lost');
    validateObject('options', options);
    const sessionId =
      options.sessionId === undefined ? undefined : validateSessionKey('sessionId', options.sessionId);
    const keep = validateTaskIdList('keepTaskIds', options.keepTaskIds);
    const error = options.error === undefined ? LOST_TASK_ERROR : validateName('error', options.error, 4096);
    const time = this.#now();
    const rows = this.#selectTasks(
      sessionId === undefined ? undefined : taskScope(sessionId),
      new Set(['running', 'stopping']),
    )
      .filter((row) => !keep.has(row.id))
      .map(
        (row): TaskRow => ({ ...row, status: 'lost', error, endedAt: row.endedAt ?? time, updatedAt: time }),
      );
    for (const row of rows) this.#tasks.set(taskKey(row.scope, row.id), row);
    return rows.map(readTask);
  }

  // ---- workflow journals --------------------------------------------------------------------------

  createRun(input: NewWorkflowRun): WorkflowRun {
    this.#open('create a workflow run');
    const row = validateNewRun(input, this.#now(), this.#options.maxFieldBytes);
    this.#sessionRow(row.sessionId);
    if (this.#runs.has(row.runId)) throw new StoreRecordExistsError('workflow run', row.runId);
    this.#runs.set(row.runId, row);
    return readRun(row);
  }

  getRun(runId: string): WorkflowRun | undefined {
    this.#open('read a workflow run');
    const row = this.#runs.get(validateName('runId', runId));
    return row ? readRun(row) : undefined;
  }

  listRuns(filter: RunFilter = {}): WorkflowRun[] {
    this.#open('list workflow runs');
    validateObject('filter', filter);
    const sessionId =
      filter.sessionId === undefined ? undefined : validateSessionKey('sessionId', filter.sessionId);
    const taskId = filter.taskId === undefined ? undefined : validateName('taskId', filter.taskId);
    const statuses =
      filter.statuses === undefined ? undefined : new Set<string>(validateRunStatuses(filter.statuses));
    return [...this.#runs.values()]
      .filter(
        (row) =>
          (sessionId === undefined || row.sessionId === sessionId) &&
          (taskId === undefined || row.taskId === taskId) &&
          (statuses === undefined || statuses.has(row.status)),
      )
      .sort((a, b) => compare(a.createdAt, b.createdAt) || compare(a.runId, b.runId))
      .map(readRun);
  }

  updateRun(runId: string, patch: WorkflowRunPatch): WorkflowRun {
    this.#open('update a workflow run');
    const key = validateName('runId', runId);
    const normalized = validateRunPatch(patch, this.#options.maxFieldBytes);
    const next = applyRunPatch(this.#runRow(key), normalized, this.#now());
    this.#runs.set(key, next);
    return readRun(next);
  }

  supersedeRun(runId: string, replacement: NewWorkflowRun): SupersedeResult {
    this.#open('supersede a workflow run');
    const key = validateName('runId', runId);
    const time = this.#now();
    const row = validateNewRun(replacement, time, this.#options.maxFieldBytes);
    const old = this.#runRow(key);
    this.#sessionRow(row.sessionId);
    if (this.#runs.has(row.runId)) throw new StoreRecordExistsError('workflow run', row.runId);
    const superseded = supersedeRunRow(old, row.runId, time);
    this.#runs.set(row.runId, row);
    this.#runs.set(key, superseded);
    return { superseded: readRun(superseded), replacement: readRun(row) };
  }

  recordStep(runId: string, step: NewWorkflowStep): RecordStepResult {
    this.#open('record a workflow step');
    const key = validateName('runId', runId);
    const normalized = validateNewStep(key, step, this.#options.maxFieldBytes);
    this.#runRow(key);
    let steps = this.#steps.get(key);
    const existing = steps?.get(normalized.name);
    if (existing?.state === 'done') return { step: readStep(existing), recorded: false };
    if (!steps) {
      steps = new Map();
      this.#steps.set(key, steps);
    }
    const lastSeq = Math.max(0, ...[...steps.values()].map((row) => row.seq));
    const row: StepRow = { ...normalized, seq: existing?.seq ?? lastSeq + 1 };
    steps.set(row.name, row);
    return { step: readStep(row), recorded: true };
  }

  getStep(runId: string, name: string): WorkflowStep | undefined {
    this.#open('read a workflow step');
    const row = this.#steps.get(validateName('runId', runId))?.get(validateName('name', name));
    return row ? readStep(row) : undefined;
  }

  getSteps(runId: string): WorkflowStep[] {
    this.#open('list workflow steps');
    const steps = this.#steps.get(validateName('runId', runId));
    return [...(steps?.values() ?? [])].sort((a, b) => a.seq - b.seq).map(readStep);
  }

  // ---- runtime commands ---------------------------------------------------------------------------

  submitCommand(input: NewRuntimeCommand): RuntimeCommand {
    this.#open('submit a command');
    const fields = validateNewCommand(input, this.#now());
    this.#sessionRow(fields.sessionId);
    this.#lastCommandId += 1;
    const row: CommandRow = { ...fields, id: this.#lastCommandId };
    this.#commands.set(row.id, row);
    return readCommand(row);
  }

  getCommand(id: number): RuntimeCommand | undefined {
    this.#open('read a command');
    const row = this.#commands.get(validateCommandId('id', id));
    return row ? readCommand(row) : undefined;
  }

  listPendingCommands(runtime: string, limit?: number): RuntimeCommand[] {
    this.#open('list pending commands');
    const key = validateName('runtime', runtime);
    const count = validateCommandLimit(limit);
    const pending: RuntimeCommand[] = [];
    for (const row of this.#commands.values()) {
      if (pending.length >= count) break;
      if (row.runtime === key && row.state === 'pending') pending.push(readCommand(row));
    }
    return pending;
  }

  answerCommand(id: number, answer: CommandAnswer): AnswerCommandResult {
    this.#open('answer a command');
    const key = validateCommandId('id', id);
    const normalized = validateCommandAnswer(answer);
    const time = this.#now();
    const row = this.#commands.get(key);
    if (!row) throw new StoreRecordNotFoundError('command', key);
    const next = applyAnswer(row, normalized, time);
    if (next === undefined) return { command: readCommand(row), answered: false };
    this.#commands.set(key, next);
    return { command: readCommand(next), answered: true };
  }

  expireCommands(createdBefore: number): RuntimeCommand[] {
    this.#open('expire commands');
    const cutoff = validateCount('createdBefore', createdBefore);
    const time = this.#now();
    const expired: RuntimeCommand[] = [];
    for (const row of this.#commands.values()) {
      if (row.state !== 'pending' || row.createdAt >= cutoff) continue;
      const next: CommandRow = { ...row, state: 'expired', answeredAt: time };
      this.#commands.set(row.id, next);
      expired.push(readCommand(next));
    }
    return expired;
  }

  // ---- task id sequences --------------------------------------------------------------------------

  reserveTaskSequences(kind: string, after: number, count: number): TaskSequenceBlock {
    this.#open('reserve task ids');
    validateSequenceReservation(kind, after, count);
    const base = Math.max(this.#taskSequences.get(kind) ?? 0, after);
    this.#taskSequences.set(kind, base + count);
    return { first: base + 1, last: base + count };
  }

  releaseTaskSequences(kind: string, block: TaskSequenceBlock, lastUsed: number): void {
    this.#open('release task ids');
    validateSequenceRelease(kind, block, lastUsed);
    const next = releasedSequence(this.#taskSequences.get(kind) ?? 0, block, lastUsed);
    if (next !== undefined) this.#taskSequences.set(kind, next);
  }

  // ---- bounds -------------------------------------------------------------------------------------

  prune(options: PruneOptions = {}): PruneResult {
    this.#open('prune the store');
    const retention = resolvePruneOptions(options);
    const time = this.#now();
    const closed = [...this.#sessions.values()]
      .filter((row) => row.state === 'closed')
      .sort((a, b) => compare(b.updatedAt, a.updatedAt) || compare(b.id, a.id))
      .slice(retention.keepClosedSessions);
    for (const row of closed) this.#deleteSession(row.id);

    let ledgerEntries = 0;
    const ledgerCutoff = time - retention.settledLedgerMaxAgeMs;
    for (const [id, row] of this.#ledger) {
      if (row.state === 'queued' || row.updatedAt >= ledgerCutoff) continue;
      this.#ledger.delete(id);
      this.#ledgerByKey.delete(ledgerKey(row.sessionId, row.idempotencyKey));
      ledgerEntries += 1;
    }

    let messages = 0;
    const messageCutoff = time - retention.abandonedMessageMaxAgeMs;
    const referenced = new Set<string>();
    for (const row of this.#ledger.values()) {
      if (row.deliveredInMessageSeq !== null) referenced.add(`${row.sessionId}#${row.deliveredInMessageSeq}`);
    }
    for (const [sessionId, list] of this.#messages) {
      const kept = list.filter(
        (row) =>
          row.abandonedAt === null ||
          row.abandonedAt >= messageCutoff ||
          referenced.has(`${sessionId}#${row.seq}`),
      );
      messages += list.length - kept.length;
      this.#messages.set(sessionId, kept);
    }

    const finishedCutoff = time - retention.finishedRecordMaxAgeMs;
    let tasks = 0;
    for (const [key, row] of this.#tasks) {
      if (row.status === 'running' || row.status === 'stopping' || row.updatedAt >= finishedCutoff) continue;
      this.#tasks.delete(key);
      tasks += 1;
    }
    let workflowRuns = 0;
    for (const [runId, row] of this.#runs) {
      if (row.status === 'running' || row.updatedAt >= finishedCutoff) continue;
      this.#runs.delete(runId);
      this.#steps.delete(runId);
      workflowRuns += 1;
    }
    let commands = 0;
    const commandCutoff = time - retention.commandMaxAgeMs;
    for (const [id, row] of this.#commands) {
      if ((row.answeredAt ?? row.createdAt) >= commandCutoff) continue;
      this.#commands.delete(id);
      commands += 1;
    }
    return { sessions: closed.length, messages, ledgerEntries, tasks, workflowRuns, commands };
  }

  close(): void {
    this.#closed = true;
  }
}

export function createMemorySessionStore(options: SessionStoreOptions = {}): MemorySessionStore {
  return new MemorySessionStore(options);
}
