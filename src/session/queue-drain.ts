/**
 * The drain: works a session's queue one command at a time while the session is idle — applies a
 * configuration, runs a person's turn (queued notifications become context ahead of the words), or runs
 * one turn for a batch of notifications of the head's priority — until nothing left would wake it.
 * `DrainScheduler` decides when it runs; only one drain works the queue at a time.
 */
import type { CommandQueue } from './command-queue.js';
import type { DrainScheduler } from './drain-scheduler.js';
import type { NotificationInbox } from './notification-inbox.js';
import { BACKGROUND_TURN_SOURCE, STEER_SOURCE, type TurnRunner } from './turn-runner.js';

/** What the drain needs from its session. */
export interface QueueDrainContext {
  readonly queue: CommandQueue;
  readonly inbox: NotificationInbox;
  readonly turns: TurnRunner;
  readonly scheduler: DrainScheduler;
  isClosing(): boolean;
  isClosed(): boolean;
}

export class QueueDrain {
  readonly #context: QueueDrainContext;
  /** True while the drain applies a configuration or runs a turn. */
  #working = false;
  #idleWaiters: Array<() => void> = [];

  constructor(context: QueueDrainContext) {
    this.#context = context;
  }

  /** True while the drain works the queue (surfaces reserve nothing meanwhile). */
  get working(): boolean {
    return this.#working;
  }

  /** Resolves when no turn runs and nothing that would start one is queued (at once once closed). */
  whenIdle(): Promise<void> {
    if (this.#isSettledIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Resolves the `whenIdle` waiters if the session is idle now. */
  wakeIdleWaiters(): void {
    if (!this.#isSettledIdle()) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const wake of waiters) wake();
  }

  async run(): Promise<void> {
    // A drain that is applying a configuration looks at the queue again when it is done: a second one
    // would start the next turn before the configuration it must run under.
    if (this.#working) return;
    this.#working = true;
    const { queue, inbox, turns, scheduler } = this.#context;
    try {
      while (!turns.running && !this.#context.isClosing() && !scheduler.held) {
        const head = queue.peekWake();
        if (!head) break;
        if (head.kind === 'configure') {
          queue.take(head);
          try {
            await head.apply();
            head.settle();
          } catch (error) {
            head.settle(error);
          }
          continue;
        }
        if (head.kind === 'user_input') {
          queue.take(head);
          // Queued notifications (quiet ones included) become context ahead of the person's words.
          const context = inbox.reserveForTurn({ source: STEER_SOURCE, form: 'each' });
          if (await turns.run('user', context, head)) {
            // The store failed to record a delivery: the next turn would fail the same way at once.
            scheduler.retry();
            break;
          }
          continue;
        }
        const batch = inbox.reserveForTurn({
          source: BACKGROUND_TURN_SOURCE,
          form: 'batch',
          upTo: head.priority,
        });
        if (await turns.run('background_task', batch, undefined)) {
          scheduler.retry();
          break;
        }
      }
    } finally {
      this.#working = false;
    }
    this.wakeIdleWaiters();
  }

  #isSettledIdle(): boolean {
    if (this.#context.isClosed()) return true;
    const { queue, turns, scheduler } = this.#context;
    return !turns.running && !this.#working && !scheduler.scheduled && (scheduler.held || !queue.peekWake());
  }
}
