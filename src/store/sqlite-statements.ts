/**
 * The SQL of the SQLite session store, prepared once per connection. Rows are selected straight into the
 * shared row shapes (`rows.ts`): snake_case columns aliased to camelCase fields.
 */
import type Database from 'better-sqlite3';
import type { CommandRow, LedgerRow, MessageRow, RunRow, SessionRow, StepRow, TaskRow } from './rows.js';

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
  updatedAt: true,
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

function updateAll<Row>(table: string, fields: Fields<Row>, keys: readonly string[]): string {
  const assignments = Object.keys(fields)
    .filter((field) => !keys.includes(field))
    .map((field) => `${column(field)} = @${field}`);
  const where = keys.map((key) => `${column(key)} = @${key}`).join(' AND ');
  return `UPDATE ${table} SET ${assignments.join(', ')} WHERE ${where}`;
}

/** Filters on an optional list: `?` is a JSON array, or NULL for "no filter". */
function inList(field: string): string {
  return `(? IS NULL OR ${column(field)} IN (SELECT value FROM json_each(?)))`;
}

const PRIORITY_ORDER = "CASE priority WHEN 'now' THEN 0 WHEN 'next' THEN 1 ELSE 2 END";

/** The part of a prepared statement the store uses (a named type, so declarations can refer to it). */
export interface PreparedStatement<Parameters extends unknown[], Row> {
  get(...parameters: Parameters): Row | undefined;
  all(...parameters: Parameters): Row[];
  run(...parameters: Parameters): Database.RunResult;
}

