/**
 * The text a hook hands the model: the `<task-notification>`s it borrowed, whole while they fit in its
 * byte budget and past it in a compact form that still names every task and how to read it, followed —
 * at the end of a turn — by what is still running and what will become of it.
 */
import type { HookMoment } from './hook-clients.js';
import type { HookNotification, RunningNotice, RunningTask } from './hook-protocol.js';

export interface HandOverContext {
  readonly moment: HookMoment;
  /** The client ends the session with its turn (`claude -p`, `codex exec`, `gemini -p`). */
  readonly headless: boolean;
  /** The client wakes an idle model by itself (Claude Code's `asyncRewake` hook is installed). */
  readonly wakes: boolean;
  /** How long a headless run was held for its work, in ms (named when the hold expired). */
  readonly heldMs: number;
}

export interface HandOver {
  readonly notifications: readonly HookNotification[];
  /** Notifications still queued after these. */
  readonly more: number;
  readonly stillRunning: readonly RunningTask[];
  readonly notice: RunningNotice | undefined;
}

/** The hand-over's text within `maxBytes` (the list of task ids past it is never cut). '' for nothing. */
export function handOverText(handOver: HandOver, maxBytes: number, context: HandOverContext): string {
  const parts: string[] = [];
  const running = runningText(handOver.stillRunning, handOver.notice, context);
  const closing =
    handOver.notifications.length > 0 && (context.moment === 'stop' || context.moment === 'wake')
      ? 'Background work you started has ended (above). Take its result into account before you finish.'
      : '';
  const fixed = byteLength(running) + byteLength(closing) + 64;
  parts.push(...notificationParts(handOver.notifications, Math.max(0, maxBytes - fixed)));
  if (handOver.more > 0) {
    parts.push(
      `(${handOver.more} more task notification${handOver.more === 1 ? '' : 's'} will follow; task_list shows every task)`,
    );
  }
  if (closing !== '') parts.push(closing);
  if (running !== '') parts.push(running);
  return parts.join('\n\n');
}

/** Whole notifications while they fit; then one line per task; then, past even that, the task ids. */
function notificationParts(notifications: readonly HookNotification[], budget: number): string[] {
  const whole = notifications.map((notification) => notification.text);
  if (byteLength(whole.join('\n\n')) <= budget || notifications.length === 0) return whole;
  const lines = notifications.map(compactLine);
  const parts: string[] = [];
  let used = 0;
  let index = 0;
  // Whole texts first, as long as the rest still fits as compact lines.
  const restBytes = (from: number) => lines.slice(from).reduce((sum, line) => sum + byteLength(line) + 1, 0);
  while (index < notifications.length) {
    const size = byteLength(whole[index] as string) + 2;
    if (used + size + restBytes(index + 1) > budget) break;
    parts.push(whole[index] as string);
    used += size;
    index += 1;
  }
  const compact: string[] = [];
  while (index < notifications.length && used + byteLength(lines[index] as string) + 1 <= budget) {
    compact.push(lines[index] as string);
    used += byteLength(lines[index] as string) + 1;
    index += 1;
  }
  const header = `${notifications.length - parts.length} more background task${
    notifications.length - parts.length === 1 ? '' : 's'
  } ended (too many to show whole; read each with task_output):`;
  const named = notifications.slice(index).map((notification) => notification.taskId);
  parts.push(
    [header, ...compact, ...(named.length > 0 ? [`- also ended: ${named.join(', ')}`] : [])].join('\n'),
  );
  return parts;
}

/** `- bash-3 (npm test): Background command "npm test" failed with exit code 1 — task_output "bash-3"` */
export function compactLine(notification: HookNotification): string {
  const summary = /<summary>([^<]*)<\/summary>/.exec(notification.text)?.[1];
  const status = /<status>([^<]*)<\/status>/.exec(notification.text)?.[1];
  const what = summary ?? (status === undefined ? 'ended' : status);
  return `- ${notification.taskId} (${oneLine(notification.label)}): ${what} — task_output (task_id "${notification.taskId}")`;
}

function runningText(
  stillRunning: readonly RunningTask[],
  notice: RunningNotice | undefined,
  context: HandOverContext,
): string {
  if (stillRunning.length === 0 || notice === undefined) return '';
  const listed = stillRunning.map((task) => `${task.id} (${oneLine(task.label)})`).join(', ');
  switch (notice) {
    case 'reminder':
      return [
        `Background work you started is still running: ${listed}.`,
        'Wait for it with task_output (wait: true) if its result matters, or stop it with task_kill if it no longer does.',
        // Codex and Gemini CLI interactive: nothing wakes an idle session, so say when it will be told.
        'Its ending will be handed to you with the next prompt or tool result; if the session is closed first, it is stopped unreported.',
      ].join(' ');
    case 'final':
      return [
        `Still running: ${listed}.`,
        'The client will not hold this turn open again: it ends at your next stop.',
        context.headless
          ? 'This run ends with the turn, and the work above is stopped with it: wait for what matters now with task_output (wait: true), and tell the user what will not finish.'
          : context.wakes
            ? 'You will be woken with each ending once the turn is over.'
            : 'Their endings will be handed to you with the next prompt or tool result.',
      ].join(' ');
    case 'expired':
      return [
        `Still running after ${describeDuration(context.heldMs)}, the longest a headless run is held for its work (errand hook --headless-wait-ms): ${listed}.`,
        'When this run ends, they are stopped with it, unfinished.',
        'Tell the user which tasks will not finish and why, or wait for one with task_output (wait: true) if its result is needed.',
      ].join(' ');
  }
}

function describeDuration(ms: number): string {
  if (ms % 60_000 === 0 && ms >= 60_000) return `${ms / 60_000} minute${ms === 60_000 ? '' : 's'}`;
  return `${Math.round(ms / 1000)} s`;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').slice(0, 120);
}

function byteLength(text: string): number {
  return Buffer.byteLength(text);
}
