/**
 * The input side of a session's queue: a person's input (written to the input ledger at once, delivered
 * by its own turn) and configuration changes (barriers that later commands wait behind). Notifications
 * come in through the `NotificationInbox` instead.
 */
import { randomUUID } from 'node:crypto';
import type { LedgerEntry } from '../store/records.js';
import { InvalidArgumentError, type Logger } from '../tasks/index.js';
import type { Tracing } from '../tracing/index.js';
import {
  type CommandQueue,
  type QueuedUserInput,
  type QueuePriority,
  validateQueuePriority,
} from './command-queue.js';
import { SessionClosedError } from './session-errors.js';
import type { TurnOutcome } from './session-events.js';
import type { SessionLedger } from './session-ledger.js';

export interface SendOptions {
  readonly priority?: QueuePriority;
  /** Makes a retried send idempotent. Default: a random key. */
  readonly idempotencyKey?: string;
}

/** What the input side needs from its session. */
export interface SessionInputContext {
  readonly sessionId: string;
  readonly logger: Logger;
  readonly queue: CommandQueue;
  readonly ledger: SessionLedger;
  now(): number;
  isClosing(): boolean;
  calledFromOwnTurn(): boolean;
  /** Something was queued that the drain should look at. */
  wake(): void;
  /** Captures the sender's context: the turn that delivers the input continues it. */
  readonly tracing: Tracing;
}

export class SessionInput {
  readonly #context: SessionInputContext;

  constructor(context: SessionInputContext) {
    this.#context = context;
  }

  /**
   * Queues a person's input. It is written to the input ledger at once and delivered by its own turn,
   * after whatever is ahead of it. Resolves with that turn's outcome.
   */
  send(text: string, options: SendOptions = {}): Promise<TurnOutcome> {
    if (typeof text !== 'string' || text.trim() === '') {
      return Promise.reject(new InvalidArgumentError('text', 'a non-empty string', text));
    }
    if (this.#context.isClosing()) return Promise.reject(new SessionClosedError(this.#context.sessionId));
    let priority: QueuePriority;
    let entry: LedgerEntry | undefined;
    try {
      // A bad option (the store checks the key) or a failing store rejects; send() never throws.
      priority = validateQueuePriority(options?.priority);
      entry = this.#context.ledger.admitInput(
        text,
        priority,
        options?.idempotencyKey ?? `user:${randomUUID()}`,
      );
    } catch (error) {
      return Promise.reject(error);
    }
    if (entry === undefined) {
      return Promise.reject(
        new InvalidArgumentError(
          'idempotencyKey',
          'a key not used before in this session',
          options?.idempotencyKey,
        ),
      );
    }
    const ledgerId = entry.id;
    return new Promise<TurnOutcome>((resolve, reject) => {
      const command: QueuedUserInput = {
        kind: 'user_input',
        priority,
        ledgerId,
        text,
        queuedAt: this.#context.now(),
        ...(this.#context.tracing.enabled ? { traceContext: this.#context.tracing.capture() } : {}),
        settle: (outcome, error) => (error === undefined ? resolve(outcome as TurnOutcome) : reject(error)),
      };
      try {
        this.#context.queue.push(command);
      } catch (error) {
        this.#context.ledger.discardEntries([ledgerId], 'queue_full');
        reject(error);
        return;
      }
      this.#context.wake();
    });
  }

  /**
   * Queues a configuration change (a model switch, a new system prompt). It is a barrier: notifications
   * queued after it wait until it is applied between turns, in order. Resolves once applied — except when
   * called from inside this session's own running turn (a tool): it cannot apply before that turn ends,
   * so it resolves once queued, and an apply that fails is logged.
   */
  configure(
    label: string,
    apply: () => void | Promise<void>,
    priority: QueuePriority = 'next',
  ): Promise<void> {
    if (typeof label !== 'string' || label.trim() === '') {
      return Promise.reject(new InvalidArgumentError('label', 'a non-empty string', label));
    }
    if (typeof apply !== 'function') {
      return Promise.reject(new InvalidArgumentError('apply', 'a function', apply));
    }
    if (this.#context.isClosing()) return Promise.reject(new SessionClosedError(this.#context.sessionId));
    // From inside this session's own turn (a tool switching the model), waiting for the apply would wait
    // for the turn that waits for the tool: the promise then says the change is queued, and an apply
    // that fails later is logged.
    const fromOwnTurn = this.#context.calledFromOwnTurn();
    return new Promise((resolve, reject) => {
      this.#context.queue.push({
        kind: 'configure',
        priority: validateQueuePriority(priority),
        label,
        apply,
        queuedAt: this.#context.now(),
        settle: fromOwnTurn
          ? (error) => {
              if (error !== undefined && !(error instanceof SessionClosedError)) {
                this.#context.logger.warn(
                  `session ${this.#context.sessionId}: configuration "${label}" failed to apply`,
                  {
                    error: error instanceof Error ? error.message : String(error),
                  },
                );
              }
            }
          : (error) => (error === undefined ? resolve() : reject(error)),
      });
      if (fromOwnTurn) resolve();
      this.#context.wake();
    });
  }
}
