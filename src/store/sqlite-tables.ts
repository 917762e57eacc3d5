/**
 * The SQLite backend of the session store: the table port (`store-tables.ts`) as SQL prepared once per
 * connection, and immediate transactions. Rows are selected straight into the shared row shapes
 * (`rows.ts`): snake_case columns aliased to camelCase fields. Records of a session go with it through
 * the schema's `ON DELETE CASCADE`.
 */
import type Database from 'better-sqlite3';
import { TASK_STATUSES } from '../tasks/index.js';
import { StoreBusyError, StoreUnavailableError, type StoreUnavailableReason } from './errors.js';
import { LEDGER_ENTRY_STATES } from './records.js';
import type {
  CommandRow,
  LedgerRow,
  MessageRow,
  RunRow,
  ScheduleRow,
  SessionRow,
  StepRow,
  TaskRow,
} from './rows.js';
import type { StoreCapabilities } from './session-store.js';
import { createCommitPolicy } from './sqlite-commits.js';
import type { StoreBackend, StoreTables } from './store-tables.js';

type Fields<Row> = Record<keyof Row, true>;

const SESSION_FIELDS: Fields<SessionRow> = {
  id: true,
  schemaVersion: true,
  parentId: true,
  cwd: true,
  title: true,
  branchGeneration: true,
  state: true,
  lastSeq: true,
  metadata: true,
  createdAt: true,
  updatedAt: true,
  holder: true,
};
const MESSAGE_FIELDS: Fields<MessageRow> = {
  sessionId: true,
  seq: true,
  schemaVersion: true,
  role: true,
  content: true,
  visibility: true,
  source: true,
  branchGeneration: true,
  createdAt: true,
  abandonedAt: true,
};
const LEDGER_FIELDS: Fields<LedgerRow> = {
  id: true,
  sessionId: true,
  schemaVersion: true,
  kind: true,
  idempotencyKey: true,
  state: true,
  reason: true,
  priority: true,
  lane: true,
  branchGeneration: true,
  taskId: true,
  text: true,
  createdAt: true,
  updatedAt: true,
  deliveredInMessageSeq: true,
};
const TASK_FIELDS: Fields<TaskRow> = {
  scope: true,
  id: true,
  sessionId: true,
  schemaVersion: true,
  kind: true,
  label: true,
  status: true,
  detail: true,
  isBackgrounded: true,
  branchGeneration: true,
  stopInitiator: true,
  startedAt: true,
  endedAt: true,
  reported: true,
  error: true,
  resultText: true,
  outputFile: true,
  traceparent: true,
  updatedAt: true,
  pid: true,
  processStartTime: true,
  bootId: true,
  pgid: true,
  processTag: true,
  statusFile: true,
  durable: true,
  readOffset: true,
};
const RUN_FIELDS: Fields<RunRow> = {
  runId: true,
  sessionId: true,
  schemaVersion: true,
  taskId: true,
  scriptPath: true,
  scriptHash: true,
  status: true,
  supersededBy: true,
  stopInitiator: true,
  input: true,
  result: true,
  error: true,
  createdAt: true,
  updatedAt: true,
};
const STEP_FIELDS: Fields<StepRow> = {
  runId: true,
  name: true,
  seq: true,
  schemaVersion: true,
  state: true,
  result: true,
  error: true,
  startedAt: true,
  endedAt: true,
};

const COMMAND_FIELDS: Fields<CommandRow> = {
  id: true,
  sessionId: true,
  schemaVersion: true,
  runtime: true,
  type: true,
  workId: true,
  state: true,
  reason: true,
  createdAt: true,
  answeredAt: true,
};

const SCHEDULE_FIELDS: Fields<ScheduleRow> = {
  sessionId: true,
  id: true,
  schemaVersion: true,
  definition: true,
  fired: true,
  lastDueAt: true,
  nextAt: true,
  firing: true,
  note: true,
  createdAt: true,
  updatedAt: true,
};

function column(field: string): string {
  return field.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}

function select<Row>(fields: Fields<Row>): string {
  return Object.keys(fields)
    .map((field) => `${column(field)} AS ${field}`)
    .join(', ');
}

function insert<Row>(table: string, fields: Fields<Row>, omit: readonly string[] = []): string {
  const names = Object.keys(fields).filter((field) => !omit.includes(field));
  return `INSERT INTO ${table} (${names.map(column).join(', ')}) VALUES (${names.map((name) => `@${name}`).join(', ')})`;
}

