/**
 * The facts a `workflow` task (a run) publishes in its `detail`: the script and what it amends at start,
 * its steps, progress, waits and questions while it runs, how it ended once it has stopped. Records on
 * disk keep these keys.
 */
import type { TaskFacts, TaskSnapshot } from '../../tasks/index.js';

export interface WorkflowFacts extends TaskFacts {
  /** The script's name. */
  readonly script?: string;
  /** True for a run without a journal (no store): it cannot be resumed or amended. */
  readonly legacy?: boolean;
  /** The run this one amends. */
  readonly amends?: string;
  /** Steps run to completion by this execution, and steps replayed from the journal. */
  readonly stepsDone?: number;
  readonly stepsReplayed?: number;
  /** The step that finished last. */
  readonly lastStep?: string;
  /** The step running now. */
  readonly currentStep?: string;
  /** The script's last `progress(message)`, at most 2000 characters, and when it came (epoch ms). */
  readonly progress?: string;
  readonly progressAt?: number;
  /** When a sleeping step wakes (epoch ms); null once it woke. */
  readonly sleepingUntil?: number | null;
  /** The question a step waits to have answered; null once answered. */
  readonly waitingForInput?: string | null;
  /** How long the run had been silent when it was reported stalled; null for no idle time given. */
  readonly stalledForMs?: number | null;
  /** True when a cancelled script did not return within the grace and was left behind. */
  readonly abandoned?: boolean;
}

/** A workflow task's facts, typed; undefined for a task of another kind. */
export function workflowFacts(snapshot: TaskSnapshot): WorkflowFacts | undefined {
  return snapshot.kind === 'workflow' ? (snapshot.detail as WorkflowFacts) : undefined;
}
