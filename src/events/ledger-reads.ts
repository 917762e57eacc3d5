/**
 * The ledger reads behind `resultPending` for one pass over tasks (an event, a level, a check): each
 * session's deliverability and queue are read at most once per pass, and a failing read is told once
 * and counts as "nothing queued".
 */
import { isTerminalStatus, type Logger, type TaskSnapshot } from '../tasks/index.js';
import type { NotificationLedgerView } from './notification-ledger-view.js';
import { isResultPending, isSupersededDetail } from './result-pending.js';

const NOTHING_QUEUED: ReadonlySet<string> = new Set();

export class LedgerReads {
  readonly #ledger: NotificationLedgerView | undefined;
  readonly #logger: Logger;
  readonly #generations = new Map<string, number | undefined>();
  readonly #queued = new Map<string, ReadonlySet<string>>();
  #warned = false;

  constructor(ledger: NotificationLedgerView | undefined, logger: Logger) {
    this.#ledger = ledger;
    this.#logger = logger;
  }

  /**
   * Whether `task`'s result is pending (`notifying`: the notifier holds its claim and queued nothing
   * yet). Without a ledger: it ended and nobody took its delivery claim.
   */
  resultPending(task: TaskSnapshot, notifying: boolean): boolean {
    if (!isTerminalStatus(task.status)) return false;
    if (this.#ledger === undefined) return !task.reported;
    const sessionId = task.ownerSessionId;
    // Ownerless work has nobody to tell.
    if (sessionId === undefined) return false;
    const sessionGeneration = this.#generation(sessionId);
    const facts = {
      status: task.status,
      reported: task.reported,
      stopInitiator: task.stopInitiator,
      branchGeneration: task.branchGeneration,
      superseded: isSupersededDetail(task.detail),
    };
    if (isResultPending(facts, { sessionGeneration, queued: false, notifying })) return true;
    // The queue is read only when it decides: an ended task of a deliverable session is pending if queued.
    if (sessionGeneration === undefined) return false;
    return isResultPending(facts, {
      sessionGeneration,
      queued: this.#queuedIds(sessionId).has(task.id),
      notifying,
    });
  }

  #generation(sessionId: string): number | undefined {
    if (!this.#generations.has(sessionId)) {
      this.#generations.set(
        sessionId,
        this.#read(() => this.#ledger?.deliverableGeneration(sessionId)),
      );
    }
    return this.#generations.get(sessionId);
  }

  #queuedIds(sessionId: string): ReadonlySet<string> {
    let ids = this.#queued.get(sessionId);
    if (ids === undefined) {
      ids = this.#read(() => this.#ledger?.queuedTaskIds(sessionId)) ?? NOTHING_QUEUED;
      this.#queued.set(sessionId, ids);
    }
    return ids;
  }

  #read<Value>(read: () => Value): Value | undefined {
    try {
      return read();
    } catch (error) {
      if (!this.#warned) {
        this.#warned = true;
        this.#logger.warn('reading the notification ledger for pending results failed', {
          error: error instanceof Error ? error.message : String(error),
        });
      }
      return undefined;
    }
  }
}
