/**
 * The model-facing `bash` tool. Foreground calls return the command's output (stderr lines marked) and
 * an exit line; they are registered as foreground tasks, so a command still running after
 * `autoBackgroundAfterMs` (or promoted by a person) moves to the background in place: same process,
 * same task id. Background calls return `{ kind: 'background', taskId }` at once.
 */
import { resolve as resolvePath } from 'node:path';
import { type Sandbox, sandboxOption } from '../../process/index.js';
import { type CancelTimer, MAX_TIMER_DELAY_MS, systemClock } from '../../tasks/clock.js';
import { createTrustedCaller, resolveWorkdir, type TaskId, type TaskSnapshot } from '../../tasks/index.js';
import { defineOptions, type OptionsInput, option } from '../../tasks/options.js';
import {
  type BackgroundToolValue,
  defineTool,
  describeSandbox,
  describeToolError,
  type ForegroundCall,
  ForegroundCalls,
  hasInputKey,
  ToolCallAbortedError,
  type ToolContext,
  type ToolDefinition,
  type ToolResult,
  toolError,
  toolResult,
} from '../../tools/index.js';
import { type BashProducer, durationRule, type StartedBashTask } from './bash-producer.js';
import { type BashToolInput, bashToolSchema } from './bash-tool-schema.js';
import { CommandTooLargeError, RunInBackgroundDisabledError, SpawnFailedError } from './errors.js';
import { DEFAULT_STDERR_PREFIX, MAX_COMMAND_BYTES } from './executor.js';
import type { ExitFacts } from './exit-facts.js';
import { withSkippedOutputMarker } from './skipped-output-marker.js';

/** The options of `createBashTool`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
export const bashToolOptions = defineOptions('createBashTool', {
  producer: option.required(option.shaped<BashProducer>('a BashProducer', ['start'])),
  /**
   * Whether the model may run commands in the background (`run_in_background`, and auto-backgrounding).
   * False removes the parameter from the schema and rejects a forced one. Default true.
   */
  enableRunInBackground: option.boolean({ default: true }),
  /**
   * A foreground command's deadline when the call gives none. Default 120000 ms (at most `maxTimeoutMs`).
   * With auto-backgrounding on (the default) a call without `timeout_ms` moves to the background first and
   * then runs to its end, so this deadline applies only when `autoBackgroundAfterMs` is `false` or
   * run_in_background is off.
   */
  defaultTimeoutMs: option.integer({ min: 1, default: 120_000, atMost: 'maxTimeoutMs' }),
  /** The largest `timeout_ms` a call may ask for. Default 600000 ms. */
  maxTimeoutMs: option.integer({ min: 1, max: MAX_TIMER_DELAY_MS, default: 600_000 }),
  /**
   * A foreground command still running after this long moves to the background (same process, same
   * task id) and the call returns its task id. Must not exceed `defaultTimeoutMs`; a call whose own
   * `timeout_ms` is shorter is killed at its deadline instead. `false` disables it. Default 15000 ms
   * (at most `defaultTimeoutMs`).
   */
  autoBackgroundAfterMs: option.orFalse(
    option.integer({ min: 1, default: 15_000, atMost: 'defaultTimeoutMs' }),
  ),
  /**
   * The most a background command of this tool may run (from its start), in ms. Default: no cap. A
   * subagent's tool uses `SUBAGENT_BACKGROUND_RUNTIME_CAP_MS` (one hour).
   */
  backgroundRuntimeCapMs: durationRule(),
  /**
   * When a command cannot start, how long the call waits for its task to settle, so the failure is
   * reported by the call's result and not by a second notification. Default 10000 ms.
   */
  spawnFailureWaitMs: durationRule({ default: 10_000 }),
  /**
   * The largest `command` a call may give, in UTF-8 bytes (1 to 131071, the kernel's limit for one
   * argument). A longer one is refused with `COMMAND_TOO_LARGE` before anything starts. Default 65536.
   */
  maxCommandBytes: option.integer({ min: 1, max: MAX_COMMAND_BYTES, default: 65_536 }),
  /**
   * Whether commands started with `run_in_background` run durably: output straight to their file, exit
   * status captured by a wrapper, and they keep running when the runtime dies (re-attached when the
   * session is resumed). Foreground commands, and those that move to the background later, are not
   * durable (their output is already piped through the runtime). Default false.
   */
  durable: option.boolean({ default: false }),
  /**
   * The sandbox this tool's commands run in, whatever the executor's default: a profile (`read-only`,
   * `workspace-write`, `full`), `{ profile, network }`, or a `Sandbox`. `workspace-write` allows writes
   * under the session's working directory (not a `workdir` the model names). The tool's description
   * tells the model. `SANDBOX_UNAVAILABLE` (naming Debian's `bubblewrap`) when bwrap is missing. Default:
   * the executor's `sandbox`.
   */
  sandbox: sandboxOption(),
  /** Times auto-backgrounding. Default: the system clock. */
  clock: option.clock({ default: systemClock }),
});

