/**
 * The model-facing `bash` tool. Foreground calls return the command's output (stderr lines marked) and
 * an exit line; they are registered as foreground tasks, so a command still running after
 * `autoBackgroundAfterMs` (or promoted by a person) moves to the background in place: same process,
 * same task id. Background calls return `{ kind: 'background', taskId }` at once.
 */
import { resolve as resolvePath } from 'node:path';
import { describeLimitSet, type LimitFacts, type Sandbox, sandboxOption } from '../../process/index.js';
import { type CancelTimer, MAX_TIMER_DELAY_MS, systemClock } from '../../tasks/clock.js';
import {
  createTrustedCaller,
  InvalidArgumentError,
  resolveWorkdir,
  type TaskId,
  type TaskSnapshot,
} from '../../tasks/index.js';
import { defineOptions, type OptionsInput, option } from '../../tasks/options.js';
import {
  type BackgroundToolValue,
  compileReadiness,
  defineTool,
  describeSandbox,
  describeToolError,
  type ForegroundCall,
  ForegroundCalls,
  formatReadiness,
  formatStatusLine,
  hasInputKey,
  limitToolText,
  READINESS_DEFAULTS,
  type ReadinessProbe,
  ToolCallAbortedError,
  type ToolContext,
  type ToolDefinition,
  type ToolResult,
  toolError,
  toolResult,
  waitForReadiness,
} from '../../tools/index.js';
import {
  type BashProducer,
  durationRule,
  MAX_COMMAND_DETAIL_CHARACTERS,
  type StartedBashTask,
} from './bash-producer.js';
import { type BashToolInput, bashToolSchema } from './bash-tool-schema.js';
import { DuplicateGuard, type DuplicateReservation, describeDuplicate } from './duplicate-guard.js';
import { CommandTooLargeError, RunInBackgroundDisabledError, SpawnFailedError } from './errors.js';
import { DEFAULT_STDERR_PREFIX, MAX_COMMAND_BYTES } from './executor.js';
import { type ExitFacts, limitWords } from './exit-facts.js';
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
  /**
   * Whether a background call whose command (whitespace normalised) and working directory match a
   * command still running in the same session answers with that task's id instead of starting a second
   * copy. A call with `allow_duplicate: true` starts it anyway. Default true.
   */
  duplicateGuard: option.boolean({ default: true }),
  /** How long `ready_when` waits when it gives no `timeout_ms`. Default 30000 ms (at most `maxReadyWaitMs`). */
  readyWaitMs: option.integer({ min: 1, max: MAX_TIMER_DELAY_MS, default: 30_000, atMost: 'maxReadyWaitMs' }),
  /** The longest `ready_when.timeout_ms` a call may ask for. Default 600000 ms. */
  maxReadyWaitMs: option.integer({ min: 1, max: MAX_TIMER_DELAY_MS, default: 600_000 }),
  /** How often `ready_when` probes a port or a URL, 5 to 60000 ms. Default 25 ms. */
  readinessPollMs: option.integer({ min: 5, max: 60_000, default: 25 }),
  /**
   * Which hosts `ready_when` may probe with `port` and `url`: `loopback` (localhost, 127.x.x.x, ::1) or
   * `any`. The probe runs in the runtime, outside the command's sandbox. Default `loopback`.
   */
  readinessHosts: option.oneOf(['loopback', 'any'] as const, { default: 'loopback' }),
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

/** The canonical value of a background call refused as a duplicate: the running task it names. */
export interface BashDuplicateValue {
  readonly kind: 'duplicate';
  /** The running task with the same command and directory; undefined while that one is still starting. */
  readonly taskId: string | undefined;
}

