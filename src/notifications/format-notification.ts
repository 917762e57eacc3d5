/** Picks the form by task kind: bash, subagent (`agent`), workflow, or the generic indented form. */
import type { TaskKind } from '../tasks/index.js';
import { formatBashNotification } from './format-bash.js';
import { formatGenericNotification } from './format-generic.js';
import { formatSubagentNotification } from './format-subagent.js';
import { formatWorkflowNotification } from './format-workflow.js';
import type { NotificationFormatInput, NotificationFormatter } from './notification-format.js';

/** The forms Errand ships, by kind. Kinds not listed use the generic form. */
export const BUILT_IN_FORMATTERS: Readonly<Partial<Record<TaskKind, NotificationFormatter>>> = Object.freeze({
  bash: formatBashNotification,
  agent: formatSubagentNotification,
  workflow: formatWorkflowNotification,
});

export function formatterFor(
  kind: TaskKind,
  overrides: Readonly<Partial<Record<TaskKind, NotificationFormatter>>> = {},
): NotificationFormatter {
  return overrides[kind] ?? BUILT_IN_FORMATTERS[kind] ?? formatGenericNotification;
}

/** Formats a terminal snapshot's notification with the form of its kind. */
export function formatTaskNotification(
  input: NotificationFormatInput,
  overrides?: Readonly<Partial<Record<TaskKind, NotificationFormatter>>>,
): string {
  return formatterFor(input.snapshot.kind, overrides)(input);
}
