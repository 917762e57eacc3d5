/**
 * The bash form: the envelope peers' models know (task id, tool-use id, output file, status, summary),
 * plus Errand's `<exit-code>`, `<signal>`, `<error>` and a bounded `<output-tail>`.
 *
 *     <task-notification>
 *     <task-id>bash-3</task-id>
 *     <tool-use-id>call_abc</tool-use-id>
 *     <output-file>/path/to/output</output-file>
 *     <status>completed</status>
 *     <summary>Background command "npm test" completed (exit code 0)</summary>
 *     <exit-code>0</exit-code>
 *     <output-tail>
 *     ...
 *     </output-tail>
 *     <collect>Read it with task_output (task_id "bash-3").</collect>
 *     </task-notification>
 */

import { type TaskSnapshot, taskFact } from '../tasks/index.js';
import { toSingleLine } from '../text/index.js';
import { renderEnvelope } from './envelope.js';
import { boundOutputTail, collectInstruction, type NotificationFormatInput } from './notification-format.js';
import { presentedStatus, taskDescription } from './presented-status.js';

/** `Background command "<description>" completed (exit code 0)` / `failed with exit code 1` / `was stopped`. */
export function bashSummary(snapshot: TaskSnapshot, description: string | undefined): string {
  const subject = description === undefined ? 'Background command' : `Background command "${description}"`;
  const exitCode = taskFact(snapshot, 'exitCode');
  switch (presentedStatus(snapshot)) {
    case 'completed':
      return exitCode === undefined ? `${subject} completed` : `${subject} completed (exit code ${exitCode})`;
    case 'failed':
      return exitCode === undefined ? `${subject} failed` : `${subject} failed with exit code ${exitCode}`;
    case 'killed': {
      const reason = taskFact(snapshot, 'reason');
      return reason === undefined || reason === 'cancelled'
        ? `${subject} was stopped`
        : `${subject} was stopped (${reason})`;
    }
    case 'lost':
      return `${subject} was lost: its executor no longer knows it`;
    default:
      return `${subject} is ${snapshot.status}`;
  }
}

export function formatBashNotification(input: NotificationFormatInput): string {
  const { snapshot } = input;
  const description = toSingleLine(taskDescription(snapshot));
  const exitCode = taskFact(snapshot, 'exitCode');
  return renderEnvelope(
    [
      { name: 'task-id', text: snapshot.id },
      { name: 'tool-use-id', text: taskFact(snapshot, 'toolUseId') ?? '', cutOrder: 5 },
      { name: 'output-file', text: taskFact(snapshot, 'outputFile') ?? '', cutOrder: 6 },
      { name: 'status', text: presentedStatus(snapshot), cutOrder: 8 },
      {
        name: 'summary',
        text: bashSummary(snapshot, description === '' ? undefined : description),
        fallback: bashSummary(snapshot, undefined),
        cutOrder: 7,
      },
      { name: 'exit-code', text: exitCode === undefined ? '' : String(exitCode), cutOrder: 4 },
      { name: 'signal', text: taskFact(snapshot, 'signal') ?? '', cutOrder: 3 },
      // An exit code already says why a command failed; the error explains failures without one.
      {
        name: 'error',
        text: exitCode === undefined ? (snapshot.error ?? '') : '',
        cutOrder: 2,
        shrink: 'head',
      },
      {
        name: 'output-tail',
        text: boundOutputTail(input.outputTail, input.outputTailLimits),
        cutOrder: 1,
        shrink: 'tail',
        block: true,
      },
      { name: 'collect', text: collectInstruction(snapshot.id) },
    ],
    input.budgetBytes === undefined ? {} : { budgetBytes: input.budgetBytes },
  );
}
