/**
 * Opening the SQLite file: where it lives, its pragmas, and the options that decide them.
 *
 * Durability: `synchronous=FULL` by default. In WAL mode both FULL and NORMAL survive a killed process
 * with a consistent database; they differ on power loss or an OS crash, where NORMAL may roll back the
 * last commits. A rolled-back delivery would erase a message the model already acted on (and whose tool
 * calls may have changed the world), so the ledger pays one fsync per commit; at a conversation's write
 * rate that is noise. `synchronous: 'normal'` is there for throwaway stores.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ErrandError, InvalidArgumentError } from '../tasks/index.js';
import { optionKeys } from '../tasks/option-keys.js';
import {
  DATABASE_FILE_NAME,
  ensureDatabaseFile,
  type HomeEnvironment,
  resolveErrandHome,
} from './data-directory.js';
import { StoreOpenError } from './errors.js';
import { resolvePruneOptions, type SessionStoreOptions } from './options.js';
import type { PruneOptions } from './session-store.js';

export type SynchronousMode = 'full' | 'normal';

/**
 * Options of `openSqliteSessionStore`: the options every store takes, where the data directory is found
 * (`env`, `homedir`, `home`, `file`) and how the file is opened. A key not listed here is rejected with
 * `UNKNOWN_OPTION`, as is one inside `pruneOnOpen` that `PruneOptions` lacks.
 */
export interface SqliteSessionStoreOptions extends SessionStoreOptions, HomeEnvironment {
  /** The data directory. Default `$ERRAND_HOME`, else `~/.errand`; created with mode 0700. */
  readonly home?: string;
  /** The database file. Default `<home>/errand.sqlite`; created with mode 0600 (its directory 0700). */
  readonly file?: string;
  /** `full` (default) fsyncs the WAL on every commit; `normal` may lose the last commits on power loss. */
  readonly synchronous?: SynchronousMode;
  /** How long a write waits for another connection's lock before `STORE_BUSY`. Default 5000 ms. */
  readonly busyTimeoutMs?: number;
  /** Prune right after opening, with these options or (`true`) the defaults. Default true. */
  readonly pruneOnOpen?: PruneOptions | boolean;
}

/** Every key of `SqliteSessionStoreOptions`; any other key is rejected with `UNKNOWN_OPTION`. */
export const SQLITE_SESSION_STORE_OPTION_KEYS = optionKeys<SqliteSessionStoreOptions>()({
  now: true,
  maxFieldBytes: true,
  env: true,
  homedir: true,
  home: true,
  file: true,
  synchronous: true,
  busyTimeoutMs: true,
  pruneOnOpen: true,
});

export const SQLITE_STORE_DEFAULTS = Object.freeze({
  synchronous: 'full' as SynchronousMode,
  busyTimeoutMs: 5000,
  /** After a checkpoint the WAL file is truncated back to at most this size. */
  journalSizeLimitBytes: 64 * 1024 * 1024,
});

export interface ResolvedSqliteOptions {
  readonly file: string;
  readonly synchronous: SynchronousMode;
  readonly busyTimeoutMs: number;
  readonly pruneOnOpen: PruneOptions | false;
}

/** Where a store opened with these options keeps its database. */
export function resolveDatabaseFile(options: SqliteSessionStoreOptions = {}): string {
  if (options.file !== undefined) {
    if (typeof options.file !== 'string' || options.file === '') {
      throw new InvalidArgumentError('file', 'a non-empty path', options.file);
    }
    return options.file;
  }
  if (options.home !== undefined && (typeof options.home !== 'string' || options.home === '')) {
    throw new InvalidArgumentError('home', 'a non-empty path', options.home);
  }
  return join(options.home ?? resolveErrandHome(options), DATABASE_FILE_NAME);
}

export function resolveSqliteOptions(options: SqliteSessionStoreOptions): ResolvedSqliteOptions {
  const synchronous = options.synchronous ?? SQLITE_STORE_DEFAULTS.synchronous;
  if (synchronous !== 'full' && synchronous !== 'normal') {
    throw new InvalidArgumentError('synchronous', '"full" or "normal"', synchronous);
  }
  const busyTimeoutMs = options.busyTimeoutMs ?? SQLITE_STORE_DEFAULTS.busyTimeoutMs;
  if (typeof busyTimeoutMs !== 'number' || !Number.isSafeInteger(busyTimeoutMs) || busyTimeoutMs < 0) {
    throw new InvalidArgumentError('busyTimeoutMs', 'a non-negative integer', busyTimeoutMs);
  }
  const prune = options.pruneOnOpen ?? true;
  let pruneOnOpen: PruneOptions | false;
  if (prune === false) pruneOnOpen = false;
  else if (prune === true) pruneOnOpen = {};
  else {
    resolvePruneOptions(prune, { where: 'openSqliteSessionStore', path: 'pruneOnOpen' });
    pruneOnOpen = prune;
  }
  return { file: resolveDatabaseFile(options), synchronous, busyTimeoutMs, pruneOnOpen };
}

/** An error's message, with SQLite's result code when it has one (`SQLITE_FULL`, `SQLITE_READONLY`). */
function describeError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_') ? `${message} (${code})` : message;
}

/** Creates the file (0600) if needed and opens it in WAL mode with foreign keys and the busy timeout. */
export function openSqliteDatabase(options: ResolvedSqliteOptions): Database.Database {
  const { file } = options;
  try {
    ensureDatabaseFile(file);
  } catch (error) {
    if (ErrandError.isInstance(error)) throw error;
    throw new StoreOpenError(file, describeError(error), error);
  }
  let database: Database.Database | undefined;
  try {
    database = new Database(file, { timeout: options.busyTimeoutMs });
    const mode = database.pragma('journal_mode = WAL', { simple: true });
    if (mode !== 'wal') {
      throw new StoreOpenError(
        file,
        `the file system refused write-ahead logging (journal mode ${String(mode)})`,
      );
    }
    database.pragma(`synchronous = ${options.synchronous.toUpperCase()}`);
    database.pragma('foreign_keys = ON');
    database.pragma(`journal_size_limit = ${SQLITE_STORE_DEFAULTS.journalSizeLimitBytes}`);
    return database;
  } catch (error) {
    database?.close();
    if (ErrandError.isInstance(error)) throw error;
    throw new StoreOpenError(file, describeError(error), error);
  }
}

/** Wraps a failure while preparing an opened database (migration, statements) as `STORE_OPEN_FAILED`. */
export function openFailure(file: string, error: unknown): Error {
  if (ErrandError.isInstance(error)) return error;
  return new StoreOpenError(file, describeError(error), error);
}
