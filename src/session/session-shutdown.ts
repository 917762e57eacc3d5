/**
 * A session's shutdown, in order: stop admitting notifications, drop the due drain, interrupt the turn,
 * run the shutdown sweeps (workflow runs first), dispose the owner (cancelling its tasks and waiting for
 * them), discard what is still queued or reserved, wait for the interrupted turn, and store the session
 * closed. Every step is guarded: whatever fails, queued inputs are answered and the session ends closed.
 */
import { describeError, type Logger } from '../tasks/index.js';
import type { CommandQueue } from './command-queue.js';
import type { DrainScheduler } from './drain-scheduler.js';
import type { NotificationInbox } from './notification-inbox.js';
import { SessionClosedError } from './session-errors.js';
import type { SessionLedger } from './session-ledger.js';
import type { TurnRunner } from './turn-runner.js';

/** What the shutdown needs from its session. */
/** What shutdown ends of the session itself: its state, its work, its record. */
export interface ClosingSession {
  setState(state: 'shutting_down' | 'closed'): void;
  /** The session's shutdown sweeps (stop workflow runs). */
  sweep(): Promise<void> | void;
  /** Disposes the owner: cancels its live tasks and waits for their terminal records. */
  disposeOwner(): Promise<void>;
  /** Stores the session as closed. */
  storeClosed(): void;
  /** The session reached `closed`: nothing is told any more. */
  closed(): void;
}

export interface SessionShutdownContext {
  readonly sessionId: string;
  readonly logger: Logger;
  /** What is still queued: taken out, its inputs and configurations settled with `SESSION_CLOSED`. */
  readonly queue: Pick<CommandQueue, 'remove'>;
  /** The running turn: interrupted, then waited for (unless the close comes from inside it). */
  readonly turn: Pick<TurnRunner, 'interrupt' | 'ended' | 'calledFromOwnTurn'>;
  /** The drain that is due: dropped. */
  readonly scheduler: Pick<DrainScheduler, 'cancel'>;
  /** What surfaces still hold reserved: forgotten, and discarded with the queue's entries. */
  readonly inbox: Pick<NotificationInbox, 'dropReservations'>;
  readonly ledger: Pick<SessionLedger, 'discardEntries'>;
  readonly session: ClosingSession;
}

export class SessionShutdown {
  readonly #context: SessionShutdownContext;
  #closing: Promise<void> | undefined;
  /** Resolves once every step ran except waiting for the turn (what a close from the turn gets). */
  #stepsDone: Promise<void> | undefined;

  constructor(context: SessionShutdownContext) {
    this.#context = context;
  }

  /** True once shutdown began. */
  get begun(): boolean {
    return this.#closing !== undefined;
  }

  /**
   * Begins shutdown (idempotent). Resolves when the session is closed — or, called from inside the
   * session's own running turn, which cannot end while its caller waits, once every other step ran.
   */
  begin(): Promise<void> {
    if (this.#closing === undefined) {
      let start!: () => void;
      const started = new Promise<void>((resolve) => {
        start = resolve;
      });
      let stepsDone!: () => void;
      this.#stepsDone = new Promise<void>((resolve) => {
        stepsDone = resolve;
      });
      // Set before any step runs, so whatever the steps trigger already sees a closing session.
      this.#closing = started.then(() => this.#closeNow(stepsDone));
      start();
    }
    if (this.#context.turn.calledFromOwnTurn() && this.#stepsDone) return this.#stepsDone;
    return this.#closing;
  }

  async #closeNow(stepsDone: () => void): Promise<void> {
    try {
      await this.#runSteps();
    } finally {
      stepsDone();
    }
    // The interrupted turn may still be finishing a model request or a tool call that ignores the abort.
    for (let ended = this.#context.turn.ended; ended; ended = this.#context.turn.ended) await ended;
    await this.#step('storing it as closed failed', () => this.#context.session.storeClosed());
    this.#context.session.setState('closed');
    this.#context.session.closed();
  }

  async #runSteps(): Promise<void> {
    const context = this.#context;
    context.session.setState('shutting_down');
    context.scheduler.cancel();
    context.turn.interrupt('session closing');
    await this.#step('a shutdown sweep failed', () => context.session.sweep());
    await this.#step('disposing its owner failed (a cleanup threw)', () => context.session.disposeOwner());
    const leftover = context.queue.remove(() => true);
    // What a surface still holds reserved is not delivered: a commit after this finds it discarded.
    const ledgerIds = context.inbox.dropReservations();
    for (const command of leftover) {
      if (command.kind === 'notification') ledgerIds.push(command.ledgerId);
      if (command.kind === 'user_input') {
        ledgerIds.push(command.ledgerId);
        command.settle(undefined, new SessionClosedError(context.sessionId));
      }
      if (command.kind === 'configure') command.settle(new SessionClosedError(context.sessionId));
    }
    if (ledgerIds.length > 0) {
      await this.#step('discarding its queued entries failed', () =>
        context.ledger.discardEntries(ledgerIds, 'shutdown'),
      );
    }
  }

  async #step(failure: string, step: () => unknown): Promise<void> {
    try {
      await step();
    } catch (error) {
      this.#context.logger.warn(`session ${this.#context.sessionId}: ${failure}`, {
        error: describeError(error),
      });
    }
  }
}
