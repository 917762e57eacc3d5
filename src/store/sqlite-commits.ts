/**
 * When a SQLite commit reaches the disk, and where the write-ahead log is checkpointed.
 *
 * Syncing. The connection commits with `synchronous=NORMAL`: a commit is in the WAL when it returns (a
 * killed process loses nothing) without waiting for the disk. On a store opened `full` an immediate
 * commit then syncs the log file itself (`fdatasync`, what FULL does inside the commit), and a deferred
 * one does not: it costs no fsync and no switch of the connection's mode, and the next immediate commit's
 * sync covers it and every commit before; `whenDurable` syncs in the thread pool instead, one sync for
 * every caller waiting then (group commit). A nested call that names no durability joins the outer one's;
 * a nested immediate one makes the outer commit sync. (Another process may read an immediate commit the
 * moment before its sync; this one acts on it only after.)
 *
 * Checkpoints. Copying the WAL back into the database file takes two fsyncs and rewrites every page the
 * log holds; SQLite runs one inside whichever commit crosses its threshold, which made one write in a
 * few hundred take milliseconds. That stays so with `checkpointEveryCommits: 0` (the default). With N,
 * the connection's automatic checkpoint is off, and every N commits a checkpointer thread with a
 * connection of its own runs a passive one beside the event loop (started on first need, never keeping
 * the process alive). What was committed while it ran is finished inline once the log passed
 * `CHECKPOINT_FINISH_FRAMES` (SQLite reuses the log only once all of it is in the database), and at the
 * latest every `CHECKPOINT_LAG_FACTOR` intervals, or at every interval if the thread cannot run; at twice
 * that with the thread still at it, the commit waits for it: the WAL stays bounded whatever it does.
 */
import { closeSync, fdatasync, fdatasyncSync, fsyncSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import type Database from 'better-sqlite3';
import type { StoreDurability } from './session-store.js';
import { Checkpointer } from './sqlite-checkpointer.js';

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
   * pool, shared by every caller that asked before it started. At once when nothing waits for the disk.
   */
  whenDurable(): Promise<void>;
  /** Closes the log file and stops the checkpointer. The connection is the caller's to close. */
  close(): void;
}

/**
 * At most this many times `checkpointEveryCommits` commits between two checkpoints of this connection's
 * own, whatever the thread does (stuck, or never finishing the log).
 */
export const CHECKPOINT_LAG_FACTOR = 8;

/**
 * Log frames past which the thread's checkpoint is finished inline. SQLite starts the log over only once
 * every frame in it is in the database file, and commits made while the thread checkpoints are not: without
 * this a log written to without pause would never be reused and would grow without end. 4096 frames, 16 MiB
 * of 4 KiB pages.
 */
export const CHECKPOINT_FINISH_FRAMES = 4096;

