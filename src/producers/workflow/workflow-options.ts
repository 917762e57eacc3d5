/** Options of the workflow producer, their defaults and their validation. */
import type { DeliveryPolicy } from '../../notifications/index.js';
import type { SessionStore } from '../../store/index.js';
import { consoleLogger, InvalidArgumentError, type Logger, type TaskService } from '../../tasks/index.js';
import { optionKeys, rejectUnknownOptions } from '../../tasks/option-keys.js';
import type { BashExecutor } from '../bash/index.js';
import { type Clock, systemClock } from '../bash/index.js';
import type { SubagentProducer } from '../subagent/index.js';

/** Options of `createWorkflowProducer`. A key not listed here is rejected with `UNKNOWN_OPTION`. */
export interface WorkflowProducerOptions {
  readonly tasks: TaskService;
  /** Where runs and their step journals are kept; resuming, even after a crash, reads them from here. */
  readonly store: SessionStore;
  /**
   * The directory workflow scripts must live in (checked on real paths). Without it no script is ever
   * loaded: Errand never imports arbitrary modules by default.
   */
  readonly directory?: string;
  /** Runs `ctx.agent` steps. Without it, `ctx.agent` fails with `WORKFLOW_AGENT_UNAVAILABLE`. */
  readonly subagents?: SubagentProducer;
  /** Runs `ctx.bash` commands. Default: a private executor, created on first use, disposed with the producer. */
  readonly executor?: BashExecutor;
  /** The delivery policy of a session, for stall and input-needed notifications (e.g. `runtime.policyOf`). */
  readonly policyOf?: (sessionId: string) => DeliveryPolicy | undefined;
  /** A run with no progress for this long raises one "stalled" notification. `false` disables it. Default 300000 ms. */
  readonly stallAfterMs?: number | false;
  /** How long a cancelled script may take to return before it is abandoned. Default 5000 ms. */
  readonly cancelGraceMs?: number;
  /** The most output a `ctx.bash` result carries (the newest bytes). Default 30000. */
  readonly commandOutputLimitBytes?: number;
  /** A `ctx.bash` command's deadline when the step gives none. `false`: none. Default 3600000 ms. */
  readonly commandTimeoutMs?: number | false;
  /** The presentation budget of a run's model-facing text. Default: none (the controller's). */
  readonly outputLimitBytes?: number;
  /** The working directory of runs whose caller gives none. Default `process.cwd()`. */
  readonly cwd?: string;
  /** Schedules stall checks and cancel graces. Default: the system clock. */
  readonly clock?: Clock;
  /** Told about failures no caller sees (recording a run's end, a stop in the background). Default: the console logger. */
  readonly logger?: Logger;
}

/** Every key of `WorkflowProducerOptions`; any other key is rejected with `UNKNOWN_OPTION`. */
export const WORKFLOW_PRODUCER_OPTION_KEYS = optionKeys<WorkflowProducerOptions>()({
  tasks: true,
  store: true,
  directory: true,
  subagents: true,
  executor: true,
  policyOf: true,
  stallAfterMs: true,
  cancelGraceMs: true,
  commandOutputLimitBytes: true,
  commandTimeoutMs: true,
  outputLimitBytes: true,
  cwd: true,
  clock: true,
  logger: true,
});

export const WORKFLOW_DEFAULTS = Object.freeze({
  stallAfterMs: 300_000,
  cancelGraceMs: 5_000,
  commandOutputLimitBytes: 30_000,
  commandTimeoutMs: 3_600_000,
});

/** The longest delay a timer can express. */
const MAX_TIMER_MS = 2_147_483_647;

export interface ResolvedWorkflowOptions {
  readonly tasks: TaskService;
  readonly store: SessionStore;
  readonly directory: string | undefined;
  readonly subagents: SubagentProducer | undefined;
  readonly executor: BashExecutor | undefined;
  readonly policyOf: ((sessionId: string) => DeliveryPolicy | undefined) | undefined;
  readonly stallAfterMs: number | false;
  readonly cancelGraceMs: number;
  readonly commandOutputLimitBytes: number;
  readonly commandTimeoutMs: number | false;
  readonly outputLimitBytes: number | undefined;
  readonly cwd: string | undefined;
  readonly clock: Clock;
  readonly logger: Logger;
}

function duration(field: string, value: unknown, fallback: number, minimum: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < minimum || value > MAX_TIMER_MS) {
    throw new InvalidArgumentError(
      field,
      `an integer of milliseconds from ${minimum} to ${MAX_TIMER_MS}`,
      value,
    );
  }
  return value;
}

function positiveInteger(field: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new InvalidArgumentError(field, 'a positive integer', value);
  }
  return value;
}

function optionalDuration(field: string, value: unknown, fallback: number | false): number | false {
  if (value === false) return false;
  if (value === undefined) return fallback;
  return duration(field, value, 1, 1);
}

export function resolveWorkflowOptions(options: WorkflowProducerOptions): ResolvedWorkflowOptions {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options', 'an object', options);
  }
  rejectUnknownOptions(options, WORKFLOW_PRODUCER_OPTION_KEYS, { where: 'createWorkflowProducer' });
  if (typeof options.tasks?.start !== 'function')
    throw new InvalidArgumentError('tasks', 'a TaskService', options.tasks);
  if (typeof options.store?.createRun !== 'function') {
    throw new InvalidArgumentError('store', 'a SessionStore', options.store);
  }
  for (const field of ['directory', 'cwd'] as const) {
    const value = options[field];
    if (value !== undefined && (typeof value !== 'string' || value === '')) {
      throw new InvalidArgumentError(field, 'a non-empty path', value);
    }
  }
  if (options.subagents !== undefined && typeof options.subagents?.run !== 'function') {
    throw new InvalidArgumentError('subagents', 'a SubagentProducer', options.subagents);
  }
  if (options.executor !== undefined && typeof options.executor?.start !== 'function') {
    throw new InvalidArgumentError('executor', 'a BashExecutor', options.executor);
  }
  if (options.policyOf !== undefined && typeof options.policyOf !== 'function') {
    throw new InvalidArgumentError('policyOf', 'a function', options.policyOf);
  }
  if (options.clock !== undefined && typeof options.clock?.schedule !== 'function') {
    throw new InvalidArgumentError('clock', 'a Clock ({ now, schedule })', options.clock);
  }
  return {
    tasks: options.tasks,
    store: options.store,
    directory: options.directory,
    subagents: options.subagents,
    executor: options.executor,
    policyOf: options.policyOf,
    stallAfterMs: optionalDuration('stallAfterMs', options.stallAfterMs, WORKFLOW_DEFAULTS.stallAfterMs),
    cancelGraceMs: duration('cancelGraceMs', options.cancelGraceMs, WORKFLOW_DEFAULTS.cancelGraceMs, 0),
    commandOutputLimitBytes: positiveInteger(
      'commandOutputLimitBytes',
      options.commandOutputLimitBytes,
      WORKFLOW_DEFAULTS.commandOutputLimitBytes,
    ),
    commandTimeoutMs: optionalDuration(
      'commandTimeoutMs',
      options.commandTimeoutMs,
      WORKFLOW_DEFAULTS.commandTimeoutMs,
    ),
    outputLimitBytes:
      options.outputLimitBytes === undefined
        ? undefined
        : positiveInteger('outputLimitBytes', options.outputLimitBytes, 1),
    cwd: options.cwd,
    clock: options.clock ?? systemClock,
    logger: options.logger ?? consoleLogger,
  };
}
