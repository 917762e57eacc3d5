/**
 * The error of a delivery the store could not record: the notifications it names were not delivered and
 * went back to the head of the session's queue, where the next turn, idle drain or surface takes them.
 */
import { ErrandError } from '../tasks/index.js';
import type { QueuedNotification } from './command-queue.js';

export const NOTIFICATION_DELIVERY_FAILED = 'NOTIFICATION_DELIVERY_FAILED';

export class NotificationDeliveryError extends ErrandError {
  /** The notifications that were not delivered, in queue order. */
  readonly undelivered: readonly QueuedNotification[];

  constructor(sessionId: string, undelivered: readonly QueuedNotification[], cause: unknown) {
    const taskIds = undelivered.map((notification) => notification.taskId);
    const ledgerIds = undelivered.map((notification) => notification.ledgerId);
    const count =
      undelivered.length === 1 ? '1 queued notification' : `${undelivered.length} queued notifications`;
    super(
      NOTIFICATION_DELIVERY_FAILED,
      'system',
      `Session ${sessionId}: the store failed to record the delivery of ${count} (tasks ${taskIds.join(', ')}; ` +
        `ledger ids ${ledgerIds.join(', ')}): ${cause instanceof Error ? cause.message : String(cause)}. ` +
        'They were not delivered and stay queued.',
      { cause, context: { sessionId, taskIds, ledgerIds } },
    );
    this.undelivered = undelivered;
  }
}