/**
 * Inserts the row, or replaces every other column of the row with its key (an update: no cascade);
 * `assign` names a column's own expression instead of its new value.
 */
function upsert<Row>(
  table: string,
  fields: Fields<Row>,
  keys: readonly (keyof Row & string)[],
  assign: Partial<Record<keyof Row & string, string>> = {},
): string {
  const assignments = Object.keys(fields)
    .filter((field) => !keys.includes(field as keyof Row & string))
    .map(
      (field) => `${column(field)} = ${assign[field as keyof Row & string] ?? `excluded.${column(field)}`}`,
    );
  return `${insert(table, fields)} ON CONFLICT (${keys.map(column).join(', ')}) DO UPDATE SET ${assignments.join(', ')}`;
}

/** Column sets a table's narrow `put` keeps a statement for; past them it writes the whole row. */
const MAX_NARROW_STATEMENTS = 32;

/**
 * A table's `put(row, previous)`. Given the row as stored (read in the same write), it updates only the
 * columns whose values differ, and nothing when none does: an index over columns it leaves alone is not
 * rewritten, so the log gets fewer pages per commit. Without one, or when a key differs, the whole row is
 * upserted.
 */
function putter<Row extends object>(
  prepare: Prepare,
  table: string,
  fields: Fields<Row>,
  keys: readonly (keyof Row & string)[],
): (row: Row, previous?: Row) => void {
  const whole = prepare<[Row]>(upsert(table, fields, keys));
  const names = Object.keys(fields) as (keyof Row & string)[];
  const where = keys.map((key) => `${column(key)} = @${key}`).join(' AND ');
  const narrow = new Map<string, PreparedStatement<[Row], unknown>>();
  const statementFor = (changed: readonly string[]) => {
    const signature = changed.join(',');
    let statement = narrow.get(signature);
    if (statement === undefined && narrow.size < MAX_NARROW_STATEMENTS) {
      statement = prepare<[Row]>(
        `UPDATE ${table} SET ${changed.map((name) => `${column(name)} = @${name}`).join(', ')} WHERE ${where}`,
      );
      narrow.set(signature, statement);
    }
    return statement;
  };
  return (row, previous) => {
    if (previous !== undefined && keys.every((key) => row[key] === previous[key])) {
      const changed = names.filter((name) => row[name] !== previous[name]);
      if (changed.length === 0) return;
      // No row changed: it was not stored as the caller read it, so it is written whole.
      if (statementFor(changed)?.run(row).changes === 1) return;
    }
    whole.run(row);
  };
}

/** Filters on an optional list: `?` is a JSON array, or NULL for "no filter". */
function inList(field: string): string {
  return `(? IS NULL OR ${column(field)} IN (SELECT value FROM json_each(?)))`;
}

/**
 * `field` is one of a JSON list: no "or any" branch, so the planner can use an index on `field` (the
 * caller passes every value for "any").
 */
function oneOf(field: string): string {
  return `${column(field)} IN (SELECT value FROM json_each(?))`;
}

function jsonList(values: readonly string[] | undefined): string | null {
  return values === undefined ? null : JSON.stringify(values);
}

/** The part of a prepared statement the tables use (a named type, so declarations can refer to it). */
interface PreparedStatement<Parameters extends unknown[], Row> {
  get(...parameters: Parameters): Row | undefined;
  all(...parameters: Parameters): Row[];
  run(...parameters: Parameters): Database.RunResult;
}

type Prepare = <Parameters extends unknown[], Row = unknown>(
  sql: string,
) => PreparedStatement<Parameters, Row>;

function sessionTable(prepare: Prepare): StoreTables['sessions'] {
  const get = prepare<[string], SessionRow>(`SELECT ${select(SESSION_FIELDS)} FROM sessions WHERE id = ?`);
  const exists = prepare<[string], { found: number }>('SELECT 1 AS found FROM sessions WHERE id = ?');
  const put = putter(prepare, 'sessions', SESSION_FIELDS, ['id']);
  const list = prepare<[string | null, string | null, string | null, string | null], SessionRow>(
    `SELECT ${select(SESSION_FIELDS)} FROM sessions WHERE (? IS NULL OR parent_id = ?) AND (? IS NULL OR state = ?)`,
  );
  const remove = prepare<[string]>('DELETE FROM sessions WHERE id = ?');
  return {
    get: (id) => get.get(id),
    exists: (id) => exists.get(id) !== undefined,
    put,
    select: (parentId, state) => list.all(parentId, parentId, state, state),
    delete: (id) => void remove.run(id),
  };
}

