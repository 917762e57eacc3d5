/** The generic indented form, for kinds without their own (pty, monitor, custom producers). */
import { toSingleLine } from '../text/index.js';
import { renderEnvelope } from './envelope.js';
import { boundOutputTail, collectInstruction, type NotificationFormatInput } from './notification-format.js';
import { presentedStatus, statusFacts } from './presented-status.js';

export function formatGenericNotification(input: NotificationFormatInput): string {
  const { snapshot } = input;
  return renderEnvelope(
    [
      { name: 'task-id', text: snapshot.id },
      { name: 'kind', text: snapshot.kind, cutOrder: 3 },
      { name: 'label', text: toSingleLine(snapshot.label), cutOrder: 4, shrink: 'head' },
      { name: 'status', text: presentedStatus(snapshot), cutOrder: 6 },
      { name: 'detail', text: statusFacts(snapshot).join(', '), cutOrder: 5 },
      { name: 'error', text: snapshot.error ?? '', cutOrder: 2, shrink: 'head' },
      { name: 'result', text: snapshot.resultText ?? '', cutOrder: 1, shrink: 'head', block: true },
      {
        name: 'output-tail',
        text: boundOutputTail(input.outputTail, input.outputTailLimits),
        cutOrder: 0,
        shrink: 'tail',
        block: true,
      },
      { name: 'collect', text: collectInstruction(snapshot.id) },
    ],
    { indent: '  ', ...(input.budgetBytes === undefined ? {} : { budgetBytes: input.budgetBytes }) },
  );
}
