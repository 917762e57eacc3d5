import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { expectErrandError, START_TIME } from './conformance/index.js';
import { LATEST_SCHEMA_VERSION, MIGRATIONS, migrate } from './migrations.js';
import { openSqliteSessionStore } from './sqlite-session-store.js';

let root: string;
let counter = 0;
const databases: Database.Database[] = [];

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'errand-migrations-'));
});

afterEach(() => {
  for (const database of databases.splice(0)) database.close();
});

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

function rawDatabase(): { file: string; database: Database.Database } {
  counter += 1;
  const file = join(root, `db-${counter}.sqlite`);
  const database = new Database(file);
  database.pragma('journal_mode = WAL');
  databases.push(database);
  return { file, database };
}

function appliedMigrations(database: Database.Database): { version: number; name: string }[] {
  return database.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all() as {
    version: number;
    name: string;
  }[];
}

describe('migrations', () => {
  it('is a forward-only list of increasing versions from 1 with distinct names', () => {
    // Increasing, not necessarily consecutive: a number may be held for a migration of another branch.
    const versions = MIGRATIONS.map((migration) => migration.version);
    expect(versions[0]).toBe(1);
    expect(versions).toEqual([...new Set(versions)].sort((a, b) => a - b));
    expect(new Set(MIGRATIONS.map((migration) => migration.name)).size).toBe(MIGRATIONS.length);
    expect(LATEST_SCHEMA_VERSION).toBe(versions.at(-1));
  });

  it('brings an old database forward and keeps its data', () => {
    const { file, database } = rawDatabase();
    expect(migrate(database, file, START_TIME, MIGRATIONS.slice(0, 1))).toEqual({ from: 0, to: 1 });
    database
      .prepare(
        `INSERT INTO sessions (id, schema_version, parent_id, cwd, title, branch_generation, state, last_seq, metadata, created_at, updated_at)
         VALUES ('old-session', 1, NULL, '/work', 'Before the upgrade', 2, 'active', 0, '{"from":"v1"}', 1, 1)`,
      )
      .run();
    database
      .prepare(
        `INSERT INTO input_ledger (session_id, schema_version, kind, idempotency_key, state, priority, branch_generation, text, created_at, updated_at)
         VALUES ('old-session', 1, 'notification', 'bash-1:1', 'queued', 'next', 2, 'bash-1 completed', 1, 1)`,
      )
      .run();
    database.close();
    databases.splice(databases.indexOf(database), 1);

    const store = openSqliteSessionStore({ file, now: () => START_TIME, pruneOnOpen: false });
    try {
      expect(store.migration).toEqual({ from: 1, to: LATEST_SCHEMA_VERSION });
      expect(store.getSession('old-session')).toMatchObject({
        title: 'Before the upgrade',
        branchGeneration: 2,
        metadata: { from: 'v1' },
      });
      expect(store.listQueued('old-session').map((entry) => entry.idempotencyKey)).toEqual(['bash-1:1']);
      store.upsertTask({
        id: 'bash-1',
        sessionId: 'old-session',
        kind: 'bash',
        label: 'make',
        status: 'running',
        isBackgrounded: true,
        branchGeneration: 2,
        startedAt: START_TIME,
        reported: false,
      });
      store.createRun({
        runId: 'r',
        sessionId: 'old-session',
        taskId: 'workflow-1',
        scriptPath: '/f',
        scriptHash: 'h',
      });
      expect(store.getTask('bash-1', 'old-session')).toMatchObject({
        process: undefined,
        durable: false,
        readOffset: 0,
      });
      expect(store.markLiveAsLost().map((record) => record.id)).toEqual(['bash-1']);
    } finally {
      store.close();
    }
    const reopened = new Database(file, { readonly: true });
    databases.push(reopened);
    expect(appliedMigrations(reopened)).toEqual(
      MIGRATIONS.map((migration) => ({ version: migration.version, name: migration.name })),
    );
    expect(reopened.pragma('user_version', { simple: true })).toBe(LATEST_SCHEMA_VERSION);
  });

  it('keeps the runtime commands, their ids and their final-state guard across the command-type rebuild', () => {
    const { file, database } = rawDatabase();
    migrate(database, file, START_TIME, MIGRATIONS.slice(0, 6));
    database
      .prepare(
        `INSERT INTO sessions (id, schema_version, parent_id, cwd, title, branch_generation, state, last_seq, metadata, created_at, updated_at)
         VALUES ('s', 1, NULL, '/work', NULL, 0, 'active', 0, '{}', 1, 1)`,
      )
      .run();
    const insert = database.prepare(
      `INSERT INTO commands (session_id, schema_version, runtime, type, work_id, state, reason, created_at, answered_at)
       VALUES ('s', 1, 'rt', 'cancel_background_work', ?, ?, ?, 1, ?)`,
    );
    insert.run('bash-1', 'acknowledged', null, 2);
    insert.run('bash-2', 'rejected', 'not_running', 2);
    insert.run('bash-3', 'pending', null, null);
    database.prepare('DELETE FROM commands WHERE work_id = ?').run('bash-1');
    database.close();
    databases.splice(databases.indexOf(database), 1);

    const store = openSqliteSessionStore({ file, now: () => START_TIME, pruneOnOpen: false });
    try {
      expect(store.migration).toEqual({ from: 6, to: LATEST_SCHEMA_VERSION });
      expect(store.getCommand(2)).toMatchObject({
        workId: 'bash-2',
        state: 'rejected',
        reason: 'not_running',
      });
      expect(store.listPendingCommands('rt').map((command) => [command.id, command.workId])).toEqual([
        [3, 'bash-3'],
      ]);
      // The sequence continues after the highest id ever used, and the new type is accepted.
      const moved = store.submitCommand({
        sessionId: 's',
        runtime: 'rt',
        type: 'move_to_background',
        workId: 'bash-4',
      });
      expect(moved).toMatchObject({ id: 4, type: 'move_to_background', state: 'pending' });
      expect(store.answerCommand(4, { state: 'acknowledged' }).answered).toBe(true);
      expect(store.answerCommand(4, { state: 'expired' }).answered).toBe(false);
    } finally {
      store.close();
    }
    const reopened = new Database(file);
    databases.push(reopened);
    expect(() => reopened.prepare("UPDATE commands SET state = 'expired' WHERE id = 2").run()).toThrow(
      'an answered command never changes state',
    );
    expect(() =>
      reopened
        .prepare(
          `INSERT INTO commands (session_id, schema_version, runtime, type, work_id, state, created_at)
           VALUES ('s', 1, 'rt', 'run_shell', 'x', 'pending', 1)`,
        )
        .run(),
    ).toThrow(/CHECK constraint failed/);
  });

  it('gives task records written before the process facts existed none, and a cursor at 0', () => {
    const { file, database } = rawDatabase();
    migrate(database, file, START_TIME, MIGRATIONS.slice(0, 6));
    database
      .prepare(
        `INSERT INTO sessions (id, schema_version, parent_id, cwd, title, branch_generation, state, last_seq, metadata, created_at, updated_at)
         VALUES ('s', 1, NULL, '/work', NULL, 0, 'active', 0, '{}', 1, 1)`,
      )
      .run();
    database
      .prepare(
        `INSERT INTO tasks (scope, id, session_id, schema_version, kind, label, status, detail, is_backgrounded,
           branch_generation, started_at, reported, updated_at)
         VALUES ('s', 'bash-1', 's', 1, 'bash', 'sleep', 'running', '{"pid":4242}', 1, 0, 1, 0, 1)`,
      )
      .run();
    database.close();
    databases.splice(databases.indexOf(database), 1);
    const store = openSqliteSessionStore({ file, now: () => START_TIME, pruneOnOpen: false });
    try {
      expect(store.migration).toEqual({ from: 6, to: LATEST_SCHEMA_VERSION });
      expect(store.getTask('bash-1', 's')).toMatchObject({
        status: 'running',
        detail: { pid: 4242 },
        process: undefined,
        statusFile: undefined,
        durable: false,
        readOffset: 0,
      });
    } finally {
      store.close();
    }
  });

  it('refuses a database from a newer Errand without touching it', () => {
    const { file, database } = rawDatabase();
    migrate(database, file, START_TIME);
    database
      .prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)')
      .run(LATEST_SCHEMA_VERSION + 1, 'from the future', START_TIME);
    const error = expectErrandError(
      () => openSqliteSessionStore({ file, now: () => START_TIME }),
      'STORE_SCHEMA_TOO_NEW',
    );
    expect(error.message).toContain(file);
    expect(error.message).toContain(`schema version ${LATEST_SCHEMA_VERSION + 1}`);
    expect(error.context).toMatchObject({
      databaseVersion: LATEST_SCHEMA_VERSION + 1,
      supportedVersion: LATEST_SCHEMA_VERSION,
    });
    expect(error.fault).toBe('system');
    expect(appliedMigrations(database)).toHaveLength(MIGRATIONS.length + 1);
  });

  it('seeds task_sequences with the highest id per kind of the records written before (migration 10)', () => {
    const { file, database } = rawDatabase();
    migrate(
      database,
      file,
      START_TIME,
      MIGRATIONS.filter((migration) => migration.version < 10),
    );
    database
      .prepare(
        `INSERT INTO sessions (id, schema_version, parent_id, cwd, title, branch_generation, state, last_seq, metadata, created_at, updated_at)
         VALUES ('s', 1, NULL, '/', NULL, 0, 'active', 0, '{}', 1, 1)`,
      )
      .run();
    const task = database.prepare(
      `INSERT INTO tasks (scope, id, session_id, schema_version, kind, label, status, detail, is_backgrounded, branch_generation, started_at, reported, updated_at)
       VALUES ('s', ?, 's', 1, 'bash', 'x', 'completed', '{}', 1, 0, 1, 1, 1)`,
    );
    for (const id of ['bash-7', 'bash-41', 'bash-9', 'agent-3', 'odd-id', 'bash-x1']) task.run(id);
    database.prepare("INSERT INTO task_sequences (kind, last) VALUES ('agent', 100)").run();
    migrate(database, file, START_TIME);
    expect(database.prepare('SELECT kind, last FROM task_sequences ORDER BY kind').all()).toEqual([
      { kind: 'agent', last: 100 },
      { kind: 'bash', last: 41 },
    ]);
  });

  it('refuses a database whose applied migrations are not ours', () => {
    const { file, database } = rawDatabase();
    migrate(database, file, START_TIME, MIGRATIONS.slice(0, 1));
    database.prepare("UPDATE schema_migrations SET name = 'something else' WHERE version = 1").run();
    const error = expectErrandError(() => migrate(database, file, START_TIME), 'STORE_SCHEMA_MISMATCH');
    expect(error.message).toContain('something else');
    expect(appliedMigrations(database)).toEqual([{ version: 1, name: 'something else' }]);
  });

  it('applies migrations all or nothing', () => {
    const { file, database } = rawDatabase();
    migrate(database, file, START_TIME, MIGRATIONS.slice(0, 1));
    const broken = [...MIGRATIONS.slice(0, 2), { version: 3, name: 'broken', sql: 'CREATE TABLE oops (' }];
    expect(() => migrate(database, file, START_TIME, broken)).toThrow();
    expect(appliedMigrations(database).map((migration) => migration.version)).toEqual([1]);
    const tables = database
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'tasks'")
      .all();
    expect(tables).toEqual([]);
    expect(migrate(database, file, START_TIME)).toEqual({ from: 1, to: LATEST_SCHEMA_VERSION });
  });
});
