/**
 * The workflow forms. A terminal run says what to do next by how it ended: a run the user stopped must
 * not be resumed by the model, a run the model stopped is amended rather than restarted, a failed run
 * needs its script fixed. Running runs notify too, when they stall or need input.
 */

import { type TaskSnapshot, taskFact } from '../tasks/index.js';
import { toSingleLine } from '../text/index.js';
import { renderEnvelope } from './envelope.js';
import { collectInstruction, type NotificationFormatInput } from './notification-format.js';
import { presentedStatus, taskDescription } from './presented-status.js';

export const WORKFLOW_NEXT_STEPS = Object.freeze({
  completed: 'Review its result before relying on it.',
  stoppedByUser: 'The user stopped this run. Do not resume or restart it unless the user asks you to.',
  stoppedByModel:
    'You stopped this run. If it still needs to happen, amend the workflow instead of starting it over.',
  stoppedBySystem: 'The runtime stopped this run. Resume it only if the user asks you to.',
  failed: 'The run failed. Fix its script before running it again.',
  lost: 'The run was lost. Check its state before running it again.',
});

export function workflowSummary(snapshot: TaskSnapshot, description: string | undefined): string {
  const subject = description === undefined ? 'Workflow run' : `Workflow "${description}"`;
  switch (presentedStatus(snapshot)) {
    case 'completed':
      return `${subject} completed`;
    case 'killed':
      switch (snapshot.stopInitiator) {
        case 'user':
          return `${subject} was stopped by the user`;
        case 'model':
          return `${subject} was stopped by you`;
        case 'system':
          return `${subject} was stopped by the runtime`;
        default:
          return `${subject} was stopped`;
      }
    case 'failed':
      return `${subject} failed`;
    case 'lost':
      return `${subject} was lost`;
    default:
      return `${subject} is ${snapshot.status}`;
  }
}

/** The next step for a terminal run, by how it ended. */
export function workflowNextStep(snapshot: TaskSnapshot): string {
  switch (presentedStatus(snapshot)) {
    case 'completed':
      return WORKFLOW_NEXT_STEPS.completed;
    case 'killed':
      if (snapshot.stopInitiator === 'model') return WORKFLOW_NEXT_STEPS.stoppedByModel;
      if (snapshot.stopInitiator === 'system') return WORKFLOW_NEXT_STEPS.stoppedBySystem;
      // A stop nobody recorded is treated as the user's: never resume what a person may have stopped.
      return WORKFLOW_NEXT_STEPS.stoppedByUser;
    case 'failed':
      return WORKFLOW_NEXT_STEPS.failed;
    default:
      return WORKFLOW_NEXT_STEPS.lost;
  }
}

function labelOf(snapshot: TaskSnapshot): string | undefined {
  const description = toSingleLine(taskDescription(snapshot));
  return description === '' ? undefined : description;
}

export function formatWorkflowNotification(input: NotificationFormatInput): string {
  const { snapshot } = input;
  const description = labelOf(snapshot);
  return renderEnvelope(
    [
      { name: 'task-id', text: snapshot.id },
      { name: 'tool-use-id', text: taskFact(snapshot, 'toolUseId') ?? '', cutOrder: 3 },
      { name: 'status', text: presentedStatus(snapshot), cutOrder: 5 },
      {
        name: 'summary',
        text: workflowSummary(snapshot, description),
        fallback: workflowSummary(snapshot, undefined),
        cutOrder: 4,
      },
      { name: 'error', text: snapshot.error ?? '', cutOrder: 2, shrink: 'head' },
      { name: 'result', text: snapshot.resultText ?? '', cutOrder: 1, shrink: 'head', block: true },
      { name: 'next-step', text: workflowNextStep(snapshot), cutOrder: 6 },
      { name: 'collect', text: collectInstruction(snapshot.id) },
    ],
    input.budgetBytes === undefined ? {} : { budgetBytes: input.budgetBytes },
  );
}

/** A running workflow that needs attention: it stalled, or it asks a question. */
export type WorkflowProgressEvent =
  | {
      readonly type: 'stalled';
      /** How long it has made no progress. */
      readonly idleMs?: number;
      /** What the run last reported. */
      readonly message?: string;
    }
  | {
      readonly type: 'input_needed';
      readonly question: string;
      /** How to answer (a tool to call, a person to ask). Default: a generic instruction. */
      readonly howToAnswer?: string;
    };

export const WORKFLOW_PROGRESS_NEXT_STEPS = Object.freeze({
  stalled:
    'Check on it with task_output. Stop it with task_kill if it no longer matters; do not start a second run.',
  inputNeeded: 'Answer the question if you can; otherwise ask the user. The run waits until it is answered.',
});

function describeIdle(idleMs: number): string {
  const minutes = Math.round(idleMs / 60_000);
  if (minutes >= 1) return `${minutes} minute${minutes === 1 ? '' : 's'}`;
  const seconds = Math.max(1, Math.round(idleMs / 1000));
  return `${seconds} second${seconds === 1 ? '' : 's'}`;
}

export interface WorkflowProgressFormatInput {
  readonly snapshot: TaskSnapshot;
  readonly event: WorkflowProgressEvent;
  readonly budgetBytes?: number;
}

export function formatWorkflowProgressNotification(input: WorkflowProgressFormatInput): string {
  const { snapshot, event } = input;
  const description = labelOf(snapshot);
  const subject = (label: string | undefined) =>
    label === undefined ? 'Workflow run' : `Workflow "${label}"`;
  const summary = (label: string | undefined) =>
    event.type === 'stalled'
      ? event.idleMs === undefined
        ? `${subject(label)} has stalled`
        : `${subject(label)} has made no progress for ${describeIdle(event.idleMs)}`
      : `${subject(label)} needs input`;
  const details =
    event.type === 'stalled'
      ? [
          {
            name: 'last-message',
            text: event.message ?? '',
            cutOrder: 1,
            shrink: 'tail' as const,
            block: true,
          },
        ]
      : [{ name: 'question', text: event.question, cutOrder: 2, shrink: 'head' as const, block: true }];
  const nextStep =
    event.type === 'stalled'
      ? WORKFLOW_PROGRESS_NEXT_STEPS.stalled
      : (event.howToAnswer ?? WORKFLOW_PROGRESS_NEXT_STEPS.inputNeeded);
  return renderEnvelope(
    [
      { name: 'task-id', text: snapshot.id },
      { name: 'status', text: snapshot.status, cutOrder: 3 },
      { name: 'event', text: event.type, cutOrder: 4 },
      { name: 'summary', text: summary(description), fallback: summary(undefined), cutOrder: 5 },
      ...details,
      { name: 'next-step', text: nextStep, cutOrder: 6 },
      { name: 'collect', text: collectInstruction(snapshot.id) },
    ],
    input.budgetBytes === undefined ? {} : { budgetBytes: input.budgetBytes },
  );
}