/** Options of `createBashTool`. */
export type BashToolOptions = OptionsInput<typeof bashToolOptions.rules>;

/** The fixed defaults of `BashToolOptions`. */
export const BASH_TOOL_DEFAULTS = bashToolOptions.defaults;

/** The canonical value of a foreground call that ran to its end. */
export interface BashForegroundValue {
  readonly kind: 'foreground';
  readonly taskId: string;
  readonly reason: ExitFacts['reason'];
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly outputFile: string | null;
}

export type BashToolValue = BackgroundToolValue | BashForegroundValue;

export interface BashTool extends ToolDefinition<BashToolInput, BashToolValue> {
  /**
   * Moves a running foreground command to the background now (a person's key). `key` is the tool call
   * id or the task id. Undefined when no running foreground call of this tool matches.
   */
  promote(key: string): TaskSnapshot | undefined;
  /** The foreground calls running now, oldest first. */
  foregroundCalls(): ForegroundCall[];
}

const trusted = createTrustedCaller('bash-tool');

interface DeadlinePlan {
  /** The deadline the command starts with. */
  readonly timeoutMs: number | undefined;
  /** When a foreground command moves to the background by itself; false: never. */
  readonly promoteAfterMs: number | false;
  /** Whether the deadline still applies after moving to the background by itself. */
  readonly keepTimeout: boolean;
}