function messageTable(prepare: Prepare): StoreTables['messages'] {
  const columns = select(MESSAGE_FIELDS);
  const put = putter(prepare, 'messages', MESSAGE_FIELDS, ['sessionId', 'seq']);
  const list = prepare<[string, number, number, number], MessageRow>(
    `SELECT ${columns} FROM messages WHERE session_id = ? AND seq > ? AND (? = 1 OR abandoned_at IS NULL)
     ORDER BY seq LIMIT ?`,
  );
  // The newest page before a seq, newest first (reversed below).
  const listBefore = prepare<[string, number, number, number, number], MessageRow>(
    `SELECT ${columns} FROM messages
     WHERE session_id = ? AND seq > ? AND seq < ? AND (? = 1 OR abandoned_at IS NULL)
     ORDER BY seq DESC LIMIT ?`,
  );
  // Served by the partial index messages_abandoned.
  const abandoned = prepare<[number], MessageRow>(
    `SELECT ${columns} FROM messages WHERE abandoned_at IS NOT NULL AND abandoned_at < ?`,
  );
  const remove = prepare<[string, number]>('DELETE FROM messages WHERE session_id = ? AND seq = ?');
  return {
    put,
    select: (sessionId, afterSeq, includeAbandoned, limit, beforeSeq) =>
      beforeSeq === undefined
        ? list.all(sessionId, afterSeq, includeAbandoned ? 1 : 0, limit ?? -1)
        : listBefore.all(sessionId, afterSeq, beforeSeq, includeAbandoned ? 1 : 0, limit ?? -1).reverse(),
    selectAbandonedBefore: (cutoff) => abandoned.all(cutoff),
    delete: (sessionId, seq) => void remove.run(sessionId, seq),
  };
}

function ledgerTable(prepare: Prepare): StoreTables['ledger'] {
  const columns = select(LEDGER_FIELDS);
  const get = prepare<[number], LedgerRow>(`SELECT ${columns} FROM input_ledger WHERE id = ?`);
  const find = prepare<[string, string], LedgerRow>(
    `SELECT ${columns} FROM input_ledger WHERE session_id = ? AND idempotency_key = ?`,
  );
  const add = prepare<[Omit<LedgerRow, 'id'>]>(insert('input_ledger', LEDGER_FIELDS, ['id']));
  const put = putter(prepare, 'input_ledger', LEDGER_FIELDS, ['id']);
  const list = prepare<[string, string, number], LedgerRow>(
    `SELECT ${columns} FROM input_ledger WHERE session_id = ? AND ${oneOf('state')} AND id > ? ORDER BY id`,
  );
  const allStates = JSON.stringify(LEDGER_ENTRY_STATES);
  const old = prepare<[number], LedgerRow>(`SELECT ${columns} FROM input_ledger WHERE updated_at < ?`);
  const referenced = prepare<[string, number], { found: number }>(
    'SELECT 1 AS found FROM input_ledger WHERE session_id = ? AND delivered_in_message_seq = ? LIMIT 1',
  );
  const remove = prepare<[number]>('DELETE FROM input_ledger WHERE id = ?');
  return {
    get: (id) => get.get(id),
    findByKey: (sessionId, idempotencyKey) => find.get(sessionId, idempotencyKey),
    insert: (row) => Number(add.run(row).lastInsertRowid),
    put,
    select(sessionId, states, afterId = 0) {
      return list.all(sessionId, states === undefined ? allStates : JSON.stringify(states), afterId);
    },
    selectUpdatedBefore: (cutoff) => old.all(cutoff),
    referencesMessage: (sessionId, seq) => referenced.get(sessionId, seq) !== undefined,
    delete: (id) => void remove.run(id),
  };
}

