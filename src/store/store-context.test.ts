/**
 * The one transaction helper over both backends: a write is all-or-nothing, a nested write undoes only its
 * own changes when it throws, and a closed store refuses every operation.
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { inMemorySqliteBackend } from '../../test/support/sqlite-backend.js';
import { expectErrandError, START_TIME } from './conformance/index.js';
import { createMemoryBackend } from './memory-tables.js';
import { sessionStoreOptions } from './options.js';
import type { SessionRow } from './rows.js';
import { createStoreContext, type StoreContext } from './store-context.js';

const contexts: StoreContext[] = [];

afterEach(() => {
  for (const context of contexts.splice(0)) context.close();
});

function session(id: string): SessionRow {
  return {
    id,
    schemaVersion: 1,
    parentId: null,
    cwd: '/',
    title: null,
    branchGeneration: 0,
    state: 'active',
    lastSeq: 0,
    metadata: '{}',
    createdAt: START_TIME,
    updatedAt: START_TIME,
    holder: null,
  };
}

function admit(context: StoreContext, key: string): number {
  return context.write('admit', ({ ledger }) =>
    ledger.insert({
      sessionId: 's',
      schemaVersion: 1,
      kind: 'notification',
      idempotencyKey: key,
      state: 'queued',
      reason: null,
      priority: 'next',
      lane: null,
      branchGeneration: 0,
      taskId: null,
      text: key,
      createdAt: START_TIME,
      updatedAt: START_TIME,
      deliveredInMessageSeq: null,
    }),
  );
}

describe.each([
  ['SQLite', inMemorySqliteBackend],
  ['in-memory', createMemoryBackend],
])('the store context on the %s backend', (_name, createBackend) => {
  function open(): StoreContext {
    const context = createStoreContext(
      createBackend(),
      sessionStoreOptions.resolve({ now: () => START_TIME }),
    );
    contexts.push(context);
    context.write('create a session', ({ sessions }) => sessions.put(session('s')));
    return context;
  }

  it('undoes every change of a write that throws', () => {
    const context = open();
    const failure = new Error('after two changes');
    expect(() =>
      context.write('fail', ({ sessions, sequences }) => {
        sessions.put(session('t'));
        sequences.set('bash', 7);
        throw failure;
      }),
    ).toThrow(failure);
    context.read('check', ({ sessions, sequences }) => {
      expect(sessions.get('t')).toBeUndefined();
      expect(sequences.get('bash')).toBe(0);
    });
  });

  it('undoes only a nested write that throws, and all of it when the outer one throws', () => {
    const context = open();
    context.write('outer', ({ sequences }) => {
      sequences.set('bash', 1);
      expect(() =>
        context.write('inner', (tables) => {
          tables.sequences.set('bash', 2);
          tables.sessions.put(session('t'));
          throw new Error('inner');
        }),
      ).toThrow('inner');
      expect(sequences.get('bash')).toBe(1);
    });
    expect(
      context.read('check', ({ sequences, sessions }) => [sequences.get('bash'), sessions.get('t')]),
    ).toEqual([1, undefined]);
    expect(() =>
      context.write('outer', ({ sequences }) => {
        context.write('inner', (tables) => tables.sequences.set('bash', 3));
        sequences.set('pty', 4);
        throw new Error('outer');
      }),
    ).toThrow('outer');
    expect(context.read('check', ({ sequences }) => [sequences.get('bash'), sequences.get('pty')])).toEqual([
      1, 0,
    ]);
  });

  it('restores deleted rows in their place', () => {
    const context = open();
    const ids = ['a', 'b', 'c'].map((key) => admit(context, key));
    expect(() =>
      context.write('delete then fail', ({ ledger }) => {
        ledger.delete(ids[0]!);
        ledger.delete(ids[1]!);
        throw new Error('undo');
      }),
    ).toThrow('undo');
    const listed = context.read('list', ({ ledger }) => ledger.select('s', undefined).map((row) => row.id));
    expect(listed).toEqual(ids);
    expect(context.read('find', ({ ledger }) => ledger.findByKey('s', 'a')?.id)).toBe(ids[0]);
  });

  it('refuses every operation once closed; closing twice is fine', () => {
    const context = open();
    context.close();
    context.close();
    expectErrandError(
      () => context.read('read a session', ({ sessions }) => sessions.get('s')),
      'STORE_CLOSED',
    );
    expectErrandError(() => context.write('write', () => undefined), 'STORE_CLOSED');
  });
});

describe('a SQLite file that refuses writes', () => {
  it('fails the write with STORE_UNAVAILABLE naming why, and leaves what was written as it was', () => {
    const database = new Database(':memory:');
    const context = createStoreContext(
      inMemorySqliteBackend(database),
      sessionStoreOptions.resolve({ now: () => START_TIME }),
    );
    contexts.push(context);
    context.write('create a session', ({ sessions }) => sessions.put(session('s')));
    // The connection may only read now: SQLite answers a write as it does for a read-only file.
    database.pragma('query_only = ON');
    const error = expectErrandError(
      () => context.write('create a session', ({ sessions }) => sessions.put(session('t'))),
      'STORE_UNAVAILABLE',
    );
    expect(error.message).toBe(
      'The session store cannot be written (the file or its directory is read-only, SQLITE_READONLY) during create a session; nothing of it was written',
    );
    expect(error.context).toMatchObject({ reason: 'read_only', sqliteCode: 'SQLITE_READONLY' });
    expect(error.fault).toBe('system');
    database.pragma('query_only = OFF');
    expect(context.read('list', ({ sessions }) => [sessions.get('s')?.id, sessions.get('t')?.id])).toEqual([
      's',
      undefined,
    ]);
  });
});
