/**
 * The session's command queue: priorities `now` / `next` / `later`, FIFO within one. Notifications are
 * drained in batches; a queued configuration command is a barrier that later commands wait behind.
 */

import type { NotificationLane } from '../notifications/index.js';
import { ErrandError, InvalidArgumentError } from '../tasks/index.js';
import type { TraceContext } from '../tracing/index.js';

export type QueuePriority = 'now' | 'next' | 'later';
export const QUEUE_PRIORITIES: readonly QueuePriority[] = ['now', 'next', 'later'];

/** A caller's priority, `next` when none is given; anything else fails naming the field. */
export function validateQueuePriority(priority: QueuePriority | undefined): QueuePriority {
  if (priority === undefined) return 'next';
  if (!QUEUE_PRIORITIES.includes(priority)) {
    throw new InvalidArgumentError('priority', '"now", "next" or "later"', priority);
  }
  return priority;
}

export interface QueuedNotification {
  readonly kind: 'notification';
  readonly priority: QueuePriority;
  readonly ledgerId: number;
  readonly taskId: string;
  readonly label: string;
  readonly text: string;
  readonly lane: NotificationLane;
  readonly branchGeneration: number;
  /** The task's attempt the notification is about, when known. */
  readonly attempt?: number | undefined;
  /**
   * False for a notification about a running task (a workflow's progress): delivering it tells no
   * ending. Default true.
   */
  readonly ending?: boolean | undefined;
  /** The task span's traceparent: the delivery span links to it. */
  readonly traceparent?: string | undefined;
  readonly queuedAt: number;
}

export interface QueuedUserInput {
  readonly kind: 'user_input';
  readonly priority: QueuePriority;
  readonly ledgerId: number;
  readonly text: string;
  readonly queuedAt: number;
  /** The context active when the person's input was sent: the parent of the turn that delivers it. */
  readonly traceContext?: TraceContext | undefined;
  /** Settled when the turn that delivered this input ends. */
  readonly settle: (outcome: unknown, error?: unknown) => void;
}

export interface QueuedConfiguration {
  readonly kind: 'configure';
  readonly priority: QueuePriority;
  readonly label: string;
  readonly apply: () => void | Promise<void>;
  readonly queuedAt: number;
  readonly settle: (error?: unknown) => void;
}

export type QueuedCommand = QueuedNotification | QueuedUserInput | QueuedConfiguration;

export class QueueFullError extends ErrandError {
  constructor(limit: number) {
    super('QUEUE_FULL', 'caller', `The session's command queue already holds ${limit} commands (the limit)`, {
      context: { limit },
    });
  }
}

export class CommandQueue {
  readonly #lanes: Record<QueuePriority, QueuedCommand[]> = { now: [], next: [], later: [] };
  readonly #maxLength: number;
  #length = 0;

  constructor(maxLength: number) {
    this.#maxLength = maxLength;
  }

  get length(): number {
    return this.#length;
  }

  push(command: QueuedCommand): void {
    if (this.#length >= this.#maxLength) throw new QueueFullError(this.#maxLength);
    this.#lanes[command.priority].push(command);
    this.#length += 1;
  }

  /** Commands in queue order. */
  *[Symbol.iterator](): IterableIterator<QueuedCommand> {
    for (const priority of QUEUE_PRIORITIES) yield* this.#lanes[priority];
  }

  /** The first command that should start a turn (or apply) on an idle session: anything but a quiet notification. */
  peekWake(): QueuedCommand | undefined {
    for (const command of this) {
      if (command.kind !== 'notification' || command.lane === 'wakeup') return command;
    }
    return undefined;
  }

  /**
   * Every queued notification in queue order up to `lastPriority`, stopping at the first configuration
   * command: later notifications wait behind it, in order. User inputs stay queued for their own turns.
   * At most `limit` are taken, of `lane` only when one is named; the rest keep their places.
   */
  takeNotificationsBeforeBarrier(
    lastPriority: QueuePriority = 'later',
    limit = Number.POSITIVE_INFINITY,
    lane?: NotificationLane,
  ): QueuedNotification[] {
    const taken: QueuedNotification[] = [];
    for (const priority of QUEUE_PRIORITIES) {
      const kept: QueuedCommand[] = [];
      let barrier = false;
      for (const command of this.#lanes[priority]) {
        if (!barrier && command.kind === 'configure') barrier = true;
        const wanted =
          command.kind === 'notification' &&
          (lane === undefined || command.lane === lane) &&
          taken.length < limit;
        if (!barrier && wanted) taken.push(command as QueuedNotification);
        else kept.push(command);
      }
      this.#lanes[priority] = kept;
      if (barrier || priority === lastPriority || taken.length >= limit) break;
    }
    this.#length -= taken.length;
    return taken;
  }

  /**
   * Puts commands that were taken but not handled back at the head of their priority lanes, in the given
   * order, ahead of whatever arrived meanwhile. They were admitted once: the length limit does not apply.
   */
  requeue(commands: readonly QueuedCommand[]): void {
    for (const priority of QUEUE_PRIORITIES) {
      const returning = commands.filter((command) => command.priority === priority);
      if (returning.length > 0) this.#lanes[priority] = [...returning, ...this.#lanes[priority]];
    }
    this.#length += commands.length;
  }

  /** Removes one command. */
  take(command: QueuedCommand): void {
    const lane = this.#lanes[command.priority];
    const index = lane.indexOf(command);
    if (index >= 0) {
      lane.splice(index, 1);
      this.#length -= 1;
    }
  }

  /** Removes and returns the commands `predicate` selects. */
  remove(predicate: (command: QueuedCommand) => boolean): QueuedCommand[] {
    const removed: QueuedCommand[] = [];
    for (const priority of QUEUE_PRIORITIES) {
      const kept: QueuedCommand[] = [];
      for (const command of this.#lanes[priority]) (predicate(command) ? removed : kept).push(command);
      this.#lanes[priority] = kept;
    }
    this.#length -= removed.length;
    return removed;
  }
}
