/**
 * On resume: the endings of a session's finished background tasks that the store never saw told
 * (`untoldEndings`), queued now, less those whose notification is already back in the queue. A task lost
 * with its runtime is told quietly (no turn starts for it; the model learns with its next request), any
 * other as the delivery policy would have. Each is marked told once it is delivered, so it is told once.
 */
import { type DeliveryPolicy, formatLostTaskNotification } from '../notifications/index.js';
import type { StoredTask } from '../store/records.js';
import type { SessionStore } from '../store/session-store.js';
import { taskSnapshotFromRecord } from '../store/task-snapshot-from-record.js';
import { describeError, type Logger } from '../tasks/index.js';
import { readFileTail } from '../text/index.js';
import { sessionNotificationOf } from './notification-inbox.js';
import { LOST_CASES, type LostCase } from './reconcile.js';
import { untoldEndings } from './resume-residue.js';
import type { Session } from './session.js';

export interface UntoldEndingsContext {
  readonly store: SessionStore;
  /** The longest notification text (`notifications.maxNotificationBytes`). */
  readonly maxNotificationBytes: number;
  readonly logger: Logger;
}

/** A resumed session, with the policy and admission scope it was opened with. */
export interface ResumedResident {
  readonly session: Pick<Session, 'id' | 'branchGeneration' | 'deliverNotification'>;
  readonly policy: Pick<DeliveryPolicy, 'notificationFor'>;
  readonly scope: string;
}

/** Queues every untold ending of `resumed`'s session but those of `queued` (task ids back in the queue). */
export function queueUntoldEndings(
  context: UntoldEndingsContext,
  resumed: ResumedResident,
  queued: ReadonlySet<string>,
): void {
  const { session, policy, scope } = resumed;
  for (const task of untoldEndings(context.store, session.id, session.branchGeneration, queued)) {
    const key = `ending:${scope}:${task.id}:${task.startedAt}`;
    try {
      if (task.status === 'lost') {
        session.deliverNotification({
          taskId: task.id,
          label: task.label,
          text: formatLostTaskNotification({
            taskId: task.id,
            kind: task.kind,
            label: task.label,
            error: task.error,
            outputFile: task.outputFile,
            lostCase: lostCaseOf(task) ?? 'runtime_stopped',
            budgetBytes: context.maxNotificationBytes,
          }),
          lane: 'quiet',
          branchGeneration: task.branchGeneration,
          idempotencyKey: key,
          // The span of the task that ran before the restart: its delivery links to it.
          ...(task.traceparent === undefined ? {} : { traceparent: task.traceparent }),
        });
        continue;
      }
      const tail =
        task.outputFile === undefined
          ? undefined
          : readFileTail(task.outputFile, RECORDED_TAIL_READ_BYTES)?.text;
      const notification = policy.notificationFor(taskSnapshotFromRecord(task), tail);
      if (notification === undefined) continue;
      session.deliverNotification(sessionNotificationOf(notification, key));
    } catch (error) {
      context.logger.warn(`task ${task.id}: queueing the notification of its recorded ending failed`, {
        error: describeError(error),
      });
    }
  }
}

function lostCaseOf(task: StoredTask): LostCase | undefined {
  const value = task.detail.lostCase;
  return typeof value === 'string' && (LOST_CASES as readonly string[]).includes(value)
    ? (value as LostCase)
    : undefined;
}

/** How much of a recorded task's output file is read for the tail of its notification on resume. */
const RECORDED_TAIL_READ_BYTES = 4096;
