/**
 * How a delivery policy's notification reaches its session: under an idempotency key of the session's
 * admission scope, admitted in one store step, and kept behind the task's record while the store refuses
 * writes (the inbox applies its rules again when it is retried: a session closed meanwhile refuses it, a
 * resume tells it).
 */
import type { TaskNotification } from '../notifications/index.js';
import type { SessionStore } from '../store/session-store.js';
import { ErrandError } from '../tasks/index.js';
import { sessionNotificationOf } from './notification-inbox.js';
import type { PendingStoreWrites } from './pending-store-writes.js';
import { PROGRESS_KEY_PREFIX } from './resume-residue.js';
import type { Session } from './session.js';

export interface PolicyAdmissionContext {
  readonly store: Pick<SessionStore, 'transaction'>;
  readonly pending: Pick<PendingStoreWrites, 'write'>;
}

/**
 * Admits `notification` into `session`. A duplicate (admitted before) and an ending the model already
 * read keep the policy's claim; any other refusal throws `NOTIFICATION_NOT_ADMITTED`, which returns it.
 */
export function admitPolicyNotification(
  context: PolicyAdmissionContext,
  session: Pick<Session, 'id' | 'deliverNotification'>,
  scope: string,
  notification: TaskNotification,
): void {
  // The notification's own attempt: a resume while it was being formatted must not borrow the new one.
  const attempt = notification.attempt;
  const ending = notification.event === 'terminal';
  const key = ending
    ? `task:${scope}:${notification.taskId}:${attempt}:${notification.startedAt}`
    : `${PROGRESS_KEY_PREFIX}${scope}:${notification.taskId}:${attempt}:${notification.startedAt}:${notification.event}:${notification.eventKey ?? notification.createdAt}`;
  // Deferred durability: nobody has seen the admission yet; the delivery that shows it syncs it.
  const outcome = context.pending.write(`notification:${session.id}:${key}`, () =>
    context.store.transaction(
      () =>
        session.deliverNotification({
          ...sessionNotificationOf(notification, key),
          attempt,
          ...(ending ? {} : { ending: false }),
        }),
      DEFERRED,
    ),
  );
  if (!outcome.written) return;
  const admission = outcome.value;
  if (!admission.admitted && admission.reason !== 'duplicate' && admission.reason !== 'result_read') {
    throw new ErrandError(
      'NOTIFICATION_NOT_ADMITTED',
      'system',
      `Session ${session.id} did not admit the notification of ${notification.taskId}: ${admission.reason}`,
      { context: { taskId: notification.taskId, reason: admission.reason } },
    );
  }
}

const DEFERRED = { durability: 'deferred' } as const;