function taskTable(prepare: Prepare): StoreTables['tasks'] {
  const columns = select(TASK_FIELDS);
  const get = prepare<[string, string], TaskRow>(`SELECT ${columns} FROM tasks WHERE scope = ? AND id = ?`);
  const put = putter(prepare, 'tasks', TASK_FIELDS, ['scope', 'id']);
  // No read before the write: the stored read cursor is kept when higher, and returned.
  const insertOrReplace = prepare<[TaskRow], { readOffset: number }>(
    `${upsert('tasks', TASK_FIELDS, ['scope', 'id'], {
      readOffset: 'max(tasks.read_offset, excluded.read_offset)',
    })} RETURNING read_offset AS readOffset`,
  );
  // A later write of the same attempt (its process facts, its end) changes no column of tasks_by_session
  // or tasks_untold: an update that leaves those columns out of its SET leaves those indexes untouched,
  // two pages fewer in the log per commit. The row must still match them; else the caller saves it whole.
  const unchanged: readonly (keyof TaskRow & string)[] = [
    'scope',
    'id',
    'sessionId',
    'startedAt',
    'reported',
  ];
  const update = prepare<[TaskRow], { readOffset: number }>(
    `UPDATE tasks SET ${Object.keys(TASK_FIELDS)
      .filter((field) => !unchanged.includes(field as keyof TaskRow & string))
      .map((field) =>
        field === 'readOffset'
          ? 'read_offset = max(read_offset, @readOffset)'
          : `${column(field)} = @${field}`,
      )
      .join(', ')}
     WHERE scope = @scope AND id = @id AND session_id IS @sessionId AND started_at = @startedAt
       AND reported = @reported
     RETURNING read_offset AS readOffset`,
  );
  // One statement per shape, each written so the planner can use an index: a session's records by the
  // primary key, untold ones by the partial index `tasks_untold`, live ones and recent writes by
  // `tasks_by_status` (status, updated_at): one range per status, the caller passing every status for "any".
  type ListStatement = PreparedStatement<[string, number, string?], TaskRow>;
  const allStatuses = JSON.stringify(TASK_STATUSES);
  const lists = new Map<string, ListStatement>();
  const listFor = (scoped: boolean, reported: boolean | undefined, liveOnly: boolean): ListStatement => {
    const key = `${scoped}/${reported}/${liveOnly}`;
    let statement = lists.get(key);
    if (statement === undefined) {
      // Without statistics the planner prefers the primary key; a session's untold records are few.
      const untold = scoped && reported === false;
      // Live records are few in any store: by status, not by the session's whole history; and across
      // sessions only the index finds recent writes without reading every record.
      const index = untold
        ? ' INDEXED BY tasks_untold'
        : !scoped || liveOnly
          ? ' INDEXED BY tasks_by_status'
          : '';
      const where = [
        oneOf('status'),
        'updated_at >= ?',
        ...(reported === undefined ? [] : [`reported = ${reported ? 1 : 0}`]),
        ...(scoped ? ['scope = ?'] : []),
      ];
      statement = prepare<[string, number, string?], TaskRow>(
        `SELECT ${columns} FROM tasks${index} WHERE ${where.join(' AND ')}`,
      );
      lists.set(key, statement);
    }
    return statement;
  };
  const old = prepare<[string, number], TaskRow>(
    `SELECT ${columns} FROM tasks INDEXED BY tasks_by_status WHERE ${oneOf('status')} AND updated_at < ?`,
  );
  const remove = prepare<[string, string]>('DELETE FROM tasks WHERE scope = ? AND id = ?');
  // Counted by the trigger `tasks_deleted` (migration 12), cascades from a deleted session included.
  const deletions = prepare<[], { value: number }>(
    "SELECT value FROM store_counters WHERE name = 'task_deletions'",
  );
  return {
    get: (scope, id) => get.get(scope, id),
    put,
    save: (row) => insertOrReplace.get(row)!.readOffset,
    update: (row) => update.get(row)?.readOffset,
    select(scope, statuses, updatedSince, reported) {
      const statusList = statuses === undefined ? allStatuses : JSON.stringify(statuses);
      const liveOnly = statuses?.every((status) => status === 'running' || status === 'stopping') === true;
      const statement = listFor(scope !== undefined, reported, liveOnly);
      return scope === undefined
        ? statement.all(statusList, updatedSince)
        : statement.all(statusList, updatedSince, scope);
    },
    selectUpdatedBefore: (cutoff) => old.all(allStatuses, cutoff),
    delete: (scope, id) => void remove.run(scope, id),
    deletions: () => deletions.get()?.value ?? 0,
  };
}