export function createBashTool(options: BashToolOptions): BashTool {
  const resolved = bashToolOptions.resolve(options);
  const { producer, enableRunInBackground, defaultTimeoutMs, maxTimeoutMs, clock } = resolved;
  const { backgroundRuntimeCapMs, spawnFailureWaitMs } = resolved;
  const autoBackgroundAfterMs = enableRunInBackground ? resolved.autoBackgroundAfterMs : false;
  const { maxCommandBytes, durable } = resolved;
  const sandbox = resolved.sandbox ?? producer.executor.options.sandbox;
  /** The checks that run on the raw input, before the schema (an oversized command is not even parsed). */
  const refuseInput = (raw: unknown): Error | undefined => {
    const command = (raw as { command?: unknown } | null)?.command;
    if (typeof command === 'string' && command.length > maxCommandBytes / 3) {
      const bytes = Buffer.byteLength(command, 'utf8');
      if (bytes > maxCommandBytes) {
        return new CommandTooLargeError('command', bytes, maxCommandBytes, 'maxCommandBytes');
      }
    }
    if (!enableRunInBackground && hasInputKey('run_in_background', raw)) {
      return new RunInBackgroundDisabledError((raw as BashToolInput).run_in_background);
    }
    return undefined;
  };
  const foreground = new ForegroundCalls();
  const schema = bashToolSchema({
    enableRunInBackground,
    defaultTimeoutMs,
    maxTimeoutMs,
    autoBackgroundAfterMs,
  });

  const execute = async (input: BashToolInput, context: ToolContext): Promise<ToolResult<BashToolValue>> => {
    const refused = refuseInput(input);
    if (refused !== undefined) return toolError(describeToolError(refused));
    const parsed = schema.safeParse(input);
    if (!parsed.success) {
      const problems = parsed.error.issues.map(
        (issue) => `\`${issue.path.join('.') || '(input)'}\`: ${issue.message}`,
      );
      return toolError(`Error [INVALID_TOOL_INPUT]: invalid input for bash: ${problems.join('; ')}`);
    }
    if (context.signal.aborted)
      return toolError(describeToolError(new ToolCallAbortedError('bash', context.signal.reason)));
    const call = parsed.data;
    const background = call.run_in_background === true;
    const plan = planDeadlines(call, background);
    const sessionCwd = context.cwd ?? process.cwd();
    let started: StartedBashTask;
    try {
      started = await producer.start({
        command: call.command,
        ...(call.description === undefined ? {} : { description: call.description }),
        ...(context.caller ? { owner: context.caller } : {}),
        toolUseId: context.toolCallId,
        cwd: resolveWorkdir(sessionCwd, call.workdir),
        ...(context.env === undefined ? {} : { env: context.env }),
        ...(sandbox === undefined ? {} : { sandbox, workspace: resolvePath(sessionCwd) }),
        background,
        ...(durable && background ? { durable: true } : {}),
        ...(plan.timeoutMs === undefined ? {} : { timeoutMs: plan.timeoutMs }),
        ...(backgroundRuntimeCapMs === undefined ? {} : { backgroundRuntimeCapMs }),
      });
    } catch (error) {
      return toolError(describeToolError(error));
    }
    // A foreground command can be moved to the background while it starts (a launcher that spawns
    // elsewhere, the spawner sidecar, answers a moment later): runForeground sees the move at once.
    const untrackStarting = background
      ? undefined
      : foreground.track({ toolCallId: context.toolCallId, taskId: started.taskId });
    const spawned = await started.handle.spawned;
    untrackStarting?.();
    if (!spawned) return spawnFailure(started);
    if (background) return backgroundResult(started, 'started');
    return runForeground(started, context, plan);
  };

  /**
   * When a call is killed and when it moves to the background. A background call keeps only an explicit
   * `timeout_ms`. A foreground call without one moves to the background after `autoBackgroundAfterMs` and
   * then runs to its end (or the runtime cap); with one, it is killed at that deadline, even if it moved
   * to the background first.
   */
  const planDeadlines = (call: BashToolInput, background: boolean): DeadlinePlan => {
    if (background) return { timeoutMs: call.timeout_ms, promoteAfterMs: false, keepTimeout: true };
    const explicit = call.timeout_ms;
    if (autoBackgroundAfterMs === false) {
      return { timeoutMs: explicit ?? defaultTimeoutMs, promoteAfterMs: false, keepTimeout: false };
    }
    if (explicit === undefined)
      return { timeoutMs: undefined, promoteAfterMs: autoBackgroundAfterMs, keepTimeout: false };
    if (autoBackgroundAfterMs < explicit) {
      return { timeoutMs: explicit, promoteAfterMs: autoBackgroundAfterMs, keepTimeout: true };
    }
    return { timeoutMs: explicit, promoteAfterMs: false, keepTimeout: false };
  };

  const runForeground = async (
    started: StartedBashTask,
    context: ToolContext,
    plan: DeadlinePlan,
  ): Promise<ToolResult<BashToolValue>> => {
    const { taskId } = started;
    const promoteAfterMs = plan.promoteAfterMs;
    const untrack = foreground.track({ toolCallId: context.toolCallId, taskId });
    let autoPromoted = false;
    const cancelAuto: CancelTimer =
      promoteAfterMs === false
        ? () => {}
        : clock.schedule(promoteAfterMs, () => {
            autoPromoted = true;
            requestBackground(taskId);
          });
    const onAbort = () => {
      producer.tasks
        .kill(taskId, trusted, 'the tool call was aborted', { initiator: 'user' })
        .catch(() => {});
    };
    context.signal.addEventListener('abort', onAbort, { once: true });
    // An abort that came while the command was starting is honoured too.
    if (context.signal.aborted) onAbort();
    try {
      const moved = await producer.tasks.waitForBackground(taskId, trusted);
      if (moved === 'backgrounded') {
        // The producer dropped the foreground deadline; an explicit one survives auto-backgrounding.
        if (autoPromoted && plan.keepTimeout && plan.timeoutMs !== undefined) {
          started.handle.setTimeout(Math.min(plan.timeoutMs, backgroundRuntimeCapMs ?? plan.timeoutMs));
        }
        return backgroundResult(started, autoPromoted ? 'auto' : 'promoted', promoteAfterMs);
      }
      return foregroundResult(started);
    } finally {
      cancelAuto();
      context.signal.removeEventListener('abort', onAbort);
      untrack();
    }
  };

  const requestBackground = (taskId: TaskId): TaskSnapshot | undefined => {
    try {
      return producer.promote(taskId, trusted);
    } catch {
      return undefined; // Forgotten meanwhile.
    }
  };

  const foregroundResult = (started: StartedBashTask): ToolResult<BashToolValue> => {
    const { taskId, handle } = started;
    const facts = handle.exit;
    try {
      // The result goes back in this call; the task's end needs no notification.
      producer.tasks.claim(taskId, trusted);
    } catch {
      // Already forgotten (its owner was disposed meanwhile).
    }
    if (facts === undefined) {
      return toolError(`Error: task ${taskId} ended before its command did: the executor no longer knows it`);
    }
    const rendered = handle.render(producer.outputLimitBytes, DEFAULT_STDERR_PREFIX);
    const output = withSkippedOutputMarker(rendered.text, rendered.skippedBytes, facts.outputFile);
    const body = output === '' ? '(no output)\n' : output.endsWith('\n') ? output : `${output}\n`;
    return toolResult(`${body}${exitLine(facts)}`, {
      kind: 'foreground',
      taskId,
      reason: facts.reason,
      exitCode: facts.exitCode,
      signal: facts.signal,
      outputFile: facts.outputFile,
    });
  };

  const backgroundResult = async (
    started: StartedBashTask,
    how: 'started' | 'auto' | 'promoted',
    afterMs: number | false = false,
  ): Promise<ToolResult<BashToolValue>> => {
    const { taskId, handle } = started;
    // The path is shown to the model: the file must exist first.
    const outputFile = await handle.ensureOutputFile();
    const pid = handle.pid === undefined ? '' : ` (pid ${handle.pid})`;
    const lines: string[] = [];
    if (how === 'started') {
      lines.push(`Started ${taskId} in the background${pid}.`);
    } else {
      const why =
        how === 'auto'
          ? `was still running after ${afterMs} ms, so it`
          : 'was moved to the background by the user; it';
      lines.push(`The command ${why} keeps running in the background as ${taskId}${pid}.`);
      const read = handle.read(producer.outputLimitBytes);
      const soFar = withSkippedOutputMarker(read.text, read.skippedBytes, read.outputFile);
      lines.push(soFar === '' ? 'No output so far.' : `Output so far:\n${soFar.replace(/\n$/, '')}`);
    }
    if (outputFile !== undefined) lines.push(`Output file: ${outputFile}`);
    lines.push(
      `Read new output with task_output (task_id "${taskId}"), stop it with task_kill; you will be notified when it ends.`,
    );
    return toolResult(lines.join('\n'), { kind: 'background', taskId });
  };

  const spawnFailure = async (started: StartedBashTask): Promise<ToolResult<BashToolValue>> => {
    const facts = await started.handle.stopped;
    // The model learns of the failure here; the task's end needs no second notification.
    await producer.tasks.wait(started.taskId, spawnFailureWaitMs, trusted).catch(() => undefined);
    const error = new SpawnFailedError(`Task ${started.taskId} ${describeFailure(facts)}`, {
      fault: facts.errorCode === 'ENOENT' || facts.errorCode === 'ENOTDIR' ? 'caller' : 'system',
      context: { taskId: started.taskId, errorCode: facts.errorCode },
    });
    return toolError(describeToolError(error));
  };

  const definition = defineTool<BashToolInput, BashToolValue>({
    name: 'bash',
    description: describeTool({
      enableRunInBackground,
      defaultTimeoutMs,
      maxTimeoutMs,
      autoBackgroundAfterMs,
      maxCommandBytes,
      durable,
      sandbox,
    }),
    inputSchema: schema,
    execute,
    // Before the schema: a disabled parameter is absent from it (a forced one would read "unrecognized
    // key"), and an oversized command is refused without being parsed.
    refuseInput,
  });
  return Object.freeze({
    ...definition,
    promote(key: string) {
      const call = foreground.find(key);
      return call ? requestBackground(call.taskId) : undefined;
    },
    foregroundCalls: () => foreground.list(),
  });
}

