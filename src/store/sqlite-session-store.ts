/**
 * The SQLite session store. Every change is one immediate transaction, so a guard and its write are one
 * step even when several processes share the file, and a crash leaves either all of a change or none.
 */
import type Database from 'better-sqlite3';
import { InvalidArgumentError, type SessionId } from '../tasks/index.js';
import { rejectUnknownOptions } from '../tasks/option-keys.js';
import {
  StoreBusyError,
  StoreClosedError,
  StoreInvalidTransitionError,
  StoreRecordExistsError,
  StoreRecordNotFoundError,
  StoreStaleBranchError,
} from './errors.js';
import { type MigrationOutcome, migrate } from './migrations.js';
import {
  type ResolvedSessionStoreOptions,
  resolvePruneOptions,
  resolveSessionStoreOptions,
} from './options.js';
import { readLedgerEntry, readMessage, readRun, readSession, readStep, readTask } from './read-records.js';
import {
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
import type { LedgerRow, MessageRow, RunRow, SessionRow, StepRow } from './rows.js';
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
  openFailure,
  openSqliteDatabase,
  resolveSqliteOptions,
  SQLITE_SESSION_STORE_OPTION_KEYS,
  type SqliteSessionStoreOptions,
} from './sqlite-database.js';
import { prepareStatements, type Statements } from './sqlite-statements.js';
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

function jsonList(values: readonly string[] | undefined): string | null {
  return values === undefined ? null : JSON.stringify(values);
}

/** A session store in a SQLite file. Open it with `openSqliteSessionStore`. */
export class SqliteSessionStore implements SessionStore {
  /** The database file. */
  readonly file: string;
  /** The schema version the file had when opened, and the one it has now. */
  readonly migration: MigrationOutcome;
  readonly #database: Database.Database;
  readonly #statements: Statements;
  readonly #options: ResolvedSessionStoreOptions;
  readonly #busyTimeoutMs: number;
  readonly #transaction: Database.Transaction<(body: () => unknown) => unknown>;
  #closed = false;

  /** Use `openSqliteSessionStore`; this takes a database that is open and migrated. */
  private constructor(
    database: Database.Database,
    file: string,
    migration: MigrationOutcome,
    options: ResolvedSessionStoreOptions,
    busyTimeoutMs: number,
  ) {
    this.#database = database;
    this.file = file;
    this.migration = migration;
    this.#options = options;
    this.#busyTimeoutMs = busyTimeoutMs;
    this.#statements = prepareStatements(database);
    this.#transaction = database.transaction((body: () => unknown) => body());
  }

  /** Opens (creating and migrating as needed) the store the options name. */
  static open(options: SqliteSessionStoreOptions = {}): SqliteSessionStore {
    rejectUnknownOptions(options, SQLITE_SESSION_STORE_OPTION_KEYS, { where: 'openSqliteSessionStore' });
    const resolved = resolveSessionStoreOptions(options);
    const sqlite = resolveSqliteOptions(options);
    const database = openSqliteDatabase(sqlite);
    let store: SqliteSessionStore;
    try {
      const migration = migrate(database, sqlite.file, readClock(resolved.now));
      store = new SqliteSessionStore(database, sqlite.file, migration, resolved, sqlite.busyTimeoutMs);
    } catch (error) {
      database.close();
      throw openFailure(sqlite.file, error);
    }
    if (sqlite.pruneOnOpen !== false) {
      try {
        store.prune(sqlite.pruneOnOpen);
      } catch (error) {
        store.close();
        throw error;
      }
    }
    return store;
  }

  // ---- plumbing -----------------------------------------------------------------------------------

  #run<T>(operation: string, body: () => T, write: boolean): T {
    if (this.#closed) throw new StoreClosedError(operation);
    try {
      return write ? (this.#transaction.immediate(body) as T) : body();
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code === 'string' && code.startsWith('SQLITE_BUSY')) {
        throw new StoreBusyError(operation, this.#busyTimeoutMs, error);
      }
      throw error;
    }
  }

  #write<T>(operation: string, body: () => T): T {
    return this.#run(operation, body, true);
  }

