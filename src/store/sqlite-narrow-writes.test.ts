/**
 * A write that changes a stored row the store read in the same write assigns only the columns whose
 * values differ, so indexes over the others are not rewritten and the log gets fewer pages per commit:
 * a message append (the session's last seq and stamp), a delivery (the entry's state, message and stamp)
 * and an ending told (the record's flag and stamp). Seen through `UPDATE OF` triggers, which fire when a
 * write assigns one of their columns, whatever its value. A row unchanged is not written; one that is not
 * stored as the caller read it is written whole.
 */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { inMemorySqliteBackend } from '../../test/support/sqlite-backend.js';
import { composeSessionStore } from './compose-session-store.js';
import { START_TIME } from './conformance/index.js';
import { sessionStoreOptions } from './options.js';
import type { SessionRow } from './rows.js';

/** A store over a migrated in-memory database, and the columns each write assigned since `assigned()`. */
function watchedStore() {
  const database = new Database(':memory:');
  const backend = inMemorySqliteBackend(database);
  let clock = START_TIME;
  const store = composeSessionStore(backend, sessionStoreOptions.resolve({ now: () => ++clock }));
  database.exec('CREATE TABLE assigned (target TEXT NOT NULL, name TEXT NOT NULL)');
  for (const table of ['sessions', 'input_ledger', 'tasks']) {
    const columns = database
      .prepare<[], { name: string }>(`SELECT name FROM pragma_table_info('${table}')`)
      .all()
      .map((row) => row.name);
    for (const name of columns) {
      database.exec(
        `CREATE TRIGGER assigned_${table}_${name} AFTER UPDATE OF ${name} ON ${table}
         BEGIN INSERT INTO assigned VALUES ('${table}', '${name}'); END`,
      );
    }
  }
  const take = (table: string) => {
    const names = database
      .prepare<[string], { name: string }>('SELECT name FROM assigned WHERE target = ? ORDER BY name')
      .all(table)
      .map((row) => row.name);
    database.prepare('DELETE FROM assigned WHERE target = ?').run(table);
    return names;
  };
  return { database, backend, store, take };
}

describe('narrow writes on the SQLite store', () => {
  it('assigns only what a message append, a delivery and an ending told change', () => {
    const { store, take } = watchedStore();
    store.createSession({ id: 's', cwd: '/', title: 'build' });
    store.upsertTask({
      id: 'bash-1',
      sessionId: 's',
      kind: 'bash',
      label: 'make',
      status: 'completed',
      detail: { description: 'make' },
      isBackgrounded: true,
      branchGeneration: 0,
      startedAt: START_TIME,
      endedAt: START_TIME,
      reported: false,
    });
    const { entry } = store.admit({
      sessionId: 's',
      kind: 'notification',
      idempotencyKey: 'bash-1',
      text: '<task-notification/>',
      taskId: 'bash-1',
    });
    take('sessions');

    store.appendMessage('s', { role: 'user', content: { text: 'go' }, source: 'user' });
    expect(take('sessions')).toEqual(['last_seq', 'updated_at']);

    store.transaction(() => {
      const delivered = store.commitDelivery('s', [entry.id], {
        role: 'user',
        content: { text: entry.text },
        visibility: 'model-only',
        source: 'background_task',
      });
      expect(delivered.ok).toBe(true);
      store.markTold('s', ['bash-1']);
    });
    expect(take('input_ledger')).toEqual(['delivered_in_message_seq', 'state', 'updated_at']);
    expect(take('tasks')).toEqual(['reported', 'updated_at']);
    expect(store.getTask('bash-1', 's')).toMatchObject({
      reported: true,
      label: 'make',
      status: 'completed',
    });
    expect(store.getLedgerEntry(entry.id)).toMatchObject({ state: 'delivered', deliveredInMessageSeq: 2 });
    expect(store.getSession('s')).toMatchObject({ title: 'build', cwd: '/' });
    expect(store.listMessages('s').map((message) => message.seq)).toEqual([1, 2]);
  });

  it('writes nothing for an unchanged row, and the whole row when it is not stored as read', () => {
    const { database, backend, store, take } = watchedStore();
    store.createSession({ id: 's', cwd: '/', title: 'build' });
    const stored = database
      .prepare<[], SessionRow>(
        `SELECT id, schema_version AS schemaVersion, parent_id AS parentId, cwd, title,
           branch_generation AS branchGeneration, state, last_seq AS lastSeq, metadata,
           created_at AS createdAt, updated_at AS updatedAt, holder
         FROM sessions WHERE id = 's'`,
      )
      .get()!;
    take('sessions');
    const changes = () => database.prepare<[], { n: number }>('SELECT total_changes() AS n').get()!.n;

    const before = changes();
    backend.transaction(() => backend.tables.sessions.put({ ...stored }, stored));
    expect(changes()).toBe(before);
    expect(take('sessions')).toEqual([]);

    // Deleted since it was read: the narrow update finds no row, and the row is written whole.
    database.exec("DELETE FROM sessions WHERE id = 's'");
    backend.transaction(() => backend.tables.sessions.put({ ...stored, title: 'again' }, stored));
    expect(store.getSession('s')).toMatchObject({ title: 'again', cwd: '/' });

    // A key that differs from the row read is a different row: written whole, the first left as it is.
    backend.transaction(() => backend.tables.sessions.put({ ...stored, id: 't', title: 'other' }, stored));
    expect(store.getSession('t')).toMatchObject({ title: 'other' });
    expect(store.getSession('s')).toMatchObject({ title: 'again' });
  });
});
