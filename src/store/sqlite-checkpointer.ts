/**
 * The checkpointer thread of a SQLite store: a worker thread with a connection of its own that runs one
 * passive checkpoint of the write-ahead log per request, beside the event loop (`createCommitPolicy` asks).
 * Started on first need; never keeps a process alive; ends with its store.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

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
export interface CheckpointOutcome {
  readonly error: string | null;
  readonly log: number;
  readonly checkpointed: number;
}

/** A thread that runs passive checkpoints on a connection of its own, one at a time. */
export class Checkpointer {
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

  get available(): boolean {
    return !this.#failed;
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
