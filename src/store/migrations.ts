/**
 * The SQLite schema as a forward-only list of migrations, and the step that brings a database up to date.
 * A migration is never edited once released; a change to the schema is a new entry at the end.
 */
import type Database from 'better-sqlite3';
import { StoreSchemaMismatchError, StoreSchemaTooNewError } from './errors.js';

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

export const MIGRATIONS: readonly Migration[] = Object.freeze([
  {
    version: 1,
    name: 'sessions, messages and the input ledger',
    sql: `
      CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        schema_version INTEGER NOT NULL,
        parent_id TEXT,
        cwd TEXT NOT NULL,
        title TEXT,
        branch_generation INTEGER NOT NULL CHECK (branch_generation >= 0),
        state TEXT NOT NULL CHECK (state IN ('active', 'closed')),
        last_seq INTEGER NOT NULL CHECK (last_seq >= 0),
        metadata TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX sessions_by_parent ON sessions (parent_id);
      CREATE INDEX sessions_by_state ON sessions (state, updated_at);

      CREATE TABLE messages (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL CHECK (seq > 0),
        schema_version INTEGER NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
        content TEXT NOT NULL,
        visibility TEXT NOT NULL CHECK (visibility IN ('all', 'model-only')),
        source TEXT NOT NULL,
        branch_generation INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        abandoned_at INTEGER,
        PRIMARY KEY (session_id, seq)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX messages_abandoned ON messages (abandoned_at) WHERE abandoned_at IS NOT NULL;

      CREATE TABLE input_ledger (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        schema_version INTEGER NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('notification', 'user_input')),
        idempotency_key TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('queued', 'delivered', 'discarded')),
        reason TEXT,
        priority TEXT NOT NULL CHECK (priority IN ('now', 'next', 'later')),
        lane TEXT,
        branch_generation INTEGER NOT NULL,
        task_id TEXT,
        text TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        delivered_in_message_seq INTEGER,
        UNIQUE (session_id, idempotency_key),
        FOREIGN KEY (session_id, delivered_in_message_seq) REFERENCES messages (session_id, seq),
        CHECK ((state = 'delivered') = (delivered_in_message_seq IS NOT NULL)),
        CHECK ((state = 'discarded') = (reason IS NOT NULL))
      ) STRICT;
      CREATE INDEX input_ledger_by_state ON input_ledger (session_id, state);
      CREATE INDEX input_ledger_settled ON input_ledger (state, updated_at);
      CREATE INDEX input_ledger_by_message ON input_ledger (session_id, delivered_in_message_seq);

      -- Delivered and discarded are final, whatever code writes to the file.
      CREATE TRIGGER input_ledger_final_states
      BEFORE UPDATE OF state ON input_ledger
      WHEN OLD.state <> 'queued' AND NEW.state IS NOT OLD.state
      BEGIN
        SELECT RAISE(ABORT, 'input_ledger: a delivered or discarded entry never changes state');
      END;
    `,
  },
  {
    version: 2,
    name: 'task records',
    sql: `
      CREATE TABLE tasks (
        scope TEXT NOT NULL,
        id TEXT NOT NULL,
        session_id TEXT REFERENCES sessions (id) ON DELETE CASCADE,
        schema_version INTEGER NOT NULL,
        kind TEXT NOT NULL,
        label TEXT NOT NULL,
        status TEXT NOT NULL
          CHECK (status IN ('running', 'stopping', 'completed', 'killed', 'failed', 'lost')),
        detail TEXT NOT NULL,
        is_backgrounded INTEGER NOT NULL CHECK (is_backgrounded IN (0, 1)),
        branch_generation INTEGER NOT NULL,
        stop_initiator TEXT CHECK (stop_initiator IN ('user', 'model', 'system')),
        started_at INTEGER NOT NULL,
        ended_at INTEGER,
        reported INTEGER NOT NULL CHECK (reported IN (0, 1)),
        error TEXT,
        result_text TEXT,
        output_file TEXT,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (scope, id),
        CHECK (scope = coalesce(session_id, ''))
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX tasks_by_session ON tasks (session_id, started_at);
      CREATE INDEX tasks_by_status ON tasks (status, updated_at);
    `,
  },
  {
    version: 3,
    name: 'workflow journals',
    sql: `
      CREATE TABLE workflow_runs (
        run_id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        schema_version INTEGER NOT NULL,
        task_id TEXT NOT NULL,
        script_path TEXT NOT NULL,
        script_hash TEXT NOT NULL,
        status TEXT NOT NULL
          CHECK (status IN ('running', 'completed', 'failed', 'killed', 'superseded')),
        superseded_by TEXT,
        stop_initiator TEXT CHECK (stop_initiator IN ('user', 'model', 'system')),
        input TEXT NOT NULL,
        result TEXT,
        error TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        CHECK ((status = 'superseded') = (superseded_by IS NOT NULL))
      ) STRICT;
      CREATE INDEX workflow_runs_by_session ON workflow_runs (session_id, created_at);
      CREATE INDEX workflow_runs_by_status ON workflow_runs (status, updated_at);

      CREATE TABLE workflow_steps (
        run_id TEXT NOT NULL REFERENCES workflow_runs (run_id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        seq INTEGER NOT NULL CHECK (seq > 0),
        schema_version INTEGER NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('done', 'failed')),
        result TEXT,
        error TEXT,
        started_at INTEGER NOT NULL,
        ended_at INTEGER NOT NULL,
        PRIMARY KEY (run_id, name),
        UNIQUE (run_id, seq)
      ) STRICT, WITHOUT ROWID;
    `,
  },
  {
    version: 4,
    name: 'session holders',
    sql: `
      ALTER TABLE sessions ADD COLUMN holder TEXT;
    `,
  },
  {
    version: 5,
    name: 'runtime commands',
    sql: `
      CREATE TABLE commands (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        schema_version INTEGER NOT NULL,
        runtime TEXT NOT NULL,
        type TEXT NOT NULL CHECK (type IN ('cancel_background_work')),
        work_id TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('pending', 'acknowledged', 'rejected', 'expired')),
        reason TEXT,
        created_at INTEGER NOT NULL,
        answered_at INTEGER,
        CHECK ((state = 'pending') = (answered_at IS NULL)),
        CHECK ((state = 'rejected') = (reason IS NOT NULL))
      ) STRICT;
      -- The holder's poll: its pending commands, oldest first.
      CREATE INDEX commands_pending ON commands (runtime, id) WHERE state = 'pending';
      CREATE INDEX commands_by_age ON commands (created_at);

      -- An answer is final, whatever code writes to the file.
      CREATE TRIGGER commands_final_states
      BEFORE UPDATE OF state ON commands
      WHEN OLD.state <> 'pending' AND NEW.state IS NOT OLD.state
      BEGIN
        SELECT RAISE(ABORT, 'commands: an answered command never changes state');
      END;
    `,
  },
  {
    version: 6,
    name: 'task sequences',
    sql: `
      -- The highest task id number reserved per kind, by every task service on this store.
      CREATE TABLE task_sequences (
        kind TEXT PRIMARY KEY,
        last INTEGER NOT NULL CHECK (last >= 0)
      ) STRICT, WITHOUT ROWID;
    `,
  },
  {
    version: 7,
    name: 'runtime command: move to background',
    sql: `
      -- A CHECK constraint cannot be altered in SQLite: the table is rebuilt with the new type, ids kept.
      CREATE TABLE commands_next (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        schema_version INTEGER NOT NULL,
        runtime TEXT NOT NULL,
        type TEXT NOT NULL CHECK (type IN ('cancel_background_work', 'move_to_background')),
        work_id TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('pending', 'acknowledged', 'rejected', 'expired')),
        reason TEXT,
        created_at INTEGER NOT NULL,
        answered_at INTEGER,
        CHECK ((state = 'pending') = (answered_at IS NULL)),
        CHECK ((state = 'rejected') = (reason IS NOT NULL))
      ) STRICT;
      INSERT INTO commands_next (id, session_id, schema_version, runtime, type, work_id, state, reason, created_at, answered_at)
        SELECT id, session_id, schema_version, runtime, type, work_id, state, reason, created_at, answered_at
        FROM commands;
      DROP TABLE commands;
      ALTER TABLE commands_next RENAME TO commands;
      CREATE INDEX commands_pending ON commands (runtime, id) WHERE state = 'pending';
      CREATE INDEX commands_by_age ON commands (created_at);
      CREATE TRIGGER commands_final_states
      BEFORE UPDATE OF state ON commands
      WHEN OLD.state <> 'pending' AND NEW.state IS NOT OLD.state
      BEGIN
        SELECT RAISE(ABORT, 'commands: an answered command never changes state');
      END;
    `,
  },
  {
    version: 8,
    name: 'task process facts',
    sql: `
      -- What recognises a task's process after the runtime that started it is gone: the root's pid, its
      -- start time (clock ticks after boot, /proc/<pid>/stat field 22) and the boot it started in, its
      -- process group, the environment tag its tree carries, and the file its exit status is written to.
      ALTER TABLE tasks ADD COLUMN pid INTEGER CHECK (pid > 0);
      ALTER TABLE tasks ADD COLUMN process_start_time INTEGER CHECK (process_start_time >= 0);
      ALTER TABLE tasks ADD COLUMN boot_id TEXT;
      ALTER TABLE tasks ADD COLUMN pgid INTEGER CHECK (pgid > 0);
      ALTER TABLE tasks ADD COLUMN process_tag TEXT;
      ALTER TABLE tasks ADD COLUMN status_file TEXT;
      -- A durable task keeps running when its runtime dies and is re-attached on resume.
      ALTER TABLE tasks ADD COLUMN durable INTEGER NOT NULL DEFAULT 0 CHECK (durable IN (0, 1));
      -- Bytes of the output the model has read (its task_output cursor), so a resume continues there.
      ALTER TABLE tasks ADD COLUMN read_offset INTEGER NOT NULL DEFAULT 0 CHECK (read_offset >= 0);
    `,
  },
  {
    version: 9,
    name: 'task trace context',
    sql: `
      -- The W3C traceparent of a task's span: a delivery after a restart or a resume links to it.
      ALTER TABLE tasks ADD COLUMN traceparent TEXT
        CHECK (traceparent IS NULL OR length(traceparent) = 55);
    `,
  },
  {
    version: 10,
    name: 'indexes that keep reads flat',
    sql: `
      -- A session's records never told (a resume tells them): few, whatever the session's history.
      CREATE INDEX tasks_untold ON tasks (scope, started_at) WHERE reported = 0;
      -- What changed since a poll (errand serve reads only that).
      CREATE INDEX tasks_by_update ON tasks (updated_at);
      -- task_sequences holds the highest id per kind from now on (a saved record raises it), so a runtime
      -- starts without reading the task records; it starts from the records written before.
      INSERT INTO task_sequences (kind, last)
        SELECT substr(id, 1, instr(id, '-') - 1), max(CAST(substr(id, instr(id, '-') + 1) AS INTEGER))
        FROM tasks
        WHERE instr(id, '-') > 1
          AND substr(id, instr(id, '-') + 1) <> ''
          AND substr(id, instr(id, '-') + 1) NOT GLOB '*[^0-9]*'
        GROUP BY 1
        ON CONFLICT (kind) DO UPDATE SET last = max(last, excluded.last);
    `,
  },
  {
    version: 11,
    name: 'one index for what changed',
    sql: `
      -- What changed since a poll is read through tasks_by_status (status, updated_at), one range per
      -- status: every task write then updates one index fewer.
      DROP INDEX tasks_by_update;
    `,
  },
  {
    version: 12,
    name: 'task record deletions counted',
    sql: `
      -- How many task records were ever deleted (pruned, or with their session): a reader that keeps
      -- records and reads only what changed re-reads them all only when this moved.
      CREATE TABLE store_counters (
        name TEXT PRIMARY KEY,
        value INTEGER NOT NULL CHECK (value >= 0)
      ) STRICT, WITHOUT ROWID;
      INSERT INTO store_counters (name, value) VALUES ('task_deletions', 0);
      CREATE TRIGGER tasks_deleted AFTER DELETE ON tasks
      BEGIN
        UPDATE store_counters SET value = value + 1 WHERE name = 'task_deletions';
      END;
    `,
  },
  {
    version: 13,
    name: 'schedule definitions',
    sql: `
      -- A live schedule's definition and where it stands, so a restart re-arms it (same id, same count,
      -- same next due time). The row goes when the schedule ends; its task record keeps the ending.
      CREATE TABLE schedules (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        id TEXT NOT NULL,
        schema_version INTEGER NOT NULL,
        definition TEXT NOT NULL,
        fired INTEGER NOT NULL CHECK (fired >= 0),
        last_due_at INTEGER,
        next_at INTEGER,
        -- The firing whose automated turn started and has not ended (a crash leaves it set).
        firing INTEGER CHECK (firing IS NULL OR firing = fired + 1),
        -- What the model has not been told yet of firings missed or interrupted while no runtime ran it.
        note TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (session_id, id)
      ) STRICT, WITHOUT ROWID;

      -- A schedule's count of firings only grows, whatever writes to the file.
      CREATE TRIGGER schedules_fired_grows
      BEFORE UPDATE OF fired ON schedules
      WHEN NEW.fired < OLD.fired
      BEGIN
        SELECT RAISE(ABORT, 'schedules: a schedule''s fired count never goes back');
      END;
    `,
  },
]);

