/**
 * What a model is shown of a task's status and facts: the presented status, the facts that qualify it,
 * the task's one-phrase description and its usage. Facts are read with `taskFact`, the contract's one
 * checked reader; the registry itself never interprets them.
 */
import {
  type StopInitiator,
  type TaskSnapshot,
  type TaskStatus,
  taskFact,
  type UsageFacts,
} from '../tasks/index.js';

/**
 * The status a model is shown. It is the registry's status, except that a task reported `completed`
 * with a non-zero exit code reads `failed`: a failed command must never read "completed".
 */
export function presentedStatus(snapshot: TaskSnapshot): TaskStatus {
  if (snapshot.status !== 'completed') return snapshot.status;
  const exitCode = taskFact(snapshot, 'exitCode');
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
  const exitCode = taskFact(snapshot, 'exitCode');
  if (exitCode !== undefined) facts.push(`exit code ${exitCode}`);
  const signal = taskFact(snapshot, 'signal');
  if (signal !== undefined) facts.push(`signal ${signal}`);
  const reason = taskFact(snapshot, 'reason');
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
  return taskFact(snapshot, 'description') ?? snapshot.label;
}

export type TaskUsage = Pick<UsageFacts, 'totalTokens' | 'toolUses' | 'durationMs'>;

/**
 * Usage facts of a subagent: `detail.usage` (or the same keys flat at the top of `detail`, as older
 * producers published them), the duration from the clock when the producer gave none.
 */
export function taskUsage(snapshot: TaskSnapshot): TaskUsage {
  // A flat `detail` has no declared usage keys: read it as the usage it stands for.
  const source: Readonly<Record<string, unknown>> = (taskFact(snapshot, 'usage') ??
    snapshot.detail) as Readonly<Record<string, unknown>>;
  const number = (key: keyof TaskUsage): number | undefined => {
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
