/**
 * A SQLite backend on an in-memory database, migrated, with foreign keys on and checkpoints left to
 * SQLite: what a test of the store's parts or its transaction helper runs on beside the memory backend.
 */
import Database from 'better-sqlite3';
import { START_TIME } from '../../src/store/conformance/index.js';
import { migrate } from '../../src/store/migrations.js';
import { createSqliteBackend } from '../../src/store/sqlite-tables.js';
import type { StoreBackend } from '../../src/store/store-tables.js';

/** Over `database` when given (a test that reaches into it), else a fresh in-memory one. */
export function inMemorySqliteBackend(database = new Database(':memory:')): StoreBackend {
  database.pragma('foreign_keys = ON');
  migrate(database, ':memory:', START_TIME);
  return createSqliteBackend(database, {
    busyTimeoutMs: 10,
    capabilities: { sharedAcrossProcesses: false, persistent: false },
    file: database.name,
    synchronous: 'normal',
    checkpointEveryCommits: 0,
  });
}
