/**
 * When a SQLite commit reaches the disk, and where the write-ahead log is checkpointed.
 *
 * Syncing. The connection commits with `synchronous=NORMAL`: a commit is in the WAL when it returns (a
 * killed process loses nothing) without waiting for the disk. On a store opened `full` an immediate
 * commit then syncs the log file itself (`fdatasync`, what FULL does inside the commit), and a deferred
 * one does not: it costs no fsync and no switch of the connection's mode, and the next immediate commit's
 * sync covers it and every commit before; `whenDurable` syncs in the thread pool instead, one sync for
 * every caller waiting then (group commit). Deferred commits also reach the disk in the background: once
 * `syncDeferredEveryCommits` of them wait unsynced, or `syncDeferredWithinMs` after the first, one sync of
 * the log runs in the thread pool. That bounds what a power loss can take of them, and leaves a checkpoint
 * (which syncs the log before copying it) little to write while the event loop waits. A background sync
 * that fails is reported to the next caller that waits for the disk (an immediate commit, `whenDurable`):
 * a later sync may succeed after the kernel dropped the pages the failed one could not write. A nested call that names no durability joins the outer one's;
 * a nested immediate one makes the outer commit sync. (Another process may read an immediate commit the
 * moment before its sync; this one acts on it only after.)
 *
 * Checkpoints: `createCheckpointSchedule` (`sqlite-checkpointer.ts`), told of every commit.
 */
