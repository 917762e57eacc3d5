/** Errors of the workflow producer and its engine, each an ErrandError with a stable code. */
import { describeValue, ErrandError } from '../../tasks/index.js';

/** No workflow directory is configured, so no script may be loaded. */
export class WorkflowDirectoryNotConfiguredError extends ErrandError {
  constructor() {
    super(
      'WORKFLOW_DIRECTORY_NOT_CONFIGURED',
      'caller',
      'No workflow directory is configured (option `directory`), so no workflow script may be loaded',
      { context: { field: 'directory' } },
    );
  }
}

/** The script path does not name a readable workflow module inside the workflow directory. */
export class WorkflowScriptError extends ErrandError {
  constructor(
    code:
      | 'WORKFLOW_SCRIPT_NOT_FOUND'
      | 'WORKFLOW_SCRIPT_OUTSIDE_DIRECTORY'
      | 'WORKFLOW_SCRIPT_UNSUPPORTED'
      | 'WORKFLOW_SCRIPT_INVALID',
    message: string,
    script: string,
    cause?: unknown,
  ) {
    super(code, 'caller', message, { cause, context: { field: 'script', value: script } });
  }
}

/** A resume found the script changed since the run started: an amendment runs a changed script. */
export class WorkflowScriptChangedError extends ErrandError {
  constructor(runId: string, script: string) {
    super(
      'WORKFLOW_SCRIPT_CHANGED',
      'caller',
      `The script of workflow run ${runId} (${script}) changed since the run started; amend the run to run the changed script`,
      { context: { taskId: runId, field: 'script', value: script } },
    );
  }
}

/** The run cannot take this action in its current state (finished, superseded, still running, legacy). */
export class WorkflowRunStateError extends ErrandError {
  constructor(
    code:
      | 'WORKFLOW_RUN_FINISHED'
      | 'WORKFLOW_RUN_SUPERSEDED'
      | 'WORKFLOW_RUN_ACTIVE'
      | 'WORKFLOW_RUN_NOT_RESUMABLE',
    runId: string,
    message: string,
    context: Record<string, unknown> = {},
  ) {
    super(code, 'caller', message, { context: { taskId: runId, ...context } });
  }
}

/** An answer reached a run that asked nothing. */
export class WorkflowNoPendingInputError extends ErrandError {
  constructor(runId: string) {
    super('WORKFLOW_NO_PENDING_INPUT', 'caller', `Workflow run ${runId} is not waiting for an answer`, {
      context: { taskId: runId },
    });
  }
}

/** Two steps of one run execution used the same name: the journal finds results by name. */
export class WorkflowDuplicateStepError extends ErrandError {
  constructor(name: string) {
    super(
      'WORKFLOW_DUPLICATE_STEP',
      'caller',
      `Two steps of this workflow run are named ${JSON.stringify(name)}; give each step its own name (the journal replays results by name)`,
      { context: { field: 'name', value: name } },
    );
  }
}

/** A step's result (or the run's) cannot be stored as JSON. */
export class WorkflowResultNotJsonError extends ErrandError {
  constructor(where: string, value: unknown, cause?: unknown) {
    super(
      'WORKFLOW_RESULT_NOT_JSON',
      'caller',
      `Expected the result of ${where} to be JSON-serializable, got ${describeValue(value)}`,
      { cause, context: { field: where, value: describeValue(value) } },
    );
  }
}

/** A `ctx.bash` command ended with a non-zero exit code, a signal, or a deadline. */
export class WorkflowCommandFailedError extends ErrandError {
  constructor(command: string, how: string, output: string) {
    super(
      'WORKFLOW_COMMAND_FAILED',
      'caller',
      `The command ${JSON.stringify(command)} ${how}${output === '' ? '' : `; its output ends with:\n${output}`}`,
      {
        context: { command },
      },
    );
  }
}

/** A `ctx.agent` step's subagent did not complete. */
export class WorkflowAgentFailedError extends ErrandError {
  constructor(status: string, error: string | undefined) {
    super(
      'WORKFLOW_AGENT_FAILED',
      'caller',
      `The subagent of this step ended as ${status}${error ? `: ${error}` : ''}`,
      {
        context: { status },
      },
    );
  }
}

/** The engine has no subagent producer, so `ctx.agent` cannot run. */
export class WorkflowAgentUnavailableError extends ErrandError {
  constructor() {
    super(
      'WORKFLOW_AGENT_UNAVAILABLE',
      'caller',
      'This workflow engine has no subagent producer (option `subagents`), so ctx.agent cannot run',
    );
  }
}

/** The run was cancelled: every later context call fails with this, and pending waits reject with it. */
export class WorkflowCancelledError extends ErrandError {
  constructor(runId: string, reason: unknown) {
    super('WORKFLOW_CANCELLED', 'caller', `Workflow run ${runId} was cancelled`, {
      cause: reason,
      context: { taskId: runId },
    });
  }
}

export class WorkflowProducerDisposedError extends ErrandError {
  constructor() {
    super(
      'WORKFLOW_PRODUCER_DISPOSED',
      'caller',
      'The workflow producer is disposed; it starts no more runs',
    );
  }
}
