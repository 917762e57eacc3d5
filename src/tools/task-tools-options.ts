/** Options of the task tools, their defaults and their validation. */
import type { TaskMonitorsOptions } from '../notifications/index.js';
import { type ControllerScope, InvalidArgumentError, type TaskService } from '../tasks/index.js';
import { optionKeys, rejectUnknownOptions } from '../tasks/option-keys.js';
import type { StopDispatch } from './stop-dispatch.js';

/** The longest wait a timer can express (the registry's bound). */
const TIMER_MAX_MS = 2_147_483_647;

/** Options of `createTaskTools`. A key not listed here is rejected with `UNKNOWN_OPTION`. */
export interface TaskToolsOptions {
  readonly tasks: TaskService;
  /** How long `task_output` with `wait: true` waits when the call gives no `timeout_ms`. Default 30000. */
  readonly defaultWaitMs?: number;
  /** The longest wait a call may ask for; longer requests are capped to it. Default 600000. */
  readonly maxWaitMs?: number;
  /**
   * How long `task_kill` waits for the stopped task to end, so it can report the final status. 0 answers
   * right after the request. Default 3000.
   */
  readonly killSettleMs?: number;
  /** The byte budget of a task's text when its producer set no `outputLimitBytes`. Default none (unbounded). */
  readonly defaultOutputLimitBytes?: number;
  /** The byte budget of `task_list`'s text. Default none (its lines are bounded by the next two options). */
  readonly listOutputLimitBytes?: number;
  /** Tasks `task_list` shows: every live one, then the most recent finished ones. Default 50. */
  readonly maxListedTasks?: number;
  /** Characters of a label `task_list` shows. Default 120. */
  readonly maxLabelChars?: number;
  /**
   * The most `task_output`'s `tail_bytes` may ask for, and how far back `tail_lines` looks (4 to 16777216;
   * at most the task service's `maxCursorReadBytes`). Default 65536.
   */
  readonly maxTailBytes?: number;
  /** The most `task_output`'s `tail_lines` may ask for (1 to 100000). Default 1000. */
  readonly maxTailLines?: number;
  /**
   * Adds `task_monitor`: its monitors hand their notifications to `notify` (the owner's delivery policy),
   * within these limits (see `createTaskMonitors`). Default: no `task_monitor`.
   */
  readonly monitors?: Omit<TaskMonitorsOptions, 'tasks'>;
  /** The stop dispatch `task_kill` goes through (with its per-kind strategies). Default: a new one over `tasks`. */
  readonly stop?: StopDispatch;
  /** The name the tools attach as a task controller. Default `task-tools`. */
  readonly controllerName?: string;
  /**
   * The owners whose background work these tools can collect and stop: the sessions they are given to
   * (`{ owner }` or `{ serves }`). Default: every owner and ownerless work — right when every session gets
   * these tools; narrow it when only some do, so a session without them cannot start work nobody collects.
   */
  readonly controllerScope?: ControllerScope;
}

/** Every key of `TaskToolsOptions`; any other key is rejected with `UNKNOWN_OPTION`. */
export const TASK_TOOLS_OPTION_KEYS = optionKeys<TaskToolsOptions>()({
  tasks: true,
  defaultWaitMs: true,
  maxWaitMs: true,
  killSettleMs: true,
  defaultOutputLimitBytes: true,
  listOutputLimitBytes: true,
  maxListedTasks: true,
  maxLabelChars: true,
  maxTailBytes: true,
  maxTailLines: true,
  monitors: true,
  stop: true,
  controllerName: true,
  controllerScope: true,
});

export interface ResolvedTaskToolsOptions {
  readonly defaultWaitMs: number;
  readonly maxWaitMs: number;
  readonly killSettleMs: number;
  readonly defaultOutputLimitBytes: number | undefined;
  readonly listOutputLimitBytes: number | undefined;
  readonly maxListedTasks: number;
  readonly maxLabelChars: number;
  readonly maxTailBytes: number;
  readonly maxTailLines: number;
  readonly controllerName: string;
}

