/**
 * The notification of a task that was running when its runtime stopped and is found `lost` on resume.
 * It says what was lost and which case it is — each case was checked on resume, never assumed — and,
 * unlike the other forms, gives no way to read it: the new runtime does not hold the task.
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
  /**
   * Which case it is (see `LostCase` in the session's reconcile step); `runtime_stopped` (the default)
   * for work that ran inside the runtime that stopped.
   */
  readonly lostCase?: string | undefined;
  /** The most UTF-8 bytes the notification may take. Absent: unbounded. */
  readonly budgetBytes?: number;
}

const WHAT: Readonly<Record<string, string>> = {
  bash: 'Background command',
  agent: 'Subagent',
  workflow: 'Workflow run',
};

/** Why it is lost, per case: each a fact the resume checked. */
const WHY: Readonly<Record<string, string>> = {
  runtime_stopped: 'it ran inside the runtime that stopped before it ended, so its result is unknown',
  machine_restarted: 'the machine restarted since it started, so its result is unknown',
  ended_unwatched:
    'its process ended while no runtime watched it (its runtime had died), and its exit status was not captured',
  status_not_captured:
    'it ended while no runtime watched it, and its exit status was not captured (its wrapper was killed)',
  pid_reused:
    'its process ended while no runtime watched it (its pid now names another process), so its result is unknown',
  unrecognizable:
    'its process could not be recognised after the restart (too little was recorded to check it safely), so its result is unknown',
};

export function formatLostTaskNotification(input: LostTaskFormatInput): string {
  const what = WHAT[input.kind] ?? `Background ${input.kind} task`;
  const label = toSingleLine(input.label);
  const lostCase = input.lostCase ?? 'runtime_stopped';
  const why = WHY[lostCase] ?? WHY.runtime_stopped!;
  // Only what was checked is said: an unrecognised process was not checked, so it is not said to be gone.
  const next =
    lostCase === 'unrecognizable'
      ? 'It may still be running; check before starting it again.'
      : 'It is not running any more; start it again if it is still needed.';
  return renderEnvelope(
    [
      { name: 'task-id', text: input.taskId },
      { name: 'output-file', text: input.outputFile ?? '', cutOrder: 2, shrink: 'head' },
      { name: 'status', text: 'lost' },
      { name: 'lost-case', text: lostCase, cutOrder: 4 },
      {
        name: 'summary',
        text: `${what} "${label}" was lost: ${why}. ${next}`,
        fallback: `${what} was lost (${lostCase}); its result is unknown.`,
        cutOrder: 3,
      },
      { name: 'error', text: input.error ?? '', cutOrder: 1, shrink: 'head' },
    ],
    input.budgetBytes === undefined ? {} : { budgetBytes: input.budgetBytes },
  );
}
