/**
 * The feed's watch over pending results: which tracked works have a pending result now, the notifier
 * claims the change feed showed (`EndClaims`), the ledger's change signals, and the periodic re-read
 * while a result is pending. The feed derives and publishes facts; this says when to derive them again.
 */
import type { Disposer, Logger, TaskSnapshot } from '../tasks/index.js';
import type { BackgroundTaskFacts } from './background-task-facts.js';
import { EndClaims } from './end-claims.js';
import { LedgerReads } from './ledger-reads.js';
import type { NotificationLedgerView } from './notification-ledger-view.js';

/** What the watch needs from its feed. */
export interface PendingResultsContext {
  readonly ledger: NotificationLedgerView | undefined;
  /** The re-read period while a result is pending (`ledgerCheckMs`). */
  readonly checkMs: number;
  readonly logger: Logger;
  now(): number;
  /** The session of a tracked task (null: ownerless), undefined when the feed does not track it. */
  sessionOf(taskId: string): string | null | undefined;
  /** Derives a tracked task's facts again with `reads` and publishes what changed. */
  refresh(taskId: string, reads: LedgerReads): void;
}

export class PendingResults {
  readonly #context: PendingResultsContext;
  /** Who took each ended task's claim, as far as the change feed shows it. */
  readonly #claims: EndClaims;
  /** The tracked tasks whose result is pending as last published. */
  readonly #pending = new Set<string>();
  readonly #unsubscribe: Disposer | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  #disposed = false;

  constructor(context: PendingResultsContext) {
    this.#context = context;
    this.#claims = new EndClaims(context.now);
    this.#unsubscribe = context.ledger?.subscribe((sessionId, taskId) => this.#onChange(sessionId, taskId));
  }

  /** Ledger reads for one pass over tasks: each session's queue is read at most once. */
  reads(): LedgerReads {
    return new LedgerReads(this.#context.ledger, this.#context.logger);
  }

  /** Whether `task`'s result is pending, read through `reads`. */
  resultPending(task: TaskSnapshot, reads: LedgerReads): boolean {
    return reads.resultPending(task, this.#claims.notifying(task));
  }

  /** Follows a snapshot of a background task (each change, in order). */
  observe(task: TaskSnapshot): void {
    this.#claims.observe(task);
  }

  /** Facts the feed now holds for a task. */
  note(facts: BackgroundTaskFacts): void {
    if (facts.resultPending) this.#pending.add(facts.taskId);
    else this.#pending.delete(facts.taskId);
    this.#updateChecks();
  }

  /** The feed no longer tracks the task. */
  forget(taskId: string): void {
    this.#pending.delete(taskId);
    this.#claims.forget(taskId);
    this.#updateChecks();
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#unsubscribe?.();
    this.#stopChecks();
  }

  /**
   * A session's notifications changed: derive again the task named, or every pending result of the
   * session (a delivery names no task; a closing session can tell none of them any more).
   */
  #onChange(sessionId: string, taskId: string | undefined): void {
    if (this.#disposed) return;
    const reads = this.reads();
    if (taskId !== undefined) {
      if (this.#context.sessionOf(taskId) !== sessionId) return;
      // Queued, refused or discarded: the ledger says the rest from now on.
      this.#claims.settle(taskId);
      this.#context.refresh(taskId, reads);
      return;
    }
    for (const id of [...this.#pending]) {
      if (this.#context.sessionOf(id) === sessionId) this.#context.refresh(id, reads);
    }
  }

  /** The periodic re-read, for deliveries that send no signal (another process's). */
  #check(): void {
    if (this.#disposed) return;
    this.#context.ledger?.refresh?.();
    // A notifier that queued nothing within a check period is not queueing any more.
    this.#claims.expire(this.#context.checkMs);
    const reads = this.reads();
    for (const id of [...this.#pending]) this.#context.refresh(id, reads);
  }

  #updateChecks(): void {
    if (this.#context.ledger === undefined || this.#disposed) return;
    const needed = this.#pending.size > 0;
    if (needed && this.#timer === undefined) {
      this.#timer = setInterval(() => this.#check(), this.#context.checkMs);
      this.#timer.unref?.();
    } else if (!needed) {
      this.#stopChecks();
    }
  }

  #stopChecks(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