  #read<T>(operation: string, body: () => T): T {
    return this.#run(operation, body, false);
  }

  #now(): number {
    return readClock(this.#options.now);
  }

  #sessionRow(sessionId: string): SessionRow {
    const row = this.#statements.getSession.get(sessionId);
    if (!row) throw new StoreRecordNotFoundError('session', sessionId);
    return row;
  }

  #runRow(runId: string): RunRow {
    const row = this.#statements.getRun.get(runId);
    if (!row) throw new StoreRecordNotFoundError('workflow run', runId);
    return row;
  }

  /** Appends inside the caller's transaction: next seq, the session's generation, the session touched. */
  #appendMessageRow(session: SessionRow, message: NormalizedMessage, time: number): MessageRow {
    if (message.expectedGeneration !== undefined && message.expectedGeneration !== session.branchGeneration) {
      throw new StoreStaleBranchError(session.id, message.expectedGeneration, session.branchGeneration);
    }
    const seq = session.lastSeq + 1;
    this.#statements.updateSession.run({ ...session, lastSeq: seq, updatedAt: time });
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
    this.#statements.insertMessage.run(row);
    return row;
  }

  // ---- sessions -----------------------------------------------------------------------------------

  createSession(input: NewSession): SessionRecord {
    const row = validateNewSession(input, this.#now(), this.#options.maxFieldBytes);
    return this.#write('create a session', () => {
      if (this.#statements.getSession.get(row.id)) throw new StoreRecordExistsError('session', row.id);
      if (row.parentId !== null) this.#sessionRow(row.parentId);
      this.#statements.insertSession.run(row);
      return readSession(row);
    });
  }

  getSession(id: SessionId | string): SessionRecord | undefined {
    const key = validateSessionKey('id', id);
    return this.#read('read a session', () => {
      const row = this.#statements.getSession.get(key);
      return row ? readSession(row) : undefined;
    });
  }

  listSessions(filter: SessionFilter = {}): SessionRecord[] {
    validateObject('filter', filter);
    const parentId = filter.parentId === undefined ? null : validateSessionKey('parentId', filter.parentId);
    const state = filter.state === undefined ? null : validateOneOf('state', filter.state, SESSION_STATES);
    return this.#read('list sessions', () =>
      this.#statements.listSessions.all(parentId, parentId, state, state).map(readSession),
    );
  }

  updateSession(id: SessionId | string, patch: SessionPatch): SessionRecord {
    const key = validateSessionKey('id', id);
    const normalized = validateSessionPatch(patch, this.#options.maxFieldBytes);
    const time = this.#now();
    return this.#write('update a session', () => {
      const next = applySessionPatch(this.#sessionRow(key), normalized, time);
      this.#statements.updateSession.run(next);
      return readSession(next);
    });
  }

  acquireSession(
    id: SessionId | string,
    holder: SessionHolder,
    isLive: (current: SessionHolder) => boolean,
  ): SessionRecord {
    const key = validateSessionKey('id', id);
    const valid = validateHolder(holder, isLive);
    // One immediate transaction: of two processes acquiring at once, the second sees the first's holder.
    return this.#write('acquire a session', () => {
      const next = applyAcquire(this.#sessionRow(key), valid, isLive);
      this.#statements.updateSession.run(next);
      return readSession(next);
    });
  }

  releaseSession(id: SessionId | string, runtime: string): void {
    const key = validateSessionKey('id', id);
    this.#write('release a session', () => {
      const row = this.#statements.getSession.get(key);
      const next = row === undefined ? undefined : applyRelease(row, runtime);
      if (next !== undefined) this.#statements.updateSession.run(next);
    });
  }

  // ---- messages -----------------------------------------------------------------------------------

  appendMessage(sessionId: SessionId | string, message: NewMessage): MessageRecord {
    const key = validateSessionKey('sessionId', sessionId);
    const normalized = validateNewMessage(message, this.#options.maxFieldBytes);
    const time = this.#now();
    return this.#write('append a message', () =>
      readMessage(this.#appendMessageRow(this.#sessionRow(key), normalized, time)),
    );
  }

  listMessages(sessionId: SessionId | string, options: ListMessagesOptions = {}): MessageRecord[] {
    const key = validateSessionKey('sessionId', sessionId);
    validateObject('options', options);
    const afterSeq = options.afterSeq === undefined ? 0 : validateCount('afterSeq', options.afterSeq);
    const limit = options.limit === undefined ? -1 : validateCount('limit', options.limit);
    if (options.includeAbandoned !== undefined && typeof options.includeAbandoned !== 'boolean') {
      throw new InvalidArgumentError('includeAbandoned', 'a boolean', options.includeAbandoned);
    }
    const includeAbandoned = options.includeAbandoned === true ? 1 : 0;
    const beforeSeq =
      options.beforeSeq === undefined ? undefined : validateCount('beforeSeq', options.beforeSeq);
    if (beforeSeq !== undefined) {
      return this.#read('list messages', () =>
        this.#statements.listMessagesBefore
          .all(key, afterSeq, beforeSeq, includeAbandoned, limit)
          .reverse()
          .map(readMessage),
      );
    }
    return this.#read('list messages', () =>
      this.#statements.listMessages.all(key, afterSeq, includeAbandoned, limit).map(readMessage),
    );
  }

  rewind(sessionId: SessionId | string, toSeq: number): RewindResult {
    const key = validateSessionKey('sessionId', sessionId);
    const seq = validateCount('toSeq', toSeq);
    const time = this.#now();
    return this.#write('rewind a session', () => {
      const session = this.#sessionRow(key);
      if (seq > session.lastSeq) {
        throw new InvalidArgumentError(
          'toSeq',
          `a seq no greater than ${session.lastSeq}, the session's last`,
          seq,
        );
      }
      const abandoned = this.#statements.abandonMessages.all(time, key, seq).sort((a, b) => a.seq - b.seq);
      const next: SessionRow = {
        ...session,
        branchGeneration: session.branchGeneration + 1,
        updatedAt: time,
      };
      this.#statements.updateSession.run(next);
      return { session: readSession(next), abandoned: abandoned.map(readMessage) };
    });
  }

  // ---- input ledger -------------------------------------------------------------------------------

  admit(entry: NewLedgerEntry): AdmitResult {
    const normalized = validateNewLedgerEntry(entry, this.#options.maxFieldBytes);
    const time = this.#now();
    return this.#write('admit a ledger entry', () => {
      const session = this.#sessionRow(normalized.sessionId);
      const existing = this.#statements.findLedgerEntry.get(normalized.sessionId, normalized.idempotencyKey);
      if (existing) return { entry: readLedgerEntry(existing), admitted: false };
      const row: Omit<LedgerRow, 'id'> = {
        ...normalized,
        schemaVersion: RECORD_SCHEMA_VERSION,
        state: 'queued',
        reason: null,
        branchGeneration: normalized.branchGeneration ?? session.branchGeneration,
        createdAt: time,
        updatedAt: time,
        deliveredInMessageSeq: null,
      };
      const { lastInsertRowid } = this.#statements.insertLedgerEntry.run(row);
      return { entry: readLedgerEntry({ ...row, id: Number(lastInsertRowid) }), admitted: true };
    });
  }

  getLedgerEntry(id: number): LedgerEntry | undefined {
    const key = validateLedgerEntryId('id', id);
    return this.#read('read a ledger entry', () => {
      const row = this.#statements.getLedgerEntry.get(key);
      return row ? readLedgerEntry(row) : undefined;
    });
  }

  listLedger(sessionId: SessionId | string, options: ListLedgerOptions = {}): LedgerEntry[] {
    const key = validateSessionKey('sessionId', sessionId);
    validateObject('options', options);
    const states = jsonList(options.states === undefined ? undefined : validateLedgerStates(options.states));
    return this.#read('list ledger entries', () =>
      this.#statements.listLedger.all(key, states, states).map(readLedgerEntry),
    );
  }

  listQueued(sessionId: SessionId | string): LedgerEntry[] {
    const key = validateSessionKey('sessionId', sessionId);
    return this.#read('list queued entries', () => this.#statements.listQueued.all(key).map(readLedgerEntry));
  }

  markDiscarded(ids: readonly number[], reason: string): DiscardResult {
    const keys = validateLedgerIds('ids', ids, true);
    const why = validateReason(reason);
    const time = this.#now();
    return this.#write('discard ledger entries', () => {
      const discarded: LedgerEntry[] = [];
      const unchanged: LedgerEntry[] = [];
      const rows = keys.map((id) => {
        const row = this.#statements.getLedgerEntry.get(id);
        if (!row) throw new StoreRecordNotFoundError('ledger entry', id);
        return row;
      });
      for (const row of rows) {
        if (
          row.state === 'queued' &&
          this.#statements.discardLedgerEntry.run(why, time, row.id).changes === 1
        ) {
          discarded.push(readLedgerEntry({ ...row, state: 'discarded', reason: why, updatedAt: time }));
        } else {
          unchanged.push(readLedgerEntry(this.#statements.getLedgerEntry.get(row.id)!));
        }
      }
      return { discarded, unchanged };
    });
  }

  discardQueued(
    sessionId: SessionId | string,
    reason: string,
    options: DiscardQueuedOptions = {},
  ): LedgerEntry[] {
    const key = validateSessionKey('sessionId', sessionId);
    const why = validateReason(reason);
    validateObject('options', options);
    const keep = validateTaskIdList('keepTaskIds', options.keepTaskIds);
    const time = this.#now();
    return this.#write('discard queued entries', () => {
      this.#sessionRow(key);
      const rows = this.#statements.listLedger
        .all(key, '["queued"]', '["queued"]')
        .filter((row) => row.taskId === null || !keep.has(row.taskId));
      for (const row of rows) this.#statements.discardLedgerEntry.run(why, time, row.id);
      return rows.map((row) => readLedgerEntry({ ...row, state: 'discarded', reason: why, updatedAt: time }));
    });
  }

  commitDelivery(
    sessionId: SessionId | string,
    ledgerIds: readonly number[],
    message: NewMessage,
  ): DeliveryResult {
    const key = validateSessionKey('sessionId', sessionId);
    const ids = validateLedgerIds('ledgerIds', ledgerIds);
    const normalized = validateNewMessage(message, this.#options.maxFieldBytes);
    const time = this.#now();
    return this.#write('commit a delivery', (): DeliveryResult => {
      const session = this.#sessionRow(key);
      const rows = ids.map((id) => {
        const row = this.#statements.getLedgerEntry.get(id);
        if (!row || row.sessionId !== key)
          throw new StoreRecordNotFoundError(`ledger entry of session ${key}`, id);
        return row;
      });
      const conflict = findDeliveryConflicts(session.branchGeneration, rows);
      if (conflict)
        return { ok: false, code: conflict.code, conflicts: conflict.conflicts.map(readLedgerEntry) };
      const messageRow = this.#appendMessageRow(session, normalized, time);
      for (const row of rows) {
        // The guard above already saw it queued; a miss here would mean a broken guard, so roll back.
        if (this.#statements.deliverLedgerEntry.run(messageRow.seq, time, row.id).changes !== 1) {
          throw new StoreInvalidTransitionError(
            'ledger entry',
            String(row.id),
            'state',
            row.state,
            'delivered',
          );
        }
      }
      return {
        ok: true,
        message: readMessage(messageRow),
        entries: rows.map((row) =>
          readLedgerEntry({
            ...row,
            state: 'delivered',
            deliveredInMessageSeq: messageRow.seq,
            updatedAt: time,
          }),
        ),
      };
    });
  }

  // ---- task records -------------------------------------------------------------------------------

  upsertTask(record: TaskRecordInput): StoredTask {
    const row = validateTaskRecord(record, this.#now(), this.#options.maxFieldBytes);
    return this.#write('save a task record', () => {
      if (row.sessionId !== null) this.#sessionRow(row.sessionId);
      this.#statements.upsertTask.run(row);
      return readTask(row);
    });
  }

  getTask(id: string, sessionId?: SessionId | string): StoredTask | undefined {
    const taskId = validateName('id', id);
    const scope = taskScope(sessionId === undefined ? null : validateSessionKey('sessionId', sessionId));
    return this.#read('read a task record', () => {
      const row = this.#statements.getTask.get(scope, taskId);
      return row ? readTask(row) : undefined;
    });
  }

  listTasks(filter: TaskFilter = {}): StoredTask[] {
    validateObject('filter', filter);
    const scoped = filter.sessionId !== undefined;
    const scope = taskScope(
      filter.sessionId === undefined || filter.sessionId === null
        ? null
        : validateSessionKey('sessionId', filter.sessionId),
    );
    const statuses = jsonList(
      filter.statuses === undefined ? undefined : validateTaskStatuses(filter.statuses),
    );
    const since = filter.updatedSince === undefined ? 0 : validateCount('updatedSince', filter.updatedSince);
    return this.#read('list task records', () =>
      this.#statements.listTasks.all(scoped ? 1 : 0, scope, statuses, statuses, since).map(readTask),
    );
  }

  markLiveAsLost(options: MarkLostOptions = {}): StoredTask[] {
    validateObject('options', options);
    const sessionId =
      options.sessionId === undefined ? undefined : validateSessionKey('sessionId', options.sessionId);
    const keep = validateTaskIdList('keepTaskIds', options.keepTaskIds);
    const error = options.error === undefined ? LOST_TASK_ERROR : validateName('error', options.error, 4096);
    const time = this.#now();
    return this.#write('mark live tasks lost', () => {
      const live = '["running","stopping"]';
      const rows = this.#statements.listTasks
        .all(sessionId === undefined ? 0 : 1, taskScope(sessionId), live, live, 0)
        .filter((row) => !keep.has(row.id))
        .map((row) => ({ ...row, status: 'lost', error, endedAt: row.endedAt ?? time, updatedAt: time }));
      for (const row of rows) this.#statements.updateTask.run(row);
      return rows.map(readTask);
    });
  }

  // ---- workflow journals --------------------------------------------------------------------------

  createRun(input: NewWorkflowRun): WorkflowRun {
    const row = validateNewRun(input, this.#now(), this.#options.maxFieldBytes);
    return this.#write('create a workflow run', () => {
      this.#sessionRow(row.sessionId);
      if (this.#statements.getRun.get(row.runId)) throw new StoreRecordExistsError('workflow run', row.runId);
      this.#statements.insertRun.run(row);
      return readRun(row);
    });
  }

  getRun(runId: string): WorkflowRun | undefined {
    const key = validateName('runId', runId);
    return this.#read('read a workflow run', () => {
      const row = this.#statements.getRun.get(key);
      return row ? readRun(row) : undefined;
    });
  }

  listRuns(filter: RunFilter = {}): WorkflowRun[] {
    validateObject('filter', filter);
    const sessionId =
      filter.sessionId === undefined ? null : validateSessionKey('sessionId', filter.sessionId);
    const taskId = filter.taskId === undefined ? null : validateName('taskId', filter.taskId);
    const statuses = jsonList(
      filter.statuses === undefined ? undefined : validateRunStatuses(filter.statuses),
    );
    return this.#read('list workflow runs', () =>
      this.#statements.listRuns.all(sessionId, sessionId, taskId, taskId, statuses, statuses).map(readRun),
    );
  }

  updateRun(runId: string, patch: WorkflowRunPatch): WorkflowRun {
    const key = validateName('runId', runId);
    const normalized = validateRunPatch(patch, this.#options.maxFieldBytes);
    const time = this.#now();
    return this.#write('update a workflow run', () => {
      const next = applyRunPatch(this.#runRow(key), normalized, time);
      this.#statements.updateRun.run(next);
      return readRun(next);
    });
  }

  supersedeRun(runId: string, replacement: NewWorkflowRun): SupersedeResult {
    const key = validateName('runId', runId);
    const time = this.#now();
    const row = validateNewRun(replacement, time, this.#options.maxFieldBytes);
    return this.#write('supersede a workflow run', () => {
      const old = this.#runRow(key);
      this.#sessionRow(row.sessionId);
      if (this.#statements.getRun.get(row.runId)) throw new StoreRecordExistsError('workflow run', row.runId);
      const superseded = supersedeRunRow(old, row.runId, time);
      this.#statements.insertRun.run(row);
      this.#statements.updateRun.run(superseded);
      return { superseded: readRun(superseded), replacement: readRun(row) };
    });
  }

  recordStep(runId: string, step: NewWorkflowStep): RecordStepResult {
    const key = validateName('runId', runId);
    const normalized = validateNewStep(key, step, this.#options.maxFieldBytes);
    return this.#write('record a workflow step', () => {
      this.#runRow(key);
      const existing = this.#statements.getStep.get(key, normalized.name);
      if (existing?.state === 'done') return { step: readStep(existing), recorded: false };
      const row: StepRow = {
        ...normalized,
        seq: existing?.seq ?? this.#statements.lastStepSeq.get(key)!.last + 1,
      };
      if (existing) this.#statements.updateStep.run(row);
      else this.#statements.insertStep.run(row);
      return { step: readStep(row), recorded: true };
    });
  }

  getStep(runId: string, name: string): WorkflowStep | undefined {
    const key = validateName('runId', runId);
    const stepName = validateName('name', name);
    return this.#read('read a workflow step', () => {
      const row = this.#statements.getStep.get(key, stepName);
      return row ? readStep(row) : undefined;
    });
  }

  getSteps(runId: string): WorkflowStep[] {
    const key = validateName('runId', runId);
    return this.#read('list workflow steps', () => this.#statements.getSteps.all(key).map(readStep));
  }

  // ---- runtime commands ---------------------------------------------------------------------------

  submitCommand(input: NewRuntimeCommand): RuntimeCommand {
    const row = validateNewCommand(input, this.#now());
    return this.#write('submit a command', () => {
      this.#sessionRow(row.sessionId);
      const { lastInsertRowid } = this.#statements.insertCommand.run(row);
      return readCommand({ ...row, id: Number(lastInsertRowid) });
    });
  }

  getCommand(id: number): RuntimeCommand | undefined {
    const key = validateCommandId('id', id);
    return this.#read('read a command', () => {
      const row = this.#statements.getCommand.get(key);
      return row ? readCommand(row) : undefined;
    });
  }

  listPendingCommands(runtime: string, limit?: number): RuntimeCommand[] {
    const key = validateName('runtime', runtime);
    const count = validateCommandLimit(limit);
    return this.#read('list pending commands', () =>
      this.#statements.listPendingCommands.all(key, count).map(readCommand),
    );
  }

  answerCommand(id: number, answer: CommandAnswer): AnswerCommandResult {
    const key = validateCommandId('id', id);
    const normalized = validateCommandAnswer(answer);
    const time = this.#now();
    return this.#write('answer a command', () => {
      const row = this.#statements.getCommand.get(key);
      if (!row) throw new StoreRecordNotFoundError('command', key);
      const next = applyAnswer(row, normalized, time);
      if (next === undefined) return { command: readCommand(row), answered: false };
      this.#statements.answerCommand.run(next.state, next.reason, time, key);
      return { command: readCommand(next), answered: true };
    });
  }

  expireCommands(createdBefore: number): RuntimeCommand[] {
    const cutoff = validateCount('createdBefore', createdBefore);
    const time = this.#now();
    return this.#write('expire commands', () =>
      this.#statements.expireCommands
        .all(time, cutoff)
        .sort((a, b) => a.id - b.id)
        .map(readCommand),
    );
  }

  // ---- task id sequences --------------------------------------------------------------------------

  reserveTaskSequences(kind: string, after: number, count: number): TaskSequenceBlock {
    validateSequenceReservation(kind, after, count);
    // One immediate transaction: two processes reserving at once get different blocks.
    return this.#write('reserve task ids', () => {
      const base = Math.max(this.#statements.getTaskSequence.get(kind)?.last ?? 0, after);
      this.#statements.setTaskSequence.run(kind, base + count);
      return { first: base + 1, last: base + count };
    });
  }

  releaseTaskSequences(kind: string, block: TaskSequenceBlock, lastUsed: number): void {
    validateSequenceRelease(kind, block, lastUsed);
    this.#write('release task ids', () => {
      const next = releasedSequence(this.#statements.getTaskSequence.get(kind)?.last ?? 0, block, lastUsed);
      if (next !== undefined) this.#statements.setTaskSequence.run(kind, next);
    });
  }

  // ---- bounds -------------------------------------------------------------------------------------

  prune(options: PruneOptions = {}): PruneResult {
    const retention = resolvePruneOptions(options);
    const time = this.#now();
    return this.#write('prune the store', () => ({
      sessions: this.#statements.pruneClosedSessions.run(retention.keepClosedSessions).changes,
      ledgerEntries: this.#statements.pruneSettledLedger.run(time - retention.settledLedgerMaxAgeMs).changes,
      messages: this.#statements.pruneAbandonedMessages.run(time - retention.abandonedMessageMaxAgeMs)
        .changes,
      tasks: this.#statements.pruneFinishedTasks.run(time - retention.finishedRecordMaxAgeMs).changes,
      workflowRuns: this.#statements.pruneFinishedRuns.run(time - retention.finishedRecordMaxAgeMs).changes,
      commands: this.#statements.pruneCommands.run(time - retention.commandMaxAgeMs).changes,
    }));
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#database.close();
  }
}

/** Opens (creating and migrating as needed) the session store in `$ERRAND_HOME`, or where the options say. */
export function openSqliteSessionStore(options: SqliteSessionStoreOptions = {}): SqliteSessionStore {
  return SqliteSessionStore.open(options);
}
