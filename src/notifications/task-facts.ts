/**
 * Producer facts read from a snapshot's `detail`, and the status a model is shown. The registry never
 * interprets `detail`; these readers are the one place the model-facing surfaces do.
 *
 * Detail keys Errand's surfaces understand (all optional):
 * `exitCode` (number), `signal` (string), `reason` (string: why it stopped), `description` (string),
 * `toolUseId` (string), `outputFile` (string), `outputTail` (string), `supersededBy` (string),
 * `notificationLane` ('wakeup' | 'quiet'), `usage` ({ totalTokens?, toolUses?, durationMs? }).
 */
import type { StopInitiator, TaskSnapshot, TaskStatus } from '../tasks/index.js';

export function detailString(snapshot: TaskSnapshot, key: string): string | undefined {
  const value = snapshot.detail[key];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

export function detailNumber(snapshot: TaskSnapshot, key: string): number | undefined {
  const value = snapshot.detail[key];
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/**
 * The status a model is shown. It is the registry's status, except that a task reported `completed`
 * with a non-zero exit code reads `failed`: a failed command must never read "completed".
 */
export function presentedStatus(snapshot: TaskSnapshot): TaskStatus {
  if (snapshot.status !== 'completed') return snapshot.status;
  const exitCode = detailNumber(snapshot, 'exitCode');
  return exitCode !== undefined && exitCode !== 0 ? 'failed' : 'completed';
}

const INITIATOR_WORDS: Record<StopInitiator, string> = {
  user: 'stopped by the user',
  model: 'stopped by the model',
  system: 'stopped by the runtime',
};

/** Short facts that qualify a status: `exit code 1`, `signal SIGTERM`, `reason: timed out`, who stopped it. */
export function statusFacts(snapshot: TaskSnapshot): string[] {
  const facts: string[] = [];
  const exitCode = detailNumber(snapshot, 'exitCode');
  if (exitCode !== undefined) facts.push(`exit code ${exitCode}`);
  const signal = detailString(snapshot, 'signal');
  if (signal !== undefined) facts.push(`signal ${signal}`);
  const reason = detailString(snapshot, 'reason');
  // `completed` and `cancelled` say nothing the status and the initiator do not already say.
  if (
    reason !== undefined &&
    reason !== 'completed' &&
    reason !== 'cancelled' &&
    snapshot.status !== 'running' &&
    snapshot.status !== 'completed'
  ) {
    facts.push(`reason: ${reason}`);
  }
  if (
    snapshot.stopInitiator !== undefined &&
    snapshot.status !== 'running' &&
    snapshot.status !== 'completed'
  ) {
    facts.push(INITIATOR_WORDS[snapshot.stopInitiator]);
  }
  return facts;
}

/** `failed (exit code 1)`, `killed (signal SIGTERM, stopped by the user)`, `running`. */
export function describeStatus(snapshot: TaskSnapshot): string {
  const facts = statusFacts(snapshot);
  const status = presentedStatus(snapshot);
  return facts.length === 0 ? status : `${status} (${facts.join(', ')})`;
}

/** What a task is about in one phrase: the producer's description, else its label. */
export function taskDescription(snapshot: TaskSnapshot): string {
  return detailString(snapshot, 'description') ?? snapshot.label;
}

export interface TaskUsage {
  readonly totalTokens?: number;
  readonly toolUses?: number;
  readonly durationMs?: number;
}

/** Usage facts of a subagent: `detail.usage` (or the same keys at the top of `detail`), duration from the clock. */
export function taskUsage(snapshot: TaskSnapshot): TaskUsage {
  const nested = snapshot.detail.usage;
  const source: Record<string, unknown> =
    typeof nested === 'object' && nested !== null ? (nested as Record<string, unknown>) : snapshot.detail;
  const number = (key: string): number | undefined => {
    const value = source[key];
    return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
  };
  const measured = snapshot.endedAt === undefined ? undefined : snapshot.endedAt - snapshot.startedAt;
  const durationMs = number('durationMs') ?? measured;
  return {
    ...(number('totalTokens') === undefined ? {} : { totalTokens: number('totalTokens') }),
    ...(number('toolUses') === undefined ? {} : { toolUses: number('toolUses') }),
    ...(durationMs === undefined ? {} : { durationMs }),
  };
}
