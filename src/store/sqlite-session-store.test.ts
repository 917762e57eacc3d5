import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { describeSessionStoreConformance, expectErrandError, START_TIME } from './conformance/index.js';
import { resolveErrandHome } from './data-directory.js';
import { LATEST_SCHEMA_VERSION } from './migrations.js';
import type { SessionStore } from './session-store.js';
import { openSqliteSessionStore, type SqliteSessionStore } from './sqlite-session-store.js';

let root: string;
let counter = 0;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'errand-store-'));
});

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

function freshFile(): string {
  counter += 1;
  return join(root, `store-${counter}`, 'errand.sqlite');
}

describeSessionStoreConformance('SQLite', (options) =>
  openSqliteSessionStore({ ...options, file: freshFile(), synchronous: 'normal' }),
);

describe('SQLite session store', () => {
  const opened: SessionStore[] = [];
  const now = () => START_TIME;
  function open(options: Parameters<typeof openSqliteSessionStore>[0]): SqliteSessionStore {
    const store = openSqliteSessionStore({ now, ...options });
    opened.push(store);
    return store;
  }
  afterEach(() => {
    for (const store of opened.splice(0)) store.close();
  });

  it('creates the data directory 0700 and the database file 0600 in ERRAND_HOME', () => {
    const home = join(root, 'home-perm', 'nested');
    const store = open({ env: { ERRAND_HOME: home } });
    expect(store.file).toBe(join(home, 'errand.sqlite'));
    expect(statSync(home).mode & 0o777).toBe(0o700);
    expect(statSync(join(root, 'home-perm')).mode & 0o777).toBe(0o700);
    expect(statSync(store.file).mode & 0o777).toBe(0o600);
    store.createSession({ id: 's', cwd: '/' });
    expect(statSync(`${store.file}-wal`).mode & 0o777).toBe(0o600);
  });

  it('resolves the home from ERRAND_HOME, else ~/.errand', () => {
    expect(resolveErrandHome({ env: { ERRAND_HOME: '/data/errand' } })).toBe('/data/errand');
    expect(resolveErrandHome({ env: {}, homedir: () => '/home/ada' })).toBe('/home/ada/.errand');
    expect(resolveErrandHome({ env: { ERRAND_HOME: '' }, homedir: () => '/home/ada' })).toBe(
      '/home/ada/.errand',
    );
    expectErrandError(() => resolveErrandHome({ env: {}, homedir: () => 'relative' }), 'INVALID_ARGUMENT');
  });

  it('runs in WAL mode with the chosen durability, foreign keys and a busy timeout', () => {
    const file = freshFile();
    open({ file }).close();
    const store = open({ file, busyTimeoutMs: 1234 });
    const database = new Database(store.file, { readonly: true });
    try {
      expect(database.pragma('journal_mode', { simple: true })).toBe('wal');
    } finally {
      database.close();
    }
    expect(store.migration).toEqual({ from: LATEST_SCHEMA_VERSION, to: LATEST_SCHEMA_VERSION });
    expectErrandError(() => open({ file: freshFile(), synchronous: 'off' as never }), 'INVALID_ARGUMENT');
    expectErrandError(() => open({ file: freshFile(), busyTimeoutMs: -1 }), 'INVALID_ARGUMENT');
    const refused = expectErrandError(
      () => open({ file: freshFile(), syncDeferredWithinMs: 3_600_001 }),
      'INVALID_ARGUMENT',
    );
    expect(refused.message).toContain('syncDeferredWithinMs');
    expectErrandError(() => open({ file: freshFile(), syncDeferredEveryCommits: 1.5 }), 'INVALID_ARGUMENT');
    // Zero turns each off.
    open({ file: freshFile(), syncDeferredEveryCommits: 0, syncDeferredWithinMs: 0 }).close();
  });

  it('declares that other processes share the file and it outlives the process', () => {
    expect(open({ file: freshFile() }).capabilities).toEqual({
      sharedAcrossProcesses: true,
      persistent: true,
    });
  });

  it('keeps everything across close and reopen', () => {
    const file = freshFile();
    const first = open({ file });
    first.createSession({ id: 's', cwd: '/' });
    const entry = first.admit({ sessionId: 's', kind: 'notification', idempotencyKey: 'k', text: 't' }).entry;
    first.commitDelivery('s', [entry.id], {
      role: 'user',
      content: { text: 't' },
      source: 'background_task',
    });
    first.close();
    const second = open({ file });
    expect(second.migration.from).toBe(LATEST_SCHEMA_VERSION);
    expect(second.getLedgerEntry(entry.id)).toMatchObject({ state: 'delivered', deliveredInMessageSeq: 1 });
    expect(
      second.admit({ sessionId: 's', kind: 'notification', idempotencyKey: 'k', text: 't' }).admitted,
    ).toBe(false);
  });

  it('shares one ledger between connections: one admission, one delivery', () => {
    const file = freshFile();
    const a = open({ file });
    const b = open({ file });
    a.createSession({ id: 's', cwd: '/' });
    const first = a.admit({ sessionId: 's', kind: 'notification', idempotencyKey: 'k', text: 't' });
    const second = b.admit({ sessionId: 's', kind: 'notification', idempotencyKey: 'k', text: 't' });
    expect([first.admitted, second.admitted]).toEqual([true, false]);
    expect(second.entry.id).toBe(first.entry.id);
    const message = { role: 'user' as const, content: { text: 't' }, source: 'background_task' };
    expect(b.discardQueued('s', 'session_resumed')).toHaveLength(1);
    expect(a.commitDelivery('s', [first.entry.id], message)).toMatchObject({
      ok: false,
      code: 'LEDGER_ENTRY_NOT_QUEUED',
    });
    expect(b.listMessages('s')).toEqual([]);
  });

  it('reports a corrupt JSON column with the table, key and column instead of a bare SyntaxError', () => {
    const file = freshFile();
    const store = open({ file });
    store.createSession({ id: 's', cwd: '/', metadata: { ok: true } });
    store.createSession({ id: 't', cwd: '/' });
    store.appendMessage('t', { role: 'user', content: { text: 'fine' }, source: 'user' });
    const database = new Database(file);
    try {
      database.prepare("UPDATE sessions SET metadata = '{broken' WHERE id = 's'").run();
      database.prepare("UPDATE messages SET content = '[1]' WHERE session_id = 't'").run();
    } finally {
      database.close();
    }
    const session = expectErrandError(() => store.getSession('s'), 'STORE_RECORD_CORRUPT');
    expect(session.message).toContain('sessions row s');
    expect(session.message).toContain('`metadata`');
    expect(session.context).toMatchObject({ table: 'sessions', key: 's', column: 'metadata' });
    expect(session.cause).toBeInstanceOf(SyntaxError);
    expect(session.fault).toBe('system');
    const message = expectErrandError(() => store.listMessages('t'), 'STORE_RECORD_CORRUPT');
    expect(message.context).toMatchObject({ table: 'messages', key: 't#1', column: 'content' });
  });

  it('refuses a row written by a newer record schema', () => {
    const file = freshFile();
    const store = open({ file });
    store.createSession({ id: 's', cwd: '/' });
    const database = new Database(file);
    try {
      database.prepare('UPDATE sessions SET schema_version = 99').run();
    } finally {
      database.close();
    }
    const error = expectErrandError(() => store.getSession('s'), 'STORE_RECORD_CORRUPT');
    expect(error.message).toContain('99');
  });

  it('enforces final ledger states in the file itself', () => {
    const file = freshFile();
    const store = open({ file });
    store.createSession({ id: 's', cwd: '/' });
    const entry = store.admit({ sessionId: 's', kind: 'notification', idempotencyKey: 'k', text: 't' }).entry;
    store.markDiscarded([entry.id], 'shutdown');
    const database = new Database(file);
    try {
      expect(() => database.prepare("UPDATE input_ledger SET state = 'queued', reason = NULL").run()).toThrow(
        /never changes state/,
      );
      expect(() =>
        database
          .prepare("UPDATE input_ledger SET state = 'delivered', reason = NULL, delivered_in_message_seq = 1")
          .run(),
      ).toThrow();
    } finally {
      database.close();
    }
  });

  it('refuses a file that is not a database with STORE_OPEN_FAILED', () => {
    const file = freshFile();
    open({ file }).close();
    writeFileSync(
      file,
      'this is not sqlite, just text that is long enough to look like a header '.repeat(20),
    );
    rmSync(`${file}-wal`, { force: true });
    rmSync(`${file}-shm`, { force: true });
    const error = expectErrandError(() => open({ file }), 'STORE_OPEN_FAILED');
    expect(error.message).toContain(file);
  });

  it('refuses an empty file or a short foreign one where the store should be; a store it made is never empty', () => {
    const file = freshFile();
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, '');
    const empty = expectErrandError(() => open({ file }), 'STORE_OPEN_FAILED');
    expect(empty.message).toBe(
      `Cannot open the session store ${JSON.stringify(file)}: the file is empty (0 bytes), not an SQLite database: move it away to start a new store, or put back a copy of the store`,
    );
    // Refused, not taken over: still empty, and no WAL beside it.
    expect(statSync(file).size).toBe(0);
    expect(existsSync(`${file}-wal`)).toBe(false);
    writeFileSync(file, 'short');
    expect(expectErrandError(() => open({ file }), 'STORE_OPEN_FAILED').message).toContain(
      'does not start with "SQLite format 3"',
    );
    // Made by Errand: complete, 0600, with its header, before it had its name; nothing left beside it.
    const fresh = freshFile();
    open({ file: fresh }).close();
    expect(readFileSync(fresh).subarray(0, 16).toString('latin1')).toBe('SQLite format 3\0');
    expect(statSync(fresh).mode & 0o777).toBe(0o600);
    expect(readdirSync(dirname(fresh)).filter((name) => name.includes('.new'))).toEqual([]);
    open({ file: fresh }).close();
  });

  it('prunes on open by default, and not when told not to', () => {
    const file = freshFile();
    let time = START_TIME;
    const first = open({ file, now: () => time, pruneOnOpen: false });
    first.createSession({ id: 'old', cwd: '/' });
    first.updateSession('old', { state: 'closed' });
    first.close();
    time += 1;
    expect(
      open({ file, now: () => time, pruneOnOpen: { keepClosedSessions: 1 } }).getSession('old'),
    ).toBeDefined();
    expect(
      open({ file, now: () => time, pruneOnOpen: { keepClosedSessions: 0 } }).getSession('old'),
    ).toBeUndefined();
    expectErrandError(() => open({ file, pruneOnOpen: { keepClosedSessions: 1.5 } }), 'INVALID_ARGUMENT');
  });

  it("logs fewer pages for a task's later writes than for its first, and keeps every index right", () => {
    const file = freshFile();
    const store = open({ file, synchronous: 'normal' });
    store.createSession({ id: 's', cwd: '/' });
    // Pages a commit adds to the write-ahead log: its growth over one frame (a header and a page).
    const frameBytes = 24 + 4096;
    const pagesOf = (write: () => void): number => {
      const before = statSync(`${file}-wal`).size;
      store.transaction(write, { durability: 'deferred' });
      return Math.round((statSync(`${file}-wal`).size - before) / frameBytes);
    };
    const record = {
      id: 'bash-1',
      sessionId: 's',
      kind: 'bash',
      label: 'true',
      status: 'running' as const,
      detail: {},
      isBackgrounded: true,
      branchGeneration: 0,
      startedAt: START_TIME,
      reported: false,
    };
    // The start: the row and a leaf of each index (by session, by status, the untold ones).
    const first = pagesOf(() => store.upsertTask(record));
    // The process facts: the row and its place by status; the other indexes keep their entries.
    const facts = pagesOf(() =>
      store.upsertTask({ ...record, detail: { pid: 42 }, process: { pid: 42, startTime: 7 } }),
    );
    expect(first).toBeGreaterThanOrEqual(4);
    expect(facts).toBeLessThanOrEqual(first - 2);
    // The ending moves it between statuses; telling it changes the untold index: both read back right.
    pagesOf(() => store.upsertTask({ ...record, status: 'completed', endedAt: START_TIME + 1 }));
    expect(store.listTasks({ sessionId: 's', reported: false }).map((task) => task.status)).toEqual([
      'completed',
    ]);
    pagesOf(() =>
      store.upsertTask({ ...record, status: 'completed', endedAt: START_TIME + 1, reported: true }),
    );
    expect(store.listTasks({ sessionId: 's', reported: false })).toEqual([]);
    expect(store.listTasks({ statuses: ['running'] })).toEqual([]);
    expect(store.getTask('bash-1', 's')).toMatchObject({ status: 'completed', reported: true });
  });
});

describe('SQLite session store under lock contention', () => {
  it('gives up with STORE_BUSY after the busy timeout, and writes nothing', () => {
    const file = join(root, 'busy', 'errand.sqlite');
    const store = openSqliteSessionStore({ file, busyTimeoutMs: 20, now: () => START_TIME });
    const holder = new Database(file);
    try {
      store.createSession({ id: 's', cwd: '/' });
      holder.exec('BEGIN IMMEDIATE');
      const error = expectErrandError(
        () => store.admit({ sessionId: 's', kind: 'notification', idempotencyKey: 'k', text: 't' }),
        'STORE_BUSY',
      );
      expect(error.message).toContain('20 ms');
      expect(error.message).toContain('admit a ledger entry');
      holder.exec('ROLLBACK');
      expect(store.listLedger('s')).toEqual([]);
      expect(
        store.admit({ sessionId: 's', kind: 'notification', idempotencyKey: 'k', text: 't' }).admitted,
      ).toBe(true);
    } finally {
      holder.close();
      store.close();
    }
  });
});