function runTable(prepare: Prepare): StoreTables['runs'] {
  const columns = select(RUN_FIELDS);
  const get = prepare<[string], RunRow>(`SELECT ${columns} FROM workflow_runs WHERE run_id = ?`);
  const put = putter(prepare, 'workflow_runs', RUN_FIELDS, ['runId']);
  const list = prepare<
    [string | null, string | null, string | null, string | null, string | null, string | null],
    RunRow
  >(
    `SELECT ${columns} FROM workflow_runs WHERE (? IS NULL OR session_id = ?) AND (? IS NULL OR task_id = ?)
     AND ${inList('status')}`,
  );
  const old = prepare<[number], RunRow>(`SELECT ${columns} FROM workflow_runs WHERE updated_at < ?`);
  const remove = prepare<[string]>('DELETE FROM workflow_runs WHERE run_id = ?');
  return {
    get: (runId) => get.get(runId),
    put,
    select(sessionId, taskId, statuses) {
      const statusList = jsonList(statuses);
      return list.all(sessionId, sessionId, taskId, taskId, statusList, statusList);
    },
    selectUpdatedBefore: (cutoff) => old.all(cutoff),
    delete: (runId) => void remove.run(runId),
  };
}

function stepTable(prepare: Prepare): StoreTables['steps'] {
  const columns = select(STEP_FIELDS);
  const get = prepare<[string, string], StepRow>(
    `SELECT ${columns} FROM workflow_steps WHERE run_id = ? AND name = ?`,
  );
  const put = prepare<[StepRow]>(upsert('workflow_steps', STEP_FIELDS, ['runId', 'name']));
  const list = prepare<[string], StepRow>(
    `SELECT ${columns} FROM workflow_steps WHERE run_id = ? ORDER BY seq`,
  );
  const last = prepare<[string], { last: number }>(
    'SELECT coalesce(max(seq), 0) AS last FROM workflow_steps WHERE run_id = ?',
  );
  return {
    get: (runId, name) => get.get(runId, name),
    put: (row) => void put.run(row),
    select: (runId) => list.all(runId),
    lastSeq: (runId) => last.get(runId)?.last ?? 0,
  };
}

function commandTable(prepare: Prepare): StoreTables['commands'] {
  const columns = select(COMMAND_FIELDS);
  const get = prepare<[number], CommandRow>(`SELECT ${columns} FROM commands WHERE id = ?`);
  const add = prepare<[Omit<CommandRow, 'id'>]>(insert('commands', COMMAND_FIELDS, ['id']));
  const put = putter(prepare, 'commands', COMMAND_FIELDS, ['id']);
  // Served by the partial index commands_pending: the holder's poll reads only its pending rows.
  const pending = prepare<[string, number], CommandRow>(
    `SELECT ${columns} FROM commands WHERE runtime = ? AND state = 'pending' ORDER BY id LIMIT ?`,
  );
  const stale = prepare<[number], CommandRow>(
    `SELECT ${columns} FROM commands WHERE state = 'pending' AND created_at < ? ORDER BY id`,
  );
  const settled = prepare<[number], CommandRow>(
    `SELECT ${columns} FROM commands WHERE coalesce(answered_at, created_at) < ?`,
  );
  const remove = prepare<[number]>('DELETE FROM commands WHERE id = ?');
  return {
    get: (id) => get.get(id),
    insert: (row) => Number(add.run(row).lastInsertRowid),
    put,
    selectPending: (runtime, limit) => pending.all(runtime, limit),
    selectPendingBefore: (cutoff) => stale.all(cutoff),
    selectSettledBefore: (cutoff) => settled.all(cutoff),
    delete: (id) => void remove.run(id),
  };
}

function scheduleTable(prepare: Prepare): StoreTables['schedules'] {
  const columns = select(SCHEDULE_FIELDS);
  const get = prepare<[string, string], ScheduleRow>(
    `SELECT ${columns} FROM schedules WHERE session_id = ? AND id = ?`,
  );
  const put = putter(prepare, 'schedules', SCHEDULE_FIELDS, ['sessionId', 'id']);
  const ofSession = prepare<[string], ScheduleRow>(`SELECT ${columns} FROM schedules WHERE session_id = ?`);
  const all = prepare<[], ScheduleRow>(`SELECT ${columns} FROM schedules`);
  const remove = prepare<[string, string]>('DELETE FROM schedules WHERE session_id = ? AND id = ?');
  return {
    get: (sessionId, id) => get.get(sessionId, id),
    put,
    select: (sessionId) => (sessionId === undefined ? all.all() : ofSession.all(sessionId)),
    delete: (sessionId, id) => void remove.run(sessionId, id),
  };
}