import { closeSync, fdatasync, fdatasyncSync, fsyncSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import type Database from 'better-sqlite3';
import type { StoreDurability } from './session-store.js';
import { createCheckpointSchedule } from './sqlite-checkpointer.js';

export interface CommitPolicyOptions {
  /** The database file; its log is `<file>-wal`. */
  readonly file: string;
  /** `full`: immediate commits sync the log. `normal`: nothing is synced by a commit. */
  readonly synchronous: 'full' | 'normal';
  /** For the checkpointer's own connection. */
  readonly busyTimeoutMs: number;
  /** Commits between two checkpoints; 0 leaves checkpoints to SQLite, inside the commits. */
  readonly checkpointEveryCommits: number;
  /** Syncs the log file's data (`fdatasync`); a test counts the calls. */
  readonly syncLog?: (fd: number) => void;
  /** The same, in the thread pool (for `whenDurable`). */
  readonly syncLogAsync?: (fd: number, done: (error: Error | null) => void) => void;
  /** Unsynced deferred commits that start a sync in the thread pool; 0 (or absent): none is started so. */
  readonly syncDeferredEveryCommits?: number;
  /** Milliseconds after the first unsynced deferred commit that start one; 0 (or absent): no timer. */
  readonly syncDeferredWithinMs?: number;
  /** Whether the checkpointer thread may be started (false: every checkpoint runs inline). */
  readonly checkpointThread?: boolean;
  /** Called after each checkpoint that finished, with where it ran. */
  readonly onCheckpoint?: (where: 'thread' | 'inline') => void;
  /** See `CHECKPOINT_FINISH_FRAMES` (a test sets fewer). */
  readonly checkpointFinishFrames?: number;
}

export interface CommitPolicy {
  /** Runs `body` in one immediate transaction and commits it with `durability` (default `immediate`). */
  transaction<T>(body: () => T, durability?: StoreDurability): T;
  /**
   * Resolves once every commit made before the call is synced: one `fdatasync` of the log in the thread
   * pool, shared by every caller that asked before it started (or the background sync running, when it
   * covers every commit so far). At once when nothing waits for the disk.
   */
  whenDurable(): Promise<void>;
  /** Closes the log file and stops the checkpointer. The connection is the caller's to close. */
  close(): void;
}

export function createCommitPolicy(database: Database.Database, options: CommitPolicyOptions): CommitPolicy {
  const transaction = database.transaction((body: () => unknown) => body());
  const full = options.synchronous === 'full';
  database.pragma('synchronous = NORMAL');
  const log = createLogSync(options, full);
  const checkpoints = createCheckpointSchedule(database, {
    file: options.file,
    busyTimeoutMs: options.busyTimeoutMs,
    every: options.checkpointEveryCommits,
    ...(options.checkpointThread === undefined ? {} : { thread: options.checkpointThread }),
    ...(options.checkpointFinishFrames === undefined ? {} : { finishFrames: options.checkpointFinishFrames }),
    ...(options.onCheckpoint === undefined ? {} : { onCheckpoint: options.onCheckpoint }),
  });
  let syncAfter = false;
  return {
    transaction<T>(body: () => T, durability?: StoreDurability): T {
      if (database.inTransaction) {
        if (durability === 'immediate') syncAfter = true;
        return transaction.immediate(body) as T;
      }
      syncAfter = durability !== 'deferred';
      const value = transaction.immediate(body) as T;
      // A sync that fails (an I/O error) throws to the caller although the commit is in the log: it is not
      // known to be on disk, and a store failure is what the caller handles (it keeps and retries the write).
      log.committed(full && syncAfter);
      checkpoints.committed();
      return value;
    },
    whenDurable: () => (full ? log.whenDurable() : Promise.resolve()),
    close() {
      checkpoints.close();
      log.close();
    },
  };
}

/**
 * The log file's syncs: on the loop after an immediate commit, or in the thread pool for `whenDurable`
 * and in the background, one for every caller that asked before it started. `backgroundSyncs` false (a
 * store opened `normal`): no sync starts by itself.
 */
function createLogSync(
  options: CommitPolicyOptions,
  backgroundSyncs: boolean,
): {
  committed(synced: boolean): void;
  whenDurable(): Promise<void>;
  close(): void;
} {
  const syncLog = options.syncLog ?? fdatasyncSync;
  const syncLogAsync = options.syncLogAsync ?? fdatasync;
  let fd: number | undefined;
  // Commits made, and how many of them are known to be on disk.
  let commits = 0;
  let durableCommits = 0;
  // Syncs in the thread pool hold the descriptor; the next one is taken by every caller until it starts.
  let inFlight = 0;
  let queued: Promise<void> | undefined;
  let last: Promise<unknown> = Promise.resolve();
  // The background sync running, and how many commits it covers. A caller never queues behind it.
  let background: { readonly covers: number; readonly done: Promise<void> } | undefined;
  let closed = false;
  const everyCommits = backgroundSyncs ? (options.syncDeferredEveryCommits ?? 0) : 0;
  const withinMs = backgroundSyncs ? (options.syncDeferredWithinMs ?? 0) : 0;
  let timer: NodeJS.Timeout | undefined;
  // A background sync's failure, for the next caller that waits for the disk.
  let backgroundFailure: Error | undefined;

  const logFile = (): number => {
    // The log exists once a commit wrote to it; while this connection is open SQLite never deletes it.
    if (fd === undefined) {
      fd = openSync(`${options.file}-wal`, 'r');
      // The log may be new: its directory entry reaches the disk once, as SQLite syncs a new file's directory.
      const directory = openSync(dirname(options.file), 'r');
      try {
        fsyncSync(directory);
      } finally {
        closeSync(directory);
      }
    }
    return fd;
  };
  const closeLog = () => {
    if (fd !== undefined) closeSync(fd);
    fd = undefined;
  };

  /** One sync in the thread pool covering every commit made before it starts. */
  const syncInPool = (): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      if (closed) {
        reject(new Error('the store was closed before its log was synced'));
        return;
      }
      const covers = commits;
      let descriptor: number;
      try {
        descriptor = logFile();
      } catch (error) {
        reject(error);
        return;
      }
      inFlight += 1;
      syncLogAsync(descriptor, (error) => {
        inFlight -= 1;
        // After a close no sync uses the descriptor again (a later one is refused first).
        if (closed && inFlight === 0) closeLog();
        if (error) {
          reject(error);
          return;
        }
        durableCommits = Math.max(durableCommits, covers);
        resolve();
      });
    });

  const takeFailure = (): Error | undefined => {
    const failure = backgroundFailure;
    backgroundFailure = undefined;
    return failure;
  };

  /** The next sync for callers that wait, shared by every caller until it starts. */
  const nextSync = (): Promise<void> => {
    // A sync already running may have started before the last commit: the next one covers it.
    if (queued === undefined) {
      const sync = last.then(() => {
        queued = undefined;
        return syncInPool();
      });
      queued = sync;
      last = sync.catch(() => {});
    }
    return queued;
  };

  /** A sync nobody waits for, started only while no other runs or waits to; false when none started. */
  const syncInBackground = (): boolean => {
    if (closed || inFlight > 0 || queued !== undefined || durableCommits >= commits) return false;
    const done = syncInPool();
    const started = { covers: commits, done };
    background = started;
    done.then(
      () => {
        if (background === started) background = undefined;
        // Commits made while it ran wait for the next one, at the latest after `withinMs`.
        if (durableCommits < commits) armTimer();
      },
      (error: unknown) => {
        if (background === started) background = undefined;
        if (!closed) backgroundFailure = error instanceof Error ? error : new Error(String(error));
      },
    );
    return true;
  };

  const armTimer = () => {
    if (withinMs === 0 || timer !== undefined || closed) return;
    timer = setTimeout(() => {
      timer = undefined;
      // Another sync running may not cover the last commits: the time bound is looked at again after it.
      if (!syncInBackground() && durableCommits < commits) armTimer();
    }, withinMs);
    timer.unref();
  };

  return {
    committed(synced) {
      commits += 1;
      if (synced) {
        syncLog(logFile());
        durableCommits = commits;
        const failure = takeFailure();
        if (failure !== undefined) throw failure;
        return;
      }
      if (everyCommits > 0 && commits - durableCommits >= everyCommits) syncInBackground();
      armTimer();
    },
    whenDurable() {
      const failure = takeFailure();
      if (failure !== undefined) return Promise.reject(failure);
      if (durableCommits >= commits) return Promise.resolve();
      // A background sync that covers every commit so far is all there is to wait for; one that does
      // not is not waited behind: the caller's own starts beside it.
      if (background !== undefined && background.covers >= commits) return background.done;
      return nextSync();
    },
    close() {
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      if (inFlight === 0) closeLog();
    },
  };
}
