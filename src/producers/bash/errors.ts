/** Errors of the bash producer, each an ErrandError with a stable code. */
import { ErrandError, type ErrorFault } from '../../tasks/index.js';

/** The command could not be started: a missing working directory or shell, or the OS refused. */
export class SpawnFailedError extends ErrandError {
  constructor(
    message: string,
    options: {
      readonly fault?: ErrorFault;
      readonly cause?: unknown;
      readonly context?: Record<string, unknown>;
    } = {},
  ) {
    super('SPAWN_FAILED', options.fault ?? 'system', message, {
      cause: options.cause,
      context: options.context ?? {},
    });
  }
}

export class ExecutorDisposedError extends ErrandError {
  constructor() {
    super('EXECUTOR_DISPOSED', 'caller', 'The bash executor is disposed; it starts no more commands');
  }
}

export class ProcessIdInUseError extends ErrandError {
  constructor(id: string) {
    super(
      'PROCESS_ID_IN_USE',
      'caller',
      `The bash executor already runs a process with id ${JSON.stringify(id)}`,
      {
        context: { field: 'id', value: id },
      },
    );
  }
}

/** A forced `run_in_background` on a tool instance created with `enableRunInBackground: false`. */
export class RunInBackgroundDisabledError extends ErrandError {
  constructor(value: unknown) {
    super(
      'RUN_IN_BACKGROUND_DISABLED',
      'caller',
      'This bash tool runs commands in the foreground only: call it again without `run_in_background`, and the call returns when the command ends (or its timeout_ms passes)',
      { context: { field: 'run_in_background', value } },
    );
  }
}

/** A command longer than a bash tool or executor accepts (before it could fail late with E2BIG). */
export class CommandTooLargeError extends ErrandError {
  constructor(field: string, bytes: number, maxBytes: number, setting?: string) {
    super(
      'COMMAND_TOO_LARGE',
      'caller',
      `Expected \`${field}\` to be at most ${maxBytes} bytes${setting ? ` (${setting})` : ''}, got ${bytes} bytes: put a long script in a file and run the file instead`,
      { context: { field, bytes, maxBytes } },
    );
  }
}

/**
 * A durable command under `workspace-write` whose durable directory is inside the writable workspace: the
 * confined command could plant links there that the unconfined wrapper writes through. Refused.
 */
export class DurableDirectoryInWorkspaceError extends ErrandError {
  constructor(directory: string, workspace: string) {
    super(
      'DURABLE_DIRECTORY_IN_WORKSPACE',
      'caller',
      `The durable directory ${JSON.stringify(directory)} is inside the sandbox's writable workspace ${JSON.stringify(workspace)}: a confined command could plant links in it that its unconfined wrapper writes through. Put output files outside the workspace (the executor's \`outputDirectoryParent\`, or TMPDIR), or start the command without \`durable\``,
      { context: { directory, workspace } },
    );
  }
}