function sequenceTable(prepare: Prepare): StoreTables['sequences'] {
  const get = prepare<[string], { last: number }>('SELECT last FROM task_sequences WHERE kind = ?');
  const set = prepare<[string, number]>(
    'INSERT INTO task_sequences (kind, last) VALUES (?, ?) ON CONFLICT (kind) DO UPDATE SET last = excluded.last',
  );
  const raise = prepare<[string, number]>(
    `INSERT INTO task_sequences (kind, last) VALUES (?, ?)
     ON CONFLICT (kind) DO UPDATE SET last = excluded.last WHERE excluded.last > task_sequences.last`,
  );
  return {
    get: (kind) => get.get(kind)?.last ?? 0,
    set: (kind, last) => void set.run(kind, last),
    raise: (kind, last) => void raise.run(kind, last),
  };
}

/** How a backend's commits are synced and its log checkpointed (`createCommitPolicy`). */
export interface SqliteBackendOptions {
  readonly busyTimeoutMs: number;
  readonly capabilities: StoreCapabilities;
  /** The database file (its log is beside it). */
  readonly file: string;
  readonly synchronous: 'full' | 'normal';
  /** Commits between two checkpoints, run beside the event loop; 0 leaves them to SQLite. */
  readonly checkpointEveryCommits: number;
  /** When deferred commits are synced in the background (absent: never by themselves); see `CommitPolicyOptions`. */
  readonly syncDeferredEveryCommits?: number;
  readonly syncDeferredWithinMs?: number;
  /** See `CommitPolicyOptions`. */
  readonly syncLog?: (fd: number) => void;
  readonly checkpointThread?: boolean;
  readonly onCheckpoint?: (where: 'thread' | 'inline') => void;
  readonly checkpointFinishFrames?: number;
  readonly syncLogAsync?: (fd: number, done: (error: Error | null) => void) => void;
}

/**
 * A store backend on an open, migrated database. Every write is one immediate transaction (the write lock
 * is taken first, so a guard read inside it cannot be invalidated by another connection); a write nested in
 * another becomes a savepoint of it. When commits are synced and the log checkpointed: `createCommitPolicy`.
 */
export function createSqliteBackend(
  database: Database.Database,
  options: SqliteBackendOptions,
): StoreBackend {
  const prepare: Prepare = <Parameters extends unknown[], Row>(sql: string) =>
    database.prepare<Parameters, Row>(sql);
  const commits = createCommitPolicy(database, options);
  const { busyTimeoutMs } = options;
  return {
    tables: {
      sessions: sessionTable(prepare),
      messages: messageTable(prepare),
      ledger: ledgerTable(prepare),
      tasks: taskTable(prepare),
      runs: runTable(prepare),
      steps: stepTable(prepare),
      commands: commandTable(prepare),
      sequences: sequenceTable(prepare),
      schedules: scheduleTable(prepare),
    },
    capabilities: options.capabilities,
    transaction: (body, durability) => commits.transaction(body, durability),
    whenDurable: () => commits.whenDurable(),
    describeFailure(operation, error) {
      const code = (error as { code?: unknown } | null)?.code;
      if (typeof code !== 'string') return error;
      if (code.startsWith('SQLITE_BUSY')) return new StoreBusyError(operation, busyTimeoutMs, error);
      const reason = unavailableReason(code);
      return reason === undefined ? error : new StoreUnavailableError(operation, reason, code, error);
    },
    close: () => {
      commits.close();
      database.close();
    },
  };
}

/** The file system's refusals, by SQLite's extended result code (`SQLITE_IOERR_WRITE` is an I/O error). */
function unavailableReason(code: string): StoreUnavailableReason | undefined {
  if (code === 'SQLITE_FULL' || code === 'SQLITE_IOERR_SHMSIZE') return 'disk_full';
  if (code.startsWith('SQLITE_READONLY')) return 'read_only';
  if (code.startsWith('SQLITE_IOERR')) return 'io_error';
  if (code.startsWith('SQLITE_CANTOPEN')) return 'cannot_open';
  return undefined;
}
