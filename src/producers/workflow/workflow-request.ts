/** What callers of the workflow producer pass and get back, and the checks their input goes through. */
import { InvalidArgumentError, type Owner, type TaskId, type TaskSnapshot } from '../../tasks/index.js';
import type { WorkflowFacts } from './workflow-facts.js';

const MAX_LABEL_CHARACTERS = 200;
const MAX_DESCRIPTION_CHARACTERS = 1000;

export interface WorkflowStartRequest {
  /** The script: a path relative to the workflow directory, or an absolute path inside it. */
  readonly script: string;
  /** The session that owns the run. */
  readonly owner: Owner;
  /** The run's input, `ctx.args` (JSON). Default null. */
  readonly args?: unknown;
  /** A few words for people and notifications. Default: the script's name. */
  readonly description?: string;
  readonly toolUseId?: string;
  /** The working directory of its commands. Default: the producer's `cwd`, else `process.cwd()`. */
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string>>;
  /** A legacy run: not journaled, not resumable, and not cancellable (stops answer `cancel_not_supported`). */
  readonly legacy?: boolean;
}

export interface WorkflowCallerOptions {
  /** The session that owns the run. */
  readonly caller: Owner;
  readonly toolUseId?: string;
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string>>;
}

export interface WorkflowAmendOptions extends WorkflowCallerOptions {
  /** The replacement script. */
  readonly script: string;
  /** The replacement's input. Default: the superseded run's input. */
  readonly args?: unknown;
  /** Carry the superseded run's finished steps over (same names are not run again). Default true. */
  readonly keepFinishedSteps?: boolean;
  readonly description?: string;
}

export interface StartedWorkflow {
  readonly runId: TaskId;
  readonly snapshot: TaskSnapshot<WorkflowFacts>;
  readonly script: string;
}

export interface AmendedWorkflow extends StartedWorkflow {
  /** The run that was superseded. */
  readonly superseded: string;
  /** Finished steps carried over into the new run. */
  readonly carriedSteps: number;
}

export function ensureOwner(owner: Owner | undefined, field: string): asserts owner is Owner {
  if (typeof owner?.sessionId !== 'string') {
    throw new InvalidArgumentError(
      field,
      'the owner of a session (a workflow run belongs to a session)',
      owner,
    );
  }
}

export function validateText(field: string, value: unknown): void {
  if (value !== undefined && (typeof value !== 'string' || value.length > MAX_DESCRIPTION_CHARACTERS)) {
    throw new InvalidArgumentError(
      field,
      `a string of at most ${MAX_DESCRIPTION_CHARACTERS} characters`,
      value,
    );
  }
}

export function labelOf(description: string | undefined, script: string): string {
  const source = (description?.trim() || script).replace(/\s+/g, ' ');
  return source.length <= MAX_LABEL_CHARACTERS ? source : `${source.slice(0, MAX_LABEL_CHARACTERS - 1)}…`;
}