export const TASK_TOOLS_DEFAULTS = Object.freeze({
  defaultWaitMs: 30_000,
  maxWaitMs: 600_000,
  killSettleMs: 3_000,
  maxListedTasks: 50,
  maxLabelChars: 120,
  maxTailBytes: 65_536,
  maxTailLines: 1000,
  controllerName: 'task-tools',
});

function integer(field: string, value: unknown, fallback: number, minimum: number, maximum: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < minimum || value > maximum) {
    const expected =
      minimum === 1
        ? `a positive integer no greater than ${maximum}`
        : `an integer from ${minimum} to ${maximum}`;
    throw new InvalidArgumentError(field, expected, value);
  }
  return value;
}

function optionalLimit(field: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  return integer(field, value, 0, 1, Number.MAX_SAFE_INTEGER);
}

export function resolveTaskToolsOptions(options: TaskToolsOptions): ResolvedTaskToolsOptions {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options', 'an object', options);
  }
  rejectUnknownOptions(options, TASK_TOOLS_OPTION_KEYS, { where: 'createTaskTools' });
  const tasks = options.tasks as Partial<TaskService> | undefined;
  if (typeof tasks !== 'object' || tasks === null || typeof tasks.read !== 'function') {
    throw new InvalidArgumentError('tasks', 'a TaskService', options.tasks);
  }
  const maxWaitMs = integer('maxWaitMs', options.maxWaitMs, TASK_TOOLS_DEFAULTS.maxWaitMs, 1, TIMER_MAX_MS);
  const defaultWaitMs = integer(
    'defaultWaitMs',
    options.defaultWaitMs,
    Math.min(TASK_TOOLS_DEFAULTS.defaultWaitMs, maxWaitMs),
    1,
    TIMER_MAX_MS,
  );
  if (defaultWaitMs > maxWaitMs) {
    throw new InvalidArgumentError(
      'defaultWaitMs',
      `no greater than \`maxWaitMs\` (${maxWaitMs})`,
      defaultWaitMs,
    );
  }
  const controllerName = options.controllerName ?? TASK_TOOLS_DEFAULTS.controllerName;
  if (typeof controllerName !== 'string' || controllerName === '') {
    throw new InvalidArgumentError('controllerName', 'a non-empty string', controllerName);
  }
  if (options.stop !== undefined && typeof options.stop?.stopBackgroundTask !== 'function') {
    throw new InvalidArgumentError('stop', 'a StopDispatch', options.stop);
  }
  return {
    defaultWaitMs,
    maxWaitMs,
    killSettleMs: integer(
      'killSettleMs',
      options.killSettleMs,
      TASK_TOOLS_DEFAULTS.killSettleMs,
      0,
      TIMER_MAX_MS,
    ),
    defaultOutputLimitBytes: optionalLimit('defaultOutputLimitBytes', options.defaultOutputLimitBytes),
    listOutputLimitBytes: optionalLimit('listOutputLimitBytes', options.listOutputLimitBytes),
    maxListedTasks: integer(
      'maxListedTasks',
      options.maxListedTasks,
      TASK_TOOLS_DEFAULTS.maxListedTasks,
      1,
      100_000,
    ),
    maxLabelChars: integer(
      'maxLabelChars',
      options.maxLabelChars,
      TASK_TOOLS_DEFAULTS.maxLabelChars,
      8,
      100_000,
    ),
    maxTailBytes: integer(
      'maxTailBytes',
      options.maxTailBytes,
      TASK_TOOLS_DEFAULTS.maxTailBytes,
      4,
      16_777_216,
    ),
    maxTailLines: integer('maxTailLines', options.maxTailLines, TASK_TOOLS_DEFAULTS.maxTailLines, 1, 100_000),
    controllerName,
  };
}