export function createCommitPolicy(database: Database.Database, options: CommitPolicyOptions): CommitPolicy {
  const transaction = database.transaction((body: () => unknown) => body());
  const full = options.synchronous === 'full';
  const syncLog = options.syncLog ?? fdatasyncSync;
  const every = options.checkpointEveryCommits;
  const finishFrames = options.checkpointFinishFrames ?? CHECKPOINT_FINISH_FRAMES;
  database.pragma('synchronous = NORMAL');
  if (every > 0) database.pragma('wal_autocheckpoint = 0');
  let logFd: number | undefined;
  let syncAfter = false;
  let commitsSinceCheckpoint = 0;
  // Commits since this connection last checkpointed (and so finished the log) itself.
  let commitsSinceInline = 0;
  let finishAfterThread = false;
  // The commits the checkpoint in flight covers: those made before it was asked for.
  let covered = 0;
  const syncLogAsync = options.syncLogAsync ?? fdatasync;
  // Commits made, and how many of them are known to be on disk.
  let commits = 0;
  let durableCommits = 0;
  /** The thread-pool sync running, and the next one (taken by every caller that comes meanwhile). */
  let running: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  let closed = false;
  let closeLogWhenIdle = false;
  const checkpointer =
    every > 0 && options.checkpointThread !== false
      ? new Checkpointer(options.file, options.busyTimeoutMs, (outcome) => {
          commitsSinceCheckpoint = Math.max(0, commitsSinceCheckpoint - covered);
          covered = 0;
          if (outcome.error !== null || closed) return;
          options.onCheckpoint?.('thread');
          // The thread saw the log as it was when it began: what was committed while it ran is left, so the
          // log is never all in the database and never starts over. Past `finishFrames` that remainder (a
          // few frames) is checkpointed here, and the next commit reuses the log from its start.
          if (outcome.log >= finishFrames || finishAfterThread) checkpointInline();
        })
      : undefined;

  const logFile = () => {
    // The log exists once a commit wrote to it; while this connection is open SQLite never deletes it.
    if (logFd === undefined) {
      logFd = openSync(`${options.file}-wal`, 'r');
      // The log may be new: its directory entry reaches the disk once, as SQLite syncs a new file's directory.
      const directory = openSync(dirname(options.file), 'r');
      try {
        fsyncSync(directory);
      } finally {
        closeSync(directory);
      }
    }
    return logFd;
  };
  const sync = () => {
    syncLog(logFile());
    durableCommits = commits;
  };

  /** One sync in the thread pool covering every commit made before it starts. */
  const syncInPool = (): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      if (closed) {
        reject(new Error('the store was closed before its log was synced'));
        return;
      }
      const covers = commits;
      let fd: number;
      try {
        fd = logFile();
      } catch (error) {
        reject(error);
        return;
      }
      syncLogAsync(fd, (error) => {
        // After a close no sync uses the descriptor again (the next one is refused first).
        if (closeLogWhenIdle) closeLog();
        if (error) {
          reject(error);
          return;
        }
        durableCommits = Math.max(durableCommits, covers);
        resolve();
      });
    });

  const closeLog = () => {
    if (logFd !== undefined) closeSync(logFd);
    logFd = undefined;
    closeLogWhenIdle = false;
  };

  /**
   * A checkpoint on this connection: passive (refused at once while another holds the lock), or `FULL`,
   * which waits for that lock (the busy timeout) — the thread's checkpoint — and then copies the whole log.
   * True if it ran.
   */
  const checkpointInline = (mode: 'PASSIVE' | 'FULL' = 'PASSIVE'): boolean => {
    let done = false;
    try {
      const [row] = database.pragma(`wal_checkpoint(${mode})`) as Array<{ busy: number }>;
      done = row?.busy === 0;
    } catch {
      // The disk refused it: tried again after the next `every` commits; the commit itself is done.
    }
    if (done) options.onCheckpoint?.('inline');
    // Refused while the thread checkpoints: the count goes on, towards the waiting checkpoint.
    if (done || checkpointer?.inFlight !== true) {
      commitsSinceCheckpoint = 0;
      commitsSinceInline = 0;
      covered = 0;
      finishAfterThread = false;
    }
    return done;
  };

  const committed = (synced: boolean) => {
    commits += 1;
    // A sync that fails (an I/O error) throws to the caller although the commit is in the log: it is not
    // known to be on disk, and a store failure is what the caller handles (it keeps and retries the write).
    if (synced) sync();
    if (every === 0) return;
    commitsSinceCheckpoint += 1;
    commitsSinceInline += 1;
    // The bound whatever the thread does: it may be stuck, or its checkpoints never finish the log.
    const bound = every * CHECKPOINT_LAG_FACTOR;
    if (commitsSinceInline >= bound) {
      // While the thread holds the checkpoint lock this one is refused; the thread's end then finishes
      // it (a thread that is done, its answer not read yet, has let go of the lock). Should commits run
      // on to twice the bound meanwhile, this commit waits for the thread: the log stays bounded, at the
      // price of the loop waiting, only when writes outrun the checkpoints.
      if (checkpointInline() || checkpointer?.inFlight !== true) return;
      finishAfterThread = true;
      if (commitsSinceInline >= 2 * bound) checkpointInline('FULL');
      return;
    }
    if (commitsSinceCheckpoint < every) return;
    const idle = checkpointer !== undefined && !checkpointer.inFlight;
    const thread = checkpointer?.request() ?? false;
    if (thread && idle) covered = commitsSinceCheckpoint;
    if (!thread) checkpointInline();
  };

  return {
    transaction<T>(body: () => T, durability?: StoreDurability): T {
      if (database.inTransaction) {
        if (durability === 'immediate') syncAfter = true;
        return transaction.immediate(body) as T;
      }
      syncAfter = durability !== 'deferred';
      const value = transaction.immediate(body) as T;
      committed(full && syncAfter);
      return value;
    },
    whenDurable(): Promise<void> {
      if (!full || durableCommits >= commits) return Promise.resolve();
      // A sync already running may have started before the last commit: the next one covers it.
      next ??= (running ?? Promise.resolve())
        .catch(() => {})
        .then(() => {
          next = undefined;
          running = syncInPool();
          const current = running;
          void current
            .catch(() => {})
            .then(() => {
              if (running === current) running = undefined;
            });
          return current;
        });
      return next;
    },
    close() {
      closed = true;
      checkpointer?.close();
      // A sync in the thread pool still holds the descriptor: it is closed when that sync returns.
      if (running !== undefined || next !== undefined) closeLogWhenIdle = true;
      else closeLog();
    },
  };
}
