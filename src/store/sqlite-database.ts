/**
 * Opening the SQLite file: where it lives, its pragmas, and the options that decide them.
 *
 * Durability: `full` by default. In WAL mode both FULL and NORMAL survive a killed process with a
 * consistent database; they differ on power loss or an OS crash, where NORMAL may roll back the last
 * commits. A rolled-back delivery would erase a message the model already acted on (and whose tool calls
 * may have changed the world), so what the model acts on pays one fsync per commit. Records nobody was
 * shown yet ask for deferred durability (`SessionStore.transaction`): they are not synced, and the next
 * immediate commit's sync covers them, so a burst of endings costs a few fsyncs, not three per ending.
 * Commits and checkpoints are run by `createCommitPolicy` (`sqlite-commits.ts`): neither a deferred commit
 * nor a checkpoint costs an fsync on the event loop. `synchronous: 'normal'` is there for throwaway stores.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describeError, ErrandError } from '../tasks/index.js';
import { defineOptions, type OptionsInput, option, type ResolvedOptions } from '../tasks/options.js';
import { DATABASE_FILE_NAME, ensureDatabaseFile, notADatabase, resolveErrandHome } from './data-directory.js';
import { StoreOpenError } from './errors.js';
import {
  type PruneOptions,
  pruneOptions,
  type ResolvedPruneOptions,
  STORE_RETENTION_DEFAULTS,
  sessionStoreOptions,
} from './options.js';

const isObject = (value: unknown) => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The options of `openSqliteSessionStore`: the options every store takes, where the data directory is
 * found (`env`, `homedir`, `home`, `file`) and how the file is opened. A key not declared here is rejected
 * with `UNKNOWN_OPTION`, as is one inside `pruneOnOpen` that `PruneOptions` lacks.
 */
export const sqliteSessionStoreOptions = defineOptions('openSqliteSessionStore', {
  ...sessionStoreOptions.rules,
  /** The environment `ERRAND_HOME` is read from. Default `process.env`. */
  env: option.custom<Readonly<Record<string, string | undefined>>>(
    'an object of environment variables',
    isObject,
  ),
  /** The user's home directory, under which `.errand` is the default data directory. Default `os.homedir`. */
  homedir: option.func<() => string>(),
  /** The data directory. Default `$ERRAND_HOME`, else `~/.errand`; created with mode 0700. */
  home: option.string(),
  /** The database file. Default `<home>/errand.sqlite`; created with mode 0600 (its directory 0700). */
  file: option.string(),
  /** `full` (default) fsyncs the WAL on every commit; `normal` may lose the last commits on power loss. */
  synchronous: option.oneOf(['full', 'normal'], { default: 'full' }),
  /**
   * 0 (the default): SQLite checkpoints the write-ahead log inside the commit that crosses its threshold.
   * N: a checkpointer thread beside the event loop checkpoints every N commits instead (fewer long stalls
   * of the loop; on a small machine it costs commit throughput, see `src/store/README.md`).
   */
  checkpointEveryCommits: option.integer({ min: 0, default: 0 }),
  /**
   * With `synchronous: 'full'`, a write committed with deferred durability (a record nobody was shown yet)
   * is not synced by its commit. Once this many such commits wait unsynced, one sync of the log starts in
   * the thread pool, off the event loop: a power loss takes at most about that many, and a checkpoint
   * (which syncs the log first) finds little to write. Default 16; 0 turns it off.
   */
  syncDeferredEveryCommits: option.integer({ min: 0, default: 16 }),
  /** And at the latest this many milliseconds after the first of them (at most an hour). Default 1000; 0 turns it off. */
  syncDeferredWithinMs: option.integer({ min: 0, max: 3_600_000, default: 1000 }),
  /** How long a write waits for another connection's lock before `STORE_BUSY`. Default 5000 ms. */
  busyTimeoutMs: option.integer({ min: 0, default: 5000 }),
  /** Prune right after opening, with these options or (`true`) the defaults. Default true. */
  pruneOnOpen: option.custom<PruneOptions | boolean, ResolvedPruneOptions | false>(
    'an object of prune options, or a boolean',
    (value) => typeof value === 'boolean' || isObject(value),
    {
      fallback: () => STORE_RETENTION_DEFAULTS,
      convert: (value, path, where) =>
        value === false ? false : pruneOptions.resolve(value === true ? {} : value, { where, path }),
    },
  ),
});

/** Options of `openSqliteSessionStore`. */
export type SqliteSessionStoreOptions = OptionsInput<typeof sqliteSessionStoreOptions.rules>;
export type SynchronousMode = 'full' | 'normal';

export const SQLITE_STORE_DEFAULTS = Object.freeze({
  ...sqliteSessionStoreOptions.defaults,
  /** After a checkpoint the WAL file is truncated back to at most this size. */
  journalSizeLimitBytes: 64 * 1024 * 1024,
});

export type ResolvedSqliteOptions = ResolvedOptions<typeof sqliteSessionStoreOptions.rules> & {
  /** The database file, `file` or the one in the data directory. */
  readonly file: string;
};

/** Checks `options` and finds the database file they name. */
export function resolveSqliteOptions(options: SqliteSessionStoreOptions = {}): ResolvedSqliteOptions {
  const resolved = sqliteSessionStoreOptions.resolve(options);
  const file = resolved.file ?? join(resolved.home ?? resolveErrandHome(resolved), DATABASE_FILE_NAME);
  return Object.freeze({ ...resolved, file });
}

/** Where a store opened with these options keeps its database. */
export function resolveDatabaseFile(options: SqliteSessionStoreOptions = {}): string {
  return resolveSqliteOptions(options).file;
}

/**
 * Creates the file (0600, already with its SQLite header) if needed and opens it in WAL mode with foreign
 * keys and the busy timeout. A file that was there and is empty or not SQLite is refused
 * (`STORE_OPEN_FAILED`): SQLite would take an empty one for a new, empty store.
 */
export function openSqliteDatabase(options: ResolvedSqliteOptions): Database.Database {
  const { file } = options;
  try {
    const created = ensureDatabaseFile(file, (path) => {
      const fresh = new Database(path, { timeout: options.busyTimeoutMs });
      try {
        // Writes the header (and page 1): the file is a database before it has its name.
        fresh.pragma('journal_mode = WAL');
      } finally {
        fresh.close();
      }
    });
    const problem = created ? undefined : notADatabase(file);
    if (problem !== undefined) throw new StoreOpenError(file, problem);
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
