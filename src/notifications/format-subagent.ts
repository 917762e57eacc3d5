/**
 * The subagent form: status (a stopped subagent reads `stopped`), summary, its result text, and usage
 * (tokens, tool uses, duration).
 */

import { type TaskSnapshot, taskFact } from '../tasks/index.js';
import { toSingleLine } from '../text/index.js';
import { renderEnvelope } from './envelope.js';
import { boundOutputTail, collectInstruction, type NotificationFormatInput } from './notification-format.js';
import { presentedStatus, taskDescription, taskUsage } from './presented-status.js';

/** Registry words, except that a killed subagent reads `stopped`. */
export function subagentStatus(snapshot: TaskSnapshot): string {
  const status = presentedStatus(snapshot);
  return status === 'killed' ? 'stopped' : status;
}

export function subagentSummary(snapshot: TaskSnapshot, description: string | undefined): string {
  const subject = description === undefined ? 'Agent' : `Agent "${description}"`;
  switch (presentedStatus(snapshot)) {
    case 'completed':
      return `${subject} completed`;
    case 'killed':
      return snapshot.stopInitiator === 'user'
        ? `${subject} was stopped by the user`
        : `${subject} was stopped`;
    case 'failed':
      return `${subject} failed`;
    case 'lost':
      return `${subject} was lost`;
    default:
      return `${subject} is ${snapshot.status}`;
  }
}

function usageText(snapshot: TaskSnapshot): string {
  const usage = taskUsage(snapshot);
  const lines: string[] = [];
  if (usage.totalTokens !== undefined) lines.push(`total_tokens: ${usage.totalTokens}`);
  if (usage.toolUses !== undefined) lines.push(`tool_uses: ${usage.toolUses}`);
  if (usage.durationMs !== undefined) lines.push(`duration_ms: ${usage.durationMs}`);
  return lines.join('\n');
}

export function formatSubagentNotification(input: NotificationFormatInput): string {
  const { snapshot } = input;
  const description = toSingleLine(taskDescription(snapshot));
  return renderEnvelope(
    [
      { name: 'task-id', text: snapshot.id },
      { name: 'tool-use-id', text: taskFact(snapshot, 'toolUseId') ?? '', cutOrder: 4 },
      { name: 'status', text: subagentStatus(snapshot), cutOrder: 7 },
      {
        name: 'summary',
        text: subagentSummary(snapshot, description === '' ? undefined : description),
        fallback: subagentSummary(snapshot, undefined),
        cutOrder: 6,
      },
      { name: 'error', text: snapshot.error ?? '', cutOrder: 3, shrink: 'head' },
      { name: 'result', text: snapshot.resultText ?? '', cutOrder: 1, shrink: 'head', block: true },
      {
        name: 'output-tail',
        text: boundOutputTail(input.outputTail, input.outputTailLimits),
        cutOrder: 0,
        shrink: 'tail',
        block: true,
      },
      { name: 'usage', text: usageText(snapshot), cutOrder: 2, block: true },
      { name: 'collect', text: collectInstruction(snapshot.id) },
    ],
    input.budgetBytes === undefined ? {} : { budgetBytes: input.budgetBytes },
  );
}
