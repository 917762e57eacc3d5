/**
 * The SQLite session store: the store's eight parts (`compose-session-store.ts`) over a SQLite file. Every
 * change is one immediate transaction, so a guard and its write are one step even when several processes
 * share the file, and a crash leaves either all of a change or none.
 */
import { ErrandError } from '../tasks/index.js';
import { composeSessionStore } from './compose-session-store.js';
import { StoreOpenError } from './errors.js';
import { type MigrationOutcome, migrate } from './migrations.js';
import type { SessionStore } from './session-store.js';
import {
  openFailure,
  openSqliteDatabase,
  resolveSqliteOptions,
  type SqliteSessionStoreOptions,
} from './sqlite-database.js';
import { createSqliteBackend } from './sqlite-tables.js';
import { readClock } from './validate-input.js';

/** A session store in a SQLite file. Open it with `openSqliteSessionStore`. */
export interface SqliteSessionStore extends SessionStore {
  /** The database file. */
  readonly file: string;
  /** The schema version the file had when opened, and the one it has now. */
  readonly migration: MigrationOutcome;
}

const FILE_CAPABILITIES = Object.freeze({ sharedAcrossProcesses: true, persistent: true });

/** Opens (creating and migrating as needed) the session store in `$ERRAND_HOME`, or where the options say. */
export function openSqliteSessionStore(options: SqliteSessionStoreOptions = {}): SqliteSessionStore {
  const sqlite = resolveSqliteOptions(options);
  const database = openSqliteDatabase(sqlite);
  let store: SqliteSessionStore;
  try {
    const migration = migrate(database, sqlite.file, readClock(sqlite.now));
    const backend = createSqliteBackend(database, {
      busyTimeoutMs: sqlite.busyTimeoutMs,
      capabilities: FILE_CAPABILITIES,
      file: sqlite.file,
      synchronous: sqlite.synchronous,
      checkpointEveryCommits: sqlite.checkpointEveryCommits,
      syncDeferredEveryCommits: sqlite.syncDeferredEveryCommits,
      syncDeferredWithinMs: sqlite.syncDeferredWithinMs,
    });
    store = { file: sqlite.file, migration, ...composeSessionStore(backend, sqlite) };
  } catch (error) {
    database.close();
    throw openFailure(sqlite.file, error);
  }
  if (sqlite.pruneOnOpen !== false) {
    try {
      store.prune(sqlite.pruneOnOpen);
    } catch (error) {
      store.close();
      // A file that cannot be written (full, read-only) is named with the cause.
      if (ErrandError.hasCode(error, 'STORE_UNAVAILABLE') || ErrandError.hasCode(error, 'STORE_BUSY')) {
        throw new StoreOpenError(sqlite.file, (error as Error).message, error);
      }
      throw error;
    }
  }
  return store;
}
