/**
 * The facts an `agent` task (a subagent run) publishes in its `detail`: the prompt, profile and tool call
 * at start, its child session once opened, usage and why it ended once it has stopped. Records on disk
 * keep these keys.
 */
import type { TaskFacts, TaskSnapshot } from '../../tasks/index.js';
import type { ChildRunReason } from './child-run.js';
import type { SubagentUsage } from './usage-meter.js';

export interface SubagentFacts extends TaskFacts {
  /** The prompt the run was started with, at most its first 2000 characters. */
  readonly prompt?: string;
  /** The agent profile it runs as; null for the default one. */
  readonly profile?: string | null;
  /** The child session holding the run's conversation, once opened. */
  readonly childSessionId?: string | null;
  /** Why the run ended (`max_steps`, `error`, `interrupted`, `infrastructure`, ...). */
  readonly reason?: ChildRunReason;
  /** Tokens, tool uses and duration of the run. */
  readonly usage?: SubagentUsage;
}

/** A subagent task's facts, typed; undefined for a task of another kind. */
export function subagentFacts(snapshot: TaskSnapshot): SubagentFacts | undefined {
  return snapshot.kind === 'agent' ? (snapshot.detail as SubagentFacts) : undefined;
}
