/**
 * Deferred durability on the SQLite store: a deferred write commits without syncing the log, yet a process
 * killed with SIGKILL right after it loses nothing; the connection is back to `synchronous=FULL` after
 * every write, whatever the body did, and a nested call joins the outer write's durability.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { START_TIME } from './conformance/index.js';
import { migrate } from './migrations.js';
import { openSqliteSessionStore } from './sqlite-session-store.js';
import { createSqliteBackend } from './sqlite-tables.js';
import type { StoreBackend } from './store-tables.js';

const writer = new URL('../../test/fixtures/store/deferred-writer.mjs', import.meta.url).pathname;
let root: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'errand-deferred-'));
});

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

function fullSyncBackend(file: string): { database: Database.Database; backend: StoreBackend } {
  const database = new Database(file);
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = FULL');
  migrate(database, file, START_TIME);
  return {
    database,
    backend: createSqliteBackend(database, 10, { sharedAcrossProcesses: false, persistent: true }),
  };
}

const synchronous = (database: Database.Database) => database.pragma('synchronous', { simple: true });

describe('deferred durability', () => {
  it('commits a deferred write with synchronous=NORMAL and restores FULL after it, even when it throws', () => {
    const { database, backend } = fullSyncBackend(join(root, 'modes.sqlite'));
    try {
      expect(backend.transaction(() => synchronous(database), 'deferred')).toBe(1);
      expect(synchronous(database)).toBe(2);
      expect(backend.transaction(() => synchronous(database))).toBe(2);
      expect(backend.transaction(() => synchronous(database), 'immediate')).toBe(2);
      // A nested call that names no durability joins the outer deferred write.
      expect(backend.transaction(() => backend.transaction(() => synchronous(database)), 'deferred')).toBe(1);
      expect(() =>
        backend.transaction(() => {
          database.prepare("INSERT INTO task_sequences (kind, last) VALUES ('bash', 7)").run();
          throw new Error('body failed');
        }, 'deferred'),
      ).toThrow('body failed');
      expect(synchronous(database)).toBe(2);
      expect(database.prepare('SELECT count(*) AS n FROM task_sequences').get()).toEqual({ n: 0 });
      // An immediate call nested in a deferred one still commits what both wrote.
      backend.transaction(
        () =>
          backend.transaction(() => {
            database.prepare("INSERT INTO task_sequences (kind, last) VALUES ('bash', 8)").run();
          }, 'immediate'),
        'deferred',
      );
      expect(synchronous(database)).toBe(2);
      expect(database.prepare('SELECT last FROM task_sequences').get()).toEqual({ last: 8 });
    } finally {
      database.close();
    }
  });

  it('loses no deferred write when the process is killed with SIGKILL right after it', async () => {
    const file = join(root, 'killed', 'errand.sqlite');
    const child = spawn(process.execPath, [writer, file], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.on('exit', (_code, signal) => resolve(signal)),
    );
    await new Promise<void>((resolve, reject) => {
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        if (stdout.includes('WRITTEN')) resolve();
      });
      void exited.then(() => reject(new Error(`the writer exited first: ${stderr}`)));
    });
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    const store = openSqliteSessionStore({ file });
    try {
      expect(
        store
          .listSessions()
          .map((session) => session.id)
          .sort(),
      ).toEqual(Array.from({ length: 50 }, (_, index) => `s${index}`).sort());
    } finally {
      store.close();
    }
  });
});
