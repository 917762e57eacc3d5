/**
 * When a SQLite store's write-ahead log is checkpointed (copied back into the database file: two fsyncs,
 * and every page the log holds rewritten).
 *
 * With `every` 0 (the default) SQLite does it inside whichever commit crosses its threshold. With N the
 * connection's automatic checkpoint is off, and every N commits the checkpointer thread — a worker thread
 * with a connection of its own, started on first need, never keeping the process alive — runs a passive
 * one beside the event loop. What was committed while it ran is finished inline once the log passed
 * `CHECKPOINT_FINISH_FRAMES` (SQLite reuses the log only once all of it is in the database), and at the
 * latest every `CHECKPOINT_LAG_FACTOR` intervals, or at every interval if the thread cannot run; at twice
 * that with the thread still at it, the commit waits for it: the WAL stays bounded whatever it does.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';

/**
 * The checkpointer's code: one connection, one passive checkpoint per message; back go the error (or
 * null), the frames the log held and how many of them are now in the database file.
 */
const CHECKPOINTER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
let database;
parentPort.on('message', (message) => {
  if (message === 'close') {
    try { database?.close(); } catch {}
    parentPort.close();
    return;
  }
  let answer;
  try {
    if (database === undefined) {
      database = new Database(workerData.file, { timeout: workerData.busyTimeoutMs, fileMustExist: true });
      database.pragma('wal_autocheckpoint = 0');
    }
    // A connection opens the log on its first read: a checkpoint before that finds none to copy.
    database.prepare('SELECT count(*) FROM sqlite_master').get();
    const [row] = database.pragma('wal_checkpoint(PASSIVE)');
    answer = { error: null, log: row.log, checkpointed: row.checkpointed };
  } catch (failure) {
    answer = { error: String((failure && failure.message) || failure), log: 0, checkpointed: 0 };
  }
  parentPort.postMessage(answer);
});
`;

const driverPath = (() => {
  try {
    return createRequire(import.meta.url).resolve('better-sqlite3');
  } catch {
    return undefined;
  }
})();

/** What a checkpoint on the thread did: its error, the log's frames and those now in the database. */
interface CheckpointOutcome {
  readonly error: string | null;
  readonly log: number;
  readonly checkpointed: number;
}

/** A thread that runs passive checkpoints on a connection of its own, one at a time. */
class Checkpointer {
  readonly #file: string;
  readonly #busyTimeoutMs: number;
  #worker: Worker | undefined;
  #failed = driverPath === undefined;
  #inFlight = false;
  #onDone: ((outcome: CheckpointOutcome) => void) | undefined;

  /** `onDone` runs when a requested checkpoint ended. */
  constructor(file: string, busyTimeoutMs: number, onDone: (outcome: CheckpointOutcome) => void) {
    this.#file = file;
    this.#busyTimeoutMs = busyTimeoutMs;
    this.#onDone = onDone;
  }

  get inFlight(): boolean {
    return this.#inFlight;
  }

  /** Asks for a checkpoint; false if the thread cannot run one (then the caller checkpoints). */
  request(): boolean {
    if (this.#failed) return false;
    if (this.#inFlight) return true;
    try {
      this.#worker ??= this.#start();
      this.#worker.postMessage('checkpoint');
      this.#inFlight = true;
      return true;
    } catch {
      this.#fail();
      return false;
    }
  }

  close(): void {
    this.#onDone = undefined;
    const worker = this.#worker;
    this.#worker = undefined;
    this.#failed = true;
    if (worker === undefined) return;
    // Its connection closes after any checkpoint it is running; the thread then ends by itself.
    worker.postMessage('close');
  }

  #start(): Worker {
    const worker = new Worker(CHECKPOINTER_SOURCE, {
      eval: true,
      workerData: { driver: driverPath, file: this.#file, busyTimeoutMs: this.#busyTimeoutMs },
    });
    worker.on('message', (outcome: CheckpointOutcome) => {
      this.#inFlight = false;
      this.#onDone?.(outcome);
    });
    worker.on('error', () => this.#fail());
    worker.on('exit', () => {
      if (this.#worker === worker) this.#fail();
    });
    // After the listeners: adding a 'message' listener refs the thread again.
    worker.unref();
    return worker;
  }

  #fail(): void {
    this.#failed = true;
    this.#inFlight = false;
    const worker = this.#worker;
    this.#worker = undefined;
    void worker?.terminate().catch(() => {});
  }
}

/**
 * At most this many times `every` commits between two checkpoints of the store's connection of its own,
 * whatever the thread does (stuck, or never finishing the log).
 */
export const CHECKPOINT_LAG_FACTOR = 8;

/**
 * Log frames past which the thread's checkpoint is finished inline. SQLite starts the log over only once
 * every frame in it is in the database file, and commits made while the thread checkpoints are not: without
 * this a log written to without pause would never be reused and would grow without end. 4096 frames, 16 MiB
 * of 4 KiB pages.
 */
export const CHECKPOINT_FINISH_FRAMES = 4096;

export interface CheckpointScheduleOptions {
  /** The database file, for the thread's connection. */
  readonly file: string;
  readonly busyTimeoutMs: number;
  /** Commits between two checkpoints; 0 leaves checkpoints to SQLite, inside the commits. */
  readonly every: number;
  /** Whether the checkpointer thread may be started (false: every checkpoint runs inline). */
  readonly thread?: boolean;
  /** See `CHECKPOINT_FINISH_FRAMES` (a test sets fewer). */
  readonly finishFrames?: number;
  /** Called after each checkpoint that finished, with where it ran. */
  readonly onCheckpoint?: (where: 'thread' | 'inline') => void;
}

export interface CheckpointSchedule {
  /** A transaction committed on the connection. */
  committed(): void;
  /** Stops the thread; the connection is the caller's to close. */
  close(): void;
}

export function createCheckpointSchedule(
  database: Database.Database,
  options: CheckpointScheduleOptions,
): CheckpointSchedule {
  const { every } = options;
  if (every === 0) return { committed() {}, close() {} };
  database.pragma('wal_autocheckpoint = 0');
  const bound = every * CHECKPOINT_LAG_FACTOR;
  const finishFrames = options.finishFrames ?? CHECKPOINT_FINISH_FRAMES;
  // Marks on the count of commits: how far the last checkpoint reached (asked for, or run here), where
  // the thread's checkpoint in flight was asked for, and where this connection last checkpointed itself.
  let commits = 0;
  let checkpointedAt = 0;
  let requestedAt = 0;
  let inlineAt = 0;
  let finishAfterThread = false;
  let closed = false;

  /**
   * A checkpoint on this connection: passive (refused at once while another holds the lock), or `FULL`,
   * which waits for that lock (the busy timeout) — the thread's checkpoint — and then copies the whole log.
   * True if it ran. Refused while the thread checkpoints, the marks stay, towards the waiting checkpoint.
   */
  const inline = (mode: 'PASSIVE' | 'FULL' = 'PASSIVE'): boolean => {
    let done = false;
    try {
      const [row] = database.pragma(`wal_checkpoint(${mode})`) as Array<{ busy: number }>;
      done = row?.busy === 0;
    } catch {
      // The disk refused it: tried again after the next `every` commits; the commit itself is done.
    }
    if (done) options.onCheckpoint?.('inline');
    if (done || thread?.inFlight !== true) {
      checkpointedAt = commits;
      inlineAt = commits;
      finishAfterThread = false;
    }
    return done;
  };

  const thread =
    options.thread === false
      ? undefined
      : new Checkpointer(options.file, options.busyTimeoutMs, (outcome) => {
          checkpointedAt = Math.max(checkpointedAt, requestedAt);
          if (outcome.error !== null || closed) return;
          options.onCheckpoint?.('thread');
          // The thread saw the log as it was when it began: what was committed while it ran is left, so the
          // log is never all in the database and never starts over. Past `finishFrames` that remainder (a
          // few frames) is checkpointed here, and the next commit reuses the log from its start.
          if (outcome.log >= finishFrames || finishAfterThread) inline();
        });

  return {
    committed() {
      commits += 1;
      if (commits - inlineAt >= bound) {
        // While the thread holds the checkpoint lock this one is refused; the thread's end then finishes
        // it (a thread that is done, its answer not read yet, has let go of the lock). Should commits run
        // on to twice the bound meanwhile, this commit waits for the thread: the log stays bounded, at
        // the price of the loop waiting, only when writes outrun the checkpoints.
        if (inline() || thread?.inFlight !== true) return;
        finishAfterThread = true;
        if (commits - inlineAt >= 2 * bound) inline('FULL');
        return;
      }
      if (commits - checkpointedAt < every) return;
      const idle = thread !== undefined && !thread.inFlight;
      if (thread?.request() !== true) inline();
      else if (idle) requestedAt = commits;
    },
    close() {
      closed = true;
      thread?.close();
    },
  };
}