export function prepareStatements(database: Database.Database) {
  const sessions = select(SESSION_FIELDS);
  const messages = select(MESSAGE_FIELDS);
  const ledger = select(LEDGER_FIELDS);
  const tasks = select(TASK_FIELDS);
  const runs = select(RUN_FIELDS);
  const steps = select(STEP_FIELDS);
  const commands = select(COMMAND_FIELDS);
  const prepare = <Parameters extends unknown[], Row = unknown>(
    sql: string,
  ): PreparedStatement<Parameters, Row> => database.prepare<Parameters, Row>(sql);
  return {
    getSession: prepare<[string], SessionRow>(`SELECT ${sessions} FROM sessions WHERE id = ?`),
    listSessions: prepare<[string | null, string | null, string | null, string | null], SessionRow>(
      `SELECT ${sessions} FROM sessions WHERE (? IS NULL OR parent_id = ?) AND (? IS NULL OR state = ?)
       ORDER BY created_at, id`,
    ),
    insertSession: prepare<[SessionRow]>(insert('sessions', SESSION_FIELDS)),
    updateSession: prepare<[SessionRow]>(updateAll('sessions', SESSION_FIELDS, ['id'])),

    insertMessage: prepare<[MessageRow]>(insert('messages', MESSAGE_FIELDS)),
    listMessages: prepare<[string, number, number, number], MessageRow>(
      `SELECT ${messages} FROM messages WHERE session_id = ? AND seq > ? AND (? = 1 OR abandoned_at IS NULL)
       ORDER BY seq LIMIT ?`,
    ),
    // The newest page before a seq, newest first (the caller reverses it).
    listMessagesBefore: prepare<[string, number, number, number, number], MessageRow>(
      `SELECT ${messages} FROM messages
       WHERE session_id = ? AND seq > ? AND seq < ? AND (? = 1 OR abandoned_at IS NULL)
       ORDER BY seq DESC LIMIT ?`,
    ),
    abandonMessages: prepare<[number, string, number], MessageRow>(
      `UPDATE messages SET abandoned_at = ? WHERE session_id = ? AND seq > ? AND abandoned_at IS NULL
       RETURNING ${messages}`,
    ),

    getLedgerEntry: prepare<[number], LedgerRow>(`SELECT ${ledger} FROM input_ledger WHERE id = ?`),
    findLedgerEntry: prepare<[string, string], LedgerRow>(
      `SELECT ${ledger} FROM input_ledger WHERE session_id = ? AND idempotency_key = ?`,
    ),
    insertLedgerEntry: prepare<[Omit<LedgerRow, 'id'>]>(insert('input_ledger', LEDGER_FIELDS, ['id'])),
    listLedger: prepare<[string, string | null, string | null], LedgerRow>(
      `SELECT ${ledger} FROM input_ledger WHERE session_id = ? AND ${inList('state')} ORDER BY id`,
    ),
    listQueued: prepare<[string], LedgerRow>(
      `SELECT ${ledger} FROM input_ledger WHERE session_id = ? AND state = 'queued' ORDER BY ${PRIORITY_ORDER}, id`,
    ),
    discardLedgerEntry: prepare<[string, number, number]>(
      `UPDATE input_ledger SET state = 'discarded', reason = ?, updated_at = ? WHERE id = ? AND state = 'queued'`,
    ),
    deliverLedgerEntry: prepare<[number, number, number]>(
      `UPDATE input_ledger SET state = 'delivered', delivered_in_message_seq = ?, updated_at = ?
       WHERE id = ? AND state = 'queued'`,
    ),

    upsertTask: prepare<[TaskRow]>(
      `${insert('tasks', TASK_FIELDS)} ON CONFLICT (scope, id) DO UPDATE SET ${Object.keys(TASK_FIELDS)
        .filter((field) => field !== 'scope' && field !== 'id')
        .map((field) => `${column(field)} = excluded.${column(field)}`)
        .join(', ')}`,
    ),
    getTask: prepare<[string, string], TaskRow>(`SELECT ${tasks} FROM tasks WHERE scope = ? AND id = ?`),
    listTasks: prepare<[number, string, string | null, string | null, number], TaskRow>(
      `SELECT ${tasks} FROM tasks WHERE (? = 0 OR scope = ?) AND ${inList('status')} AND updated_at >= ?
       ORDER BY started_at, scope, id`,
    ),
    updateTask: prepare<[TaskRow]>(updateAll('tasks', TASK_FIELDS, ['scope', 'id'])),

    getRun: prepare<[string], RunRow>(`SELECT ${runs} FROM workflow_runs WHERE run_id = ?`),
    listRuns: prepare<
      [string | null, string | null, string | null, string | null, string | null, string | null],
      RunRow
    >(
      `SELECT ${runs} FROM workflow_runs WHERE (? IS NULL OR session_id = ?) AND (? IS NULL OR task_id = ?)
       AND ${inList('status')} ORDER BY created_at, run_id`,
    ),
    insertRun: prepare<[RunRow]>(insert('workflow_runs', RUN_FIELDS)),
    updateRun: prepare<[RunRow]>(updateAll('workflow_runs', RUN_FIELDS, ['runId'])),

    getStep: prepare<[string, string], StepRow>(
      `SELECT ${steps} FROM workflow_steps WHERE run_id = ? AND name = ?`,
    ),
    getSteps: prepare<[string], StepRow>(`SELECT ${steps} FROM workflow_steps WHERE run_id = ? ORDER BY seq`),
    lastStepSeq: prepare<[string], { last: number }>(
      'SELECT coalesce(max(seq), 0) AS last FROM workflow_steps WHERE run_id = ?',
    ),
    insertStep: prepare<[StepRow]>(insert('workflow_steps', STEP_FIELDS)),
    updateStep: prepare<[StepRow]>(updateAll('workflow_steps', STEP_FIELDS, ['runId', 'name'])),

    insertCommand: prepare<[Omit<CommandRow, 'id'>]>(insert('commands', COMMAND_FIELDS, ['id'])),
    getCommand: prepare<[number], CommandRow>(`SELECT ${commands} FROM commands WHERE id = ?`),
    // Served by the partial index commands_pending: the holder's poll reads only its pending rows.
    listPendingCommands: prepare<[string, number], CommandRow>(
      `SELECT ${commands} FROM commands WHERE runtime = ? AND state = 'pending' ORDER BY id LIMIT ?`,
    ),
    answerCommand: prepare<[string, string | null, number, number]>(
      `UPDATE commands SET state = ?, reason = ?, answered_at = ? WHERE id = ? AND state = 'pending'`,
    ),
    expireCommands: prepare<[number, number], CommandRow>(
      `UPDATE commands SET state = 'expired', answered_at = ? WHERE state = 'pending' AND created_at < ?
       RETURNING ${commands}`,
    ),
    pruneCommands: prepare<[number]>('DELETE FROM commands WHERE coalesce(answered_at, created_at) < ?'),
    getTaskSequence: prepare<[string], { last: number }>('SELECT last FROM task_sequences WHERE kind = ?'),
    setTaskSequence: prepare<[string, number]>(
      'INSERT INTO task_sequences (kind, last) VALUES (?, ?) ON CONFLICT (kind) DO UPDATE SET last = excluded.last',
    ),

    pruneClosedSessions: prepare<[number]>(
      `DELETE FROM sessions WHERE state = 'closed' AND id NOT IN
         (SELECT id FROM sessions WHERE state = 'closed' ORDER BY updated_at DESC, id DESC LIMIT ?)`,
    ),
    pruneSettledLedger: prepare<[number]>(
      "DELETE FROM input_ledger WHERE state <> 'queued' AND updated_at < ?",
    ),
    pruneAbandonedMessages: prepare<[number]>(
      `DELETE FROM messages WHERE abandoned_at IS NOT NULL AND abandoned_at < ? AND NOT EXISTS
         (SELECT 1 FROM input_ledger AS entry
          WHERE entry.session_id = messages.session_id AND entry.delivered_in_message_seq = messages.seq)`,
    ),
    pruneFinishedTasks: prepare<[number]>(
      "DELETE FROM tasks WHERE status NOT IN ('running', 'stopping') AND updated_at < ?",
    ),
    pruneFinishedRuns: prepare<[number]>(
      "DELETE FROM workflow_runs WHERE status <> 'running' AND updated_at < ?",
    ),
  };
}

export type Statements = ReturnType<typeof prepareStatements>;
