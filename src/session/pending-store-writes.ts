/**
 * Writes the store refused, kept in memory and run again, in order, with back-off until the store takes
 * them: task records (an ending above all) and the admissions of their notifications. While anything
 * waits here the store is failing — the session runtime refuses new background work and tells the model
 * — and once the last one is written everything that was kept has reached the store, in the order it
 * happened. A newer write with the same key replaces a waiting one (a task's newest record wins).
 *
 * Only store failures are kept (disk full, read-only, I/O errors, a lock held too long, or anything that
 * is not an Errand caller error); a write the store refuses on its merits (bad input) throws as before.
 */
import { type CancelTimer, type Clock, ErrandError, type Logger } from '../tasks/index.js';

/** The store is failing: what the first refused write said, since when, and how much waits. */
export interface StoreFailure {
  /** The error of the first write refused in this episode. */
  readonly error: unknown;
  /** When it was refused (clock milliseconds). */
  readonly since: number;
  /** Writes waiting to be run again. */
  readonly pending: number;
}

export interface PendingStoreWritesContext {
  readonly clock: Clock;
  /** The first retry after this long, doubling with each failed retry. */
  readonly retryMs: number;
  /** The longest wait between two retries. */
  readonly retryMaxMs: number;
  /** The most writes kept; beyond it the newest is dropped with a warning. */
  readonly maxPending: number;
  readonly logger: Logger;
  /** The store started failing (`failure`) or took every waiting write (`undefined`). */
  changed(failure: StoreFailure | undefined): void;
}

/** The most doublings of the retry delay; the cap is reached long before. */
const MAX_DOUBLINGS = 30;

/** True for a failure a later attempt may not meet: anything but an Errand error the caller caused. */
export function isStoreFailure(error: unknown): boolean {
  return !(ErrandError.isInstance(error) && error.fault === 'caller');
}

export type WriteOutcome<T> = { readonly written: true; readonly value: T } | { readonly written: false };

export class PendingStoreWrites {
  readonly #context: PendingStoreWritesContext;
  readonly #waiting = new Map<string, () => unknown>();
  #failure: { error: unknown; since: number } | undefined;
  #failedRetries = 0;
  #cancelTimer: CancelTimer | undefined;
  #flushing = false;
  #disposed = false;

  constructor(context: PendingStoreWritesContext) {
    this.#context = context;
  }

  /** Undefined while the store takes every write. */
  get failure(): StoreFailure | undefined {
    if (this.#failure === undefined) return undefined;
    return { ...this.#failure, pending: this.#waiting.size };
  }

  /**
   * Runs `write` now — unless earlier writes still wait, then it waits behind them and they are tried
   * at once, in order. If the store refuses it, it is kept and retried. Returns its value when it was
   * written by this call. A caller error (bad input) is thrown, not kept.
   */
  write<T>(key: string, write: () => T): WriteOutcome<T> {
    if (this.#waiting.size === 0 && this.#failure === undefined) {
      try {
        return { written: true, value: write() };
      } catch (error) {
        if (!isStoreFailure(error)) throw error;
        this.#keep(key, write);
        this.#failed(error);
        return { written: false };
      }
    }
    this.#keep(key, write);
    // The store may be back: try at once, without counting a refusal against the back-off.
    this.#flush(false);
    return { written: false };
  }

  /**
   * Keeps a write the store just refused with `error` (its caller could not wait for it: what it records
   * already happened), to run again in order. A caller error is thrown instead.
   */
  keepRefused(key: string, write: () => unknown, error: unknown): void {
    if (!isStoreFailure(error)) throw error;
    this.#keep(key, write);
    this.#failed(error);
  }

  /** Forgets waiting writes whose key `select` picks. */
  forget(select: (key: string) => boolean): void {
    for (const key of [...this.#waiting.keys()]) if (select(key)) this.#waiting.delete(key);
    if (this.#waiting.size === 0 && this.#failure !== undefined) this.#recovered();
  }

  /** Runs the waiting writes now, in order, stopping at the first the store refuses. */
  flush(): void {
    this.#flush(true);
  }

  #flush(retry: boolean): void {
    if (this.#flushing || this.#disposed) return;
    this.#flushing = true;
    try {
      for (const [key, write] of this.#waiting) {
        try {
          write();
        } catch (error) {
          if (isStoreFailure(error)) {
            if (retry || this.#failure === undefined) this.#failed(error);
            return;
          }
          this.#context.logger.warn(`a kept store write (${key}) was refused for good; it is dropped`, {
            error: error instanceof Error ? error.message : String(error),
          });
        }
        this.#waiting.delete(key);
      }
      if (this.#failure !== undefined) this.#recovered();
    } finally {
      this.#flushing = false;
    }
  }

  /** Tries once more, then stops retrying; what still waits is reported and dropped. */
  dispose(): void {
    if (this.#disposed) return;
    this.flush();
    this.#disposed = true;
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    if (this.#waiting.size > 0) {
      this.#context.logger.warn(
        `the session store still refused ${this.#waiting.size} write(s) when the runtime stopped; they are lost`,
        { keys: [...this.#waiting.keys()].slice(0, 20) },
      );
      this.#waiting.clear();
    }
  }

  #keep(key: string, write: () => unknown): void {
    if (!this.#waiting.has(key) && this.#waiting.size >= this.#context.maxPending) {
      this.#context.logger.warn(
        `the session store has refused writes for long: ${this.#waiting.size} wait already (the limit); this one is dropped`,
        { key },
      );
      return;
    }
    // A newer write of the same record goes where the older one waited: the order of keys holds.
    this.#waiting.set(key, write);
  }

  #failed(error: unknown): void {
    const first = this.#failure === undefined;
    if (first) {
      this.#failure = { error, since: this.#context.clock.now() };
      this.#failedRetries = 0;
      this.#context.logger.warn('the session store refused a write; it is kept in memory and retried', {
        error: error instanceof Error ? error.message : String(error),
        ...(ErrandError.isInstance(error) ? { code: error.code } : {}),
      });
    } else {
      this.#failedRetries += 1;
    }
    this.#arm();
    if (first) this.#context.changed(this.failure);
  }

  #recovered(): void {
    this.#failure = undefined;
    this.#failedRetries = 0;
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    this.#context.changed(undefined);
  }

  #arm(): void {
    if (this.#disposed) return;
    this.#cancelTimer?.();
    const { retryMs, retryMaxMs } = this.#context;
    const delay = Math.min(retryMaxMs, retryMs * 2 ** Math.min(this.#failedRetries, MAX_DOUBLINGS));
    const cancel = this.#context.clock.schedule(delay, () => {
      if (this.#cancelTimer !== cancel) return;
      this.#cancelTimer = undefined;
      this.flush();
    });
    this.#cancelTimer = cancel;
  }
}
