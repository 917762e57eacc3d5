/**
 * The monitor form: output lines of a running task that matched a monitor, for its owner. It says what
 * matched and how to read on — never how the task ended: that is the task's own notification.
 *
 *     <task-notification>
 *     <task-id>bash-3</task-id>
 *     <event>output_matched</event>
 *     <summary>2 lines of "npm run dev" matched /error/i</summary>
 *     <lines>
 *     ERROR: port 3000 in use
 *     ERROR: retrying
 *     </lines>
 *     <more>4 more lines matched; read them with task_output.</more>
 *     <monitor>m1, notification 3 of at most 20; stop it with task_monitor (task_id "bash-3", stop: true)</monitor>
 *     <collect>Read it with task_output (task_id "bash-3").</collect>
 *     </task-notification>
 */
import type { TaskSnapshot } from '../tasks/index.js';
import { renderEnvelope } from './envelope.js';
import { collectInstruction } from './notification-format.js';
import { taskDescription } from './presented-status.js';
import type { NotificationLane } from './task-notification.js';

/** What a monitor hands to its owner's delivery policy: the lines of one notification. */
export interface MonitorEvent {
  /** The monitor's id on its task (`m1`). */
  readonly monitorId: string;
  /** 1 for the monitor's first notification, then one more each time. */
  readonly sequence: number;
  /** The most notifications the monitor sends. */
  readonly maxNotifications: number;
  /** How the monitor matches: `/error/i`, or `every line`. */
  readonly matching: string;
  /** The matched lines this notification shows (each cut to the monitor's line limit). */
  readonly lines: readonly string[];
  /** Lines that matched too but are not shown (over the per-notification limit, or while rate-limited). */
  readonly moreLines: number;
  /** `quiet` (default): context for the next request; `wakeup`: may start a turn (the wake budget applies). */
  readonly lane: NotificationLane;
  /** Set on the monitor's last notification, and why it stops. */
  readonly stopping?: 'limit' | 'slow_pattern';
}

export interface MonitorFormatInput {
  readonly snapshot: TaskSnapshot;
  readonly event: MonitorEvent;
  readonly budgetBytes?: number;
}

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`;
}

export function formatMonitorNotification(input: MonitorFormatInput): string {
  const { snapshot, event } = input;
  const description = taskDescription(snapshot);
  const shown = event.lines.length;
  const subject = (label: string | undefined) => (label === undefined ? `task ${snapshot.id}` : `"${label}"`);
  const summary = (label: string | undefined) =>
    event.matching === 'every line'
      ? `${plural(shown, 'new line')} of ${subject(label)}`
      : `${plural(shown, 'line')} of ${subject(label)} matched ${event.matching}`;
  const more =
    event.moreLines > 0
      ? `${plural(event.moreLines, 'more line')} ${event.matching === 'every line' ? 'came' : 'matched'}; read them with task_output.`
      : '';
  const stop = `stop it with task_monitor (task_id "${snapshot.id}", stop: true)`;
  const monitor =
    event.stopping === 'limit'
      ? `${event.monitorId} sent its last notification (${event.maxNotifications}) and stopped; start another with task_monitor to keep watching`
      : event.stopping === 'slow_pattern'
        ? `${event.monitorId} stopped: its pattern took too long on a line; start another with a simpler pattern`
        : `${event.monitorId}, notification ${event.sequence} of at most ${event.maxNotifications}; ${stop}`;
  return renderEnvelope(
    [
      { name: 'task-id', text: snapshot.id },
      { name: 'event', text: 'output_matched', cutOrder: 5 },
      { name: 'summary', text: summary(description), fallback: summary(undefined), cutOrder: 4 },
      { name: 'lines', text: event.lines.join('\n'), cutOrder: 3, shrink: 'head', block: true },
      { name: 'more', text: more, cutOrder: 2 },
      { name: 'monitor', text: monitor, cutOrder: 1 },
      { name: 'collect', text: collectInstruction(snapshot.id) },
    ],
    input.budgetBytes === undefined ? {} : { budgetBytes: input.budgetBytes },
  );
}
