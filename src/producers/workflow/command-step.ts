/**
 * `ctx.bash`: one command on the bash executor, in its own process group. The run's signal cancels it
 * (the whole group is killed); the result carries the newest output; a failed command rejects unless
 * the step asked for its result instead. The handle is released (its output file deleted) either way.
 */
import { resolve as resolvePath } from 'node:path';
import { type BashExecutor, DEFAULT_STDERR_PREFIX, describeExit } from '../bash/index.js';
import { WorkflowCommandFailedError } from './errors.js';
import type { WorkflowBashOptions, WorkflowCommandResult } from './workflow-context.js';

/** Lines of output a command failure quotes. */
const FAILURE_TAIL_LINES = 20;

export interface CommandStepSettings {
  readonly executor: () => BashExecutor;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>> | undefined;
  readonly commandOutputLimitBytes: number;
  readonly commandTimeoutMs: number | false;
}

export interface CommandStepHooks {
  /** Called with the command's stopped promise: the run waits for it before it settles. */
  readonly track: (stopped: Promise<unknown>) => void;
  /** Called when the command writes output (progress for stall detection). */
  readonly onOutput: () => void;
}

export async function runCommand(
  settings: CommandStepSettings,
  command: string,
  options: WorkflowBashOptions,
  signal: AbortSignal,
  hooks: CommandStepHooks,
): Promise<WorkflowCommandResult> {
  const executor = settings.executor();
  const timeoutMs =
    options.timeoutMs ?? (settings.commandTimeoutMs === false ? undefined : settings.commandTimeoutMs);
  const env = options.env ?? settings.env;
  const handle = executor.start({
    command,
    cwd: options.cwd === undefined ? settings.cwd : resolvePath(settings.cwd, options.cwd),
    ...(env === undefined ? {} : { env }),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  });
  hooks.track(handle.stopped);
  const onAbort = () => handle.cancel('the workflow run was cancelled');
  signal.addEventListener('abort', onAbort, { once: true });
  const stopListening = handle.onOutput(hooks.onOutput);
  try {
    const facts = await handle.stopped;
    const rendered = handle.render(settings.commandOutputLimitBytes, DEFAULT_STDERR_PREFIX);
    signal.throwIfAborted();
    const failed = facts.reason !== 'completed' || facts.exitCode !== 0;
    if (failed && options.reject !== false) {
      throw new WorkflowCommandFailedError(command, describeExit(facts), lastLines(rendered.text));
    }
    return {
      exitCode: facts.exitCode,
      signal: facts.signal,
      reason: facts.reason,
      output: rendered.text,
      skippedBytes: rendered.skippedBytes,
    };
  } finally {
    stopListening();
    signal.removeEventListener('abort', onAbort);
    await executor.release(handle.id);
  }
}

function lastLines(text: string): string {
  return text.replace(/\n$/, '').split('\n').slice(-FAILURE_TAIL_LINES).join('\n');
}