/** The newest schema version this code understands. */
export const LATEST_SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

export interface MigrationOutcome {
  /** The schema version found (0 for a new database). */
  readonly from: number;
  readonly to: number;
}

interface AppliedMigration {
  readonly version: number;
  readonly name: string;
}

/**
 * Brings the database up to the newest known version in one immediate transaction, so two processes
 * opening the same new file do not both migrate it. Refuses a database newer than this code, or one whose
 * applied migrations are not this code's.
 */
export function migrate(
  database: Database.Database,
  file: string,
  time: number,
  migrations: readonly Migration[] = MIGRATIONS,
): MigrationOutcome {
  const latest = migrations[migrations.length - 1]?.version ?? 0;
  const run = database.transaction((): MigrationOutcome => {
    database.exec(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT',
    );
    const applied = database
      .prepare<[], AppliedMigration>('SELECT version, name FROM schema_migrations ORDER BY version')
      .all();
    const current = applied.at(-1)?.version ?? 0;
    if (current > latest) throw new StoreSchemaTooNewError(file, current, latest);
    applied.forEach((migration, index) => {
      const known = migrations[index];
      if (!known || known.version !== migration.version || known.name !== migration.name) {
        throw new StoreSchemaMismatchError(file, migration.version, migration.name, known?.name ?? '(none)');
      }
    });
    const record = database.prepare(
      'INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)',
    );
    for (const migration of migrations.slice(applied.length)) {
      database.exec(migration.sql);
      record.run(migration.version, migration.name, time);
    }
    // Mirrors the version where the sqlite3 shell shows it; schema_migrations stays the source of truth.
    database.pragma(`user_version = ${latest}`);
    return { from: current, to: Math.max(current, latest) };
  });
  return run.immediate();
}
