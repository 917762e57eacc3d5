/** What the delivery policy hands to the session's queue: one model-only message and its routing facts. */
import type { NotificationLane, TaskId, TaskKind, TaskStatus } from '../tasks/index.js';

export type { NotificationLane } from '../tasks/index.js';

export const NOTIFICATION_LANES: readonly NotificationLane[] = ['wakeup', 'quiet'];

/**
 * `terminal`: the task ended. `stalled` / `input_needed`: a running workflow needs attention.
 * `output_matched`: a monitor saw matching output lines of a running task.
 */
export type NotificationEvent = 'terminal' | 'stalled' | 'input_needed' | 'output_matched';

export interface TaskNotification {
  readonly taskId: TaskId;
  readonly kind: TaskKind;
  readonly label: string;
  /** The status the text shows (a killed subagent still reads `killed` here; the text says `stopped`). */
  readonly status: TaskStatus;
  readonly event: NotificationEvent;
  /** The `<task-notification>` XML, already escaped and within its budget. */
  readonly text: string;
  readonly lane: NotificationLane;
  /** Queue priority. Notifications are always `next`: after what the user queued now, before later work. */
  readonly priority: 'next';
  /** Which registration of the task id this is about (a resumed task is a new attempt). */
  readonly attempt: number;
  /**
   * When the task was registered (epoch ms). With `attempt` it names one registration even after the
   * registry forgot the task and registered its id afresh (a resumed workflow run), at attempt 1 again.
   */
  readonly startedAt: number;
  /** The branch generation the task was stamped with; the queue checks it again before persisting. */
  readonly branchGeneration: number;
  /** The tool call that started the task, when the producer recorded it. */
  readonly toolUseId?: string;
  /** Epoch milliseconds, from the policy's clock. */
  readonly createdAt: number;
  /**
   * Tells apart the non-terminal notifications of one task in their idempotency keys (a monitor's id and
   * sequence). Absent: `createdAt` does.
   */
  readonly eventKey?: string;
  /** The task span's W3C traceparent (`snapshot.traceparent`): the delivery span links to it. */
  readonly traceparent?: string;
}