function describeFailure(facts: ExitFacts): string {
  return `could not start: ${facts.error ?? 'unknown error'}`;
}

/** The last line of a foreground result. */
export function exitLine(facts: ExitFacts): string {
  switch (facts.reason) {
    case 'completed':
      return facts.signal === null ? `[exit code: ${facts.exitCode}]` : `[killed by signal ${facts.signal}]`;
    case 'timed_out':
      return `[timed out after ${facts.timeoutMs} ms; the command was killed]`;
    case 'output_limit':
      return `[output exceeded ${facts.outputLimitBytes} bytes; the command was killed]`;
    case 'cancelled':
      return `[cancelled${facts.cancelMessage ? `: ${facts.cancelMessage}` : ''}]`;
    case 'spawn_error':
      return `[${describeFailure(facts)}]`;
  }
}

function describeTool(options: {
  enableRunInBackground: boolean;
  defaultTimeoutMs: number;
  maxTimeoutMs: number;
  autoBackgroundAfterMs: number | false;
  maxCommandBytes: number;
  durable: boolean;
  sandbox: Sandbox | undefined;
}): string {
  const lines = [
    'Runs a shell command with `bash -c` and returns its output (stdout and stderr interleaved, stderr lines marked `[stderr]`) followed by its exit code. A non-zero exit code is a normal result.',
    'Processes a command leaves running when it ends (`&`, `nohup`, daemons) are stopped with it.',
    `A command may be at most ${options.maxCommandBytes} bytes; write a longer script to a file and run the file.`,
  ];
  const confinement = describeSandbox(options.sandbox);
  if (confinement !== undefined) lines.push(confinement);
  if (options.enableRunInBackground && options.autoBackgroundAfterMs !== false) {
    lines.push(
      `A command still running after ${options.autoBackgroundAfterMs} ms moves to the background by itself and you get its task id; it is killed only at an explicit \`timeout_ms\` (at most ${options.maxTimeoutMs}).`,
    );
  } else {
    lines.push(
      `A command is killed after \`timeout_ms\` (default ${options.defaultTimeoutMs}, at most ${options.maxTimeoutMs}).`,
    );
  }
  if (options.enableRunInBackground) {
    lines.push(
      'Set `run_in_background` for work that outlives this call (servers, watchers, long builds) instead of `&`: you get a task id at once, read its output with task_output, stop it with task_kill, and are notified when it ends. Keep working meanwhile instead of polling.',
    );
    if (options.durable) {
      lines.push(
        'Background commands are durable: they keep running if this runtime restarts, and keep their task ids and output.',
      );
    }
  }
  return lines.join('\n');
}
