/**
 * The notification of a task that was running when its runtime stopped and is found `lost` on resume.
 * It says what was lost and why, and — unlike the other forms — gives no way to read it: the new runtime
 * does not hold the task, so `task_output` would not find it.
 */
import { toSingleLine } from '../text/index.js';
import { renderEnvelope } from './envelope.js';

export interface LostTaskFormatInput {
  readonly taskId: string;
  readonly kind: string;
  readonly label: string;
  /** Why it is lost, as recorded. */
  readonly error?: string | undefined;
  /** Where its output was written, when a file was kept. */
  readonly outputFile?: string | undefined;
  /** The most UTF-8 bytes the notification may take. Absent: unbounded. */
  readonly budgetBytes?: number;
}

const WHAT: Readonly<Record<string, string>> = {
  bash: 'Background command',
  agent: 'Subagent',
  workflow: 'Workflow run',
};

export function formatLostTaskNotification(input: LostTaskFormatInput): string {
  const what = WHAT[input.kind] ?? `Background ${input.kind} task`;
  const label = toSingleLine(input.label);
  return renderEnvelope(
    [
      { name: 'task-id', text: input.taskId },
      { name: 'output-file', text: input.outputFile ?? '', cutOrder: 2, shrink: 'head' },
      { name: 'status', text: 'lost' },
      {
        name: 'summary',
        text: `${what} "${label}" was lost: the runtime that ran it stopped before it ended, so its result is unknown. It is not running any more; start it again if it is still needed.`,
        fallback: `${what} was lost when its runtime stopped; its result is unknown.`,
        cutOrder: 3,
      },
      { name: 'error', text: input.error ?? '', cutOrder: 1, shrink: 'head' },
    ],
    input.budgetBytes === undefined ? {} : { budgetBytes: input.budgetBytes },
  );
}