export type BashToolValue = BackgroundToolValue | BashForegroundValue | BashDuplicateValue;

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
  const readiness = enableRunInBackground
    ? {
        limits: {
          ...READINESS_DEFAULTS,
          pollMs: resolved.readinessPollMs,
          hosts: resolved.readinessHosts,
        },
        defaultMs: resolved.readyWaitMs,
        maxMs: resolved.maxReadyWaitMs,
      }
    : undefined;
  const duplicates =
    resolved.duplicateGuard && enableRunInBackground
      ? new DuplicateGuard(producer.tasks, MAX_COMMAND_DETAIL_CHARACTERS)
      : undefined;
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
    duplicateGuard: duplicates !== undefined,
    ...(readiness === undefined ? {} : { readiness }),
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
    const background = call.run_in_background === true || call.ready_when !== undefined;
    let probe: ReadinessProbe | undefined;
    try {
      // Before anything starts: a bad condition starts nothing.
      if (call.ready_when !== undefined && call.run_in_background === false) {
        throw new InvalidArgumentError(
          'run_in_background',
          'true or absent with ready_when (it starts the command in the background)',
          false,
        );
      }
      if (call.ready_when !== undefined && readiness !== undefined) {
        probe = compileReadiness(call.ready_when, readiness.limits, 'ready_when');
      }
    } catch (error) {
      return toolError(describeToolError(error));
    }
    const plan = planDeadlines(call, background);
    const sessionCwd = context.cwd ?? process.cwd();
    let cwd: string;
    try {
      cwd = resolveWorkdir(sessionCwd, call.workdir);
    } catch (error) {
      return toolError(describeToolError(error));
    }
    let reservation: DuplicateReservation | undefined;
    if (background && duplicates !== undefined && call.allow_duplicate !== true) {
      const checked = duplicates.check(context.caller, call.command, resolvePath(cwd));
      if ('duplicate' in checked) {
        const running = checked.duplicate;
        const answer = toolResult<BashToolValue>(describeDuplicate(running, call.command), {
          kind: 'duplicate',
          taskId: running === 'starting' ? undefined : running.id,
        });
        // Waiting for readiness is what the call was for: wait on the running copy instead.
        if (probe === undefined || running === 'starting') return answer;
        return withReadiness(answer, running.id, probe, call, context);
      }
      reservation = checked.reservation;
    }
    let started: StartedBashTask;
    try {
      started = await producer.start({
        command: call.command,
        ...(call.description === undefined ? {} : { description: call.description }),
        ...(context.caller ? { owner: context.caller } : {}),
        toolUseId: context.toolCallId,
        cwd,
        ...(context.env === undefined ? {} : { env: context.env }),
        ...(sandbox === undefined ? {} : { sandbox, workspace: resolvePath(sessionCwd) }),
        background,
        ...(durable && background ? { durable: true } : {}),
        ...(plan.timeoutMs === undefined ? {} : { timeoutMs: plan.timeoutMs }),
        ...(backgroundRuntimeCapMs === undefined ? {} : { backgroundRuntimeCapMs }),
      });
    } catch (error) {
      reservation?.release();
      return toolError(describeToolError(error));
    }
    reservation?.bind(started.taskId);
    // A foreground command can be moved to the background while it starts: runForeground sees the move
    // at once.
    const untrackStarting = background
      ? undefined
      : foreground.track({ toolCallId: context.toolCallId, taskId: started.taskId });
    const spawned = await started.handle.spawned;
    untrackStarting?.();
    if (!spawned) return spawnFailure(started);
    if (background && probe !== undefined) {
      return withReadiness(await backgroundResult(started, 'started'), started.taskId, probe, call, context);
    }
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

  /** Waits for the call's readiness condition on a running task and adds how it went to the answer. */
  const withReadiness = async (
    answer: ToolResult<BashToolValue>,
    taskId: string,
    probe: ReadinessProbe,
    call: BashToolInput,
    context: ToolContext,
  ): Promise<ToolResult<BashToolValue>> => {
    const caller = context.caller;
    const result = await waitForReadiness({
      tasks: producer.tasks,
      taskId,
      caller,
      probe,
      timeoutMs: call.ready_when?.timeout_ms ?? readiness!.defaultMs,
      signal: context.signal,
      clock,
      limits: readiness!.limits,
    });
    const lines = [answer.text, formatReadiness(result, probe)];
    if (result.outcome !== 'ended') return { ...answer, text: lines.join('\n') };
    // It ended first: the wait took its end, so this answer tells it, with its output.
    const read = await producer.tasks.read(taskId, caller).catch(() => undefined);
    if (read !== undefined) {
      const output = read.text.replace(/\n$/, '');
      lines.push(output === '' ? '(no output)' : output, formatStatusLine(read.snapshot));
    }
    return {
      ...answer,
      text: limitToolText(lines.join('\n'), producer.outputLimitBytes),
      taskEnds: [{ taskId, attempt: read?.snapshot.attempt }],
    };
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
      limits: producer.executor.limitFacts,
      duplicateGuard: duplicates !== undefined,
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
    case 'memory_limit':
    case 'cpu_limit':
    case 'pids_limit':
      return `[${facts.reason}: the command was killed after ${limitWords(facts)}]`;
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
  limits: LimitFacts | undefined;
  duplicateGuard: boolean;
}): string {
  const lines = [
    'Runs a shell command with `bash -c` and returns its output (stdout and stderr interleaved, stderr lines marked `[stderr]`) followed by its exit code. A non-zero exit code is a normal result.',
    'Processes a command leaves running when it ends (`&`, `nohup`, daemons) are stopped with it.',
    `A command may be at most ${options.maxCommandBytes} bytes; write a longer script to a file and run the file.`,
  ];
  const confinement = describeSandbox(options.sandbox);
  if (confinement !== undefined) lines.push(confinement);
  const limits = describeLimits(options.limits);
  if (limits !== undefined) lines.push(limits);
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
    lines.push(
      'To start a server or watcher and know when it is ready, give `ready_when` (an output `pattern`, a `port`, or a `url`): the call answers at that moment instead of you polling with sleep and curl.',
    );
    if (options.duplicateGuard) {
      lines.push(
        'A background command identical to one still running in this directory is not started twice: you get the running task id (`allow_duplicate: true` starts a second copy).',
      );
    }
    if (options.durable) {
      lines.push(
        'Background commands are durable: they keep running if this runtime restarts, and keep their task ids and output.',
      );
    }
  }
  return lines.join('\n');
}

/** What the model should know of the limits: a command past one is stopped, and splitting work will not help. */
function describeLimits(facts: LimitFacts | undefined): string | undefined {
  if (facts === undefined) return undefined;
  // Only what is enforced (the setrlimit floor has no CPU share and no session totals).
  const floor = facts.mechanism === 'rlimit';
  const own = describeLimitSet(floor ? { ...facts.task, cpus: undefined } : facts.task);
  const session = floor ? '' : describeLimitSet(facts.session);
  const parts = [
    own === '' ? '' : `each command ${own}`,
    session === '' ? '' : `all your commands together ${session}`,
  ];
  const text = parts.filter((part) => part !== '').join('; ');
  if (text === '') return undefined;
  return `Commands run under resource limits (${text}). A command past a memory, CPU time or process limit is stopped and its result says which (\`memory_limit\`, \`cpu_limit\`, \`pids_limit\`); make it use less (fewer parallel jobs, smaller inputs) rather than retrying it as it was.`;
}
