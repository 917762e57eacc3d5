/**
 * What a workflow script sees: `export default async function (ctx)` receives a `WorkflowContext`.
 * Every step is journaled by name — a resumed run returns the stored result of a finished step instead
 * of running it again — so a script must give each step a stable name (the defaults are derived from
 * the command, prompt, duration or question, numbered when repeated) and do its side effects inside
 * steps.
 */
import type { JsonValue } from '../../store/index.js';

export interface WorkflowContext {
  /** The run id (also the task id, for example `workflow-3`). */
  readonly runId: string;
  /** How many times this run has been started: 1, then 2 after a resume, ... */
  readonly attempt: number;
  /** The run's input, as given to workflow_run. */
  readonly args: JsonValue;
  /** Aborted when the run is cancelled; pass it to long work. Later context calls fail once it is. */
  readonly signal: AbortSignal;
  /**
   * Runs `fn` once per run: its result is stored as JSON and returned; a resumed run returns the stored
   * result without calling `fn`. Both paths return the JSON form (a Date becomes a string, undefined
   * becomes null). A step that throws is recorded as failed and runs again on resume.
   */
  step<T>(name: string, fn: (signal: AbortSignal) => T | Promise<T>): Promise<T>;
  /**
   * Runs a shell command as a journaled step, in its own process group (cancel kills the whole group).
   * Rejects with `WORKFLOW_COMMAND_FAILED` on a non-zero exit, a signal or a deadline, unless
   * `reject: false`. Default step name: `bash:<command>`.
   */
  bash(command: string, options?: WorkflowBashOptions): Promise<WorkflowCommandResult>;
  /** Runs a subagent to its end as a journaled step. Default step name: `agent:<description or prompt>`. */
  agent(prompt: string, options?: WorkflowAgentOptions): Promise<WorkflowAgentResult>;
  /**
   * Waits, journaled: the wake-up time is stored first, so a run resumed after a crash waits only for
   * what is left. A sleeping run does not count as stalled. Default step name: `sleep:<ms>`.
   */
  sleep(ms: number, options?: { readonly name?: string }): Promise<void>;
  /** Reports progress: shown in the task's detail, and it resets stall detection. */
  progress(message: string): void;
  /**
   * Asks a question and waits for the answer (an "input needed" notification goes to the session; the
   * model or a person answers with workflow_answer). Journaled: a resumed run does not ask again.
   * A waiting run does not count as stalled. Default step name: `input:<question>`.
   */
  input(question: string, options?: { readonly name?: string }): Promise<string>;
}

export type WorkflowFunction = (context: WorkflowContext) => unknown;

export interface WorkflowBashOptions {
  readonly name?: string;
  /** Default: the run's working directory. Relative paths start from it. */
  readonly cwd?: string;
  /** The complete environment. Default: the run's environment. */
  readonly env?: Readonly<Record<string, string>>;
  /** Default: the producer's `commandTimeoutMs`. */
  readonly timeoutMs?: number;
  /** False: a failed command resolves with its result instead of rejecting. Default true. */
  readonly reject?: boolean;
}

export interface WorkflowCommandResult {
  readonly exitCode: number | null;
  readonly signal: string | null;
  /** `completed`, `timed_out`, `output_limit`, ... (the executor's stop reason). */
  readonly reason: string;
  /** The newest output (stdout and stderr merged, stderr lines marked), bounded. */
  readonly output: string;
  /** Older output left out of `output`. */
  readonly skippedBytes: number;
}

export interface WorkflowAgentOptions {
  readonly name?: string;
  /** An agent profile of the subagent producer. */
  readonly profile?: string;
  /** A few words for people (the child session's title). */
  readonly description?: string;
}

export interface WorkflowAgentResult {
  readonly text: string;
  readonly usage: { readonly totalTokens: number; readonly toolUses: number; readonly durationMs: number };
  readonly childSessionId: string | null;
}
