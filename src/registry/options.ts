/** Options of the in-process task service, their defaults and their validation. */

import {
  consoleLogger,
  InvalidArgumentError,
  isValidTaskKind,
  type Logger,
  systemClock,
  type TaskKind,
} from '../tasks/index.js';
import { optionKeys, rejectUnknownOptions, validateLoggerOption } from '../tasks/option-keys.js';
import { isTracing, resolveTracing, type Tracing, type TracingSetting } from '../tracing/index.js';

/** Options of `createTaskService`. A key not listed here is rejected with `UNKNOWN_OPTION`. */
export interface TaskServiceOptions {
  /** Live (running + stopping) tasks one session may own at once. Default 10. */
  readonly maxLiveTasksPerOwner?: number;
  /**
   * Live ownerless tasks at once: they share one admission bucket, as if one owner had them all.
   * Default: `maxLiveTasksPerOwner`.
   */
  readonly maxLiveOwnerlessTasks?: number;
  /** Live tasks in the whole service, owned or not. Default 1000. */
  readonly maxLiveTasks?: number;
  /**
   * Finished tasks kept per session (and for ownerless tasks) so they can still be read; the oldest
   * are forgotten beyond it. Default 1000.
   */
  readonly maxRetainedTasksPerOwner?: number;
  /** Whether `start` requires an attached controller. Default true. */
  readonly requireController?: boolean;
  /** The clock, in epoch milliseconds. */
  readonly now?: () => number;
  /**
   * The last sequence number already used per kind, so ids continue after those of an earlier process
   * (a store that outlives restarts). Default: every kind starts at 1.
   */
  readonly initialSequences?: Readonly<Record<string, number>>;
  /** Formats the id of the `sequence`-th task of `kind`. Default `<kind>-<sequence>`. */
  readonly formatId?: (kind: TaskKind, sequence: number) => string;
  /**
   * Where sequence numbers come from when several services share one store (processes on one data
   * directory): blocks reserved there, so two services never hand out the same id. Default: none, each
   * service counts on its own from `initialSequences`.
   */
  readonly sequenceBlocks?: SequenceBlocks;
  /**
   * Traces every task's lifetime as a span (`task <kind>`) in the context active at `start`, and stores
   * its traceparent with the task. A `Tracing` (e.g. `openTelemetryTracing({ tracer })`), or false for
   * none. Default: the global OpenTelemetry API when `@opentelemetry/api` is installed, else none.
   */
  readonly tracing?: TracingSetting;
  readonly logger?: Logger;
}

/** A range of sequence numbers reserved for one service, both ends included. */
export interface SequenceBlock {
  readonly first: number;
  readonly last: number;
}

export interface SequenceBlocks {
  /** Reserves numbers of `kind` above `after` for this service (a throw rejects the start that asked). */
  reserve(kind: TaskKind, after: number): SequenceBlock;
  /** Gives back the unused end of `block` when the service is disposed (`lastUsed`: the last one used). */
  release?(kind: TaskKind, block: SequenceBlock, lastUsed: number): void;
}

/** Every key of `TaskServiceOptions`; any other key is rejected with `UNKNOWN_OPTION`. */
export const TASK_SERVICE_OPTION_KEYS = optionKeys<TaskServiceOptions>()({
  maxLiveTasksPerOwner: true,
  maxLiveOwnerlessTasks: true,
  maxLiveTasks: true,
  maxRetainedTasksPerOwner: true,
  requireController: true,
  now: true,
  initialSequences: true,
  formatId: true,
  sequenceBlocks: true,
  tracing: true,
  logger: true,
});

export interface ResolvedTaskServiceOptions {
  readonly maxLiveTasksPerOwner: number;
  readonly maxLiveOwnerlessTasks: number;
  readonly maxLiveTasks: number;
  readonly maxRetainedTasksPerOwner: number;
  readonly requireController: boolean;
  readonly now: () => number;
  readonly formatId: ((kind: TaskKind, sequence: number) => string) | undefined;
  readonly sequenceBlocks: SequenceBlocks | undefined;
  readonly initialSequences: Readonly<Record<string, number>>;
  readonly tracing: Tracing;
  readonly logger: Logger;
}

export const TASK_SERVICE_DEFAULTS = Object.freeze({
  maxLiveTasksPerOwner: 10,
  maxLiveTasks: 1000,
  maxRetainedTasksPerOwner: 1000,
});

function positiveInteger(field: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new InvalidArgumentError(field, 'a positive integer', value);
  }
  return value;
}

export function resolveTaskServiceOptions(options: TaskServiceOptions = {}): ResolvedTaskServiceOptions {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options', 'an object', options);
  }
  rejectUnknownOptions(options, TASK_SERVICE_OPTION_KEYS, { where: 'createTaskService' });
  // A broken logger would throw from inside settlement, where listener failures are reported.
  validateLoggerOption(options.logger);
  if (options.requireController !== undefined && typeof options.requireController !== 'boolean') {
    throw new InvalidArgumentError('requireController', 'a boolean', options.requireController);
  }
  for (const field of ['now', 'formatId'] as const) {
    if (options[field] !== undefined && typeof options[field] !== 'function') {
      throw new InvalidArgumentError(field, 'a function', options[field]);
    }
  }
  const initialSequences = options.initialSequences ?? {};
  if (typeof initialSequences !== 'object' || initialSequences === null) {
    throw new InvalidArgumentError('initialSequences', 'an object of kind → number', initialSequences);
  }
  for (const [kind, sequence] of Object.entries(initialSequences)) {
    if (!isValidTaskKind(kind)) {
      throw new InvalidArgumentError('initialSequences', 'keys that are task kinds', kind);
    }
    if (!Number.isSafeInteger(sequence) || sequence < 0) {
      throw new InvalidArgumentError(`initialSequences.${kind}`, 'a non-negative integer', sequence);
    }
  }
  const maxLiveTasksPerOwner = positiveInteger(
    'maxLiveTasksPerOwner',
    options.maxLiveTasksPerOwner,
    TASK_SERVICE_DEFAULTS.maxLiveTasksPerOwner,
  );
  return {
    initialSequences,
    maxLiveTasksPerOwner,
    maxLiveOwnerlessTasks: positiveInteger(
      'maxLiveOwnerlessTasks',
      options.maxLiveOwnerlessTasks,
      maxLiveTasksPerOwner,
    ),
    maxLiveTasks: positiveInteger('maxLiveTasks', options.maxLiveTasks, TASK_SERVICE_DEFAULTS.maxLiveTasks),
    maxRetainedTasksPerOwner: positiveInteger(
      'maxRetainedTasksPerOwner',
      options.maxRetainedTasksPerOwner,
      TASK_SERVICE_DEFAULTS.maxRetainedTasksPerOwner,
    ),
    requireController: options.requireController ?? true,
    now: options.now ?? systemClock.now,
    formatId: options.formatId,
    sequenceBlocks: validateSequenceBlocks(options.sequenceBlocks),
    tracing: tracingOption(options.tracing),
    logger: options.logger ?? consoleLogger,
  };
}

function tracingOption(setting: TracingSetting | undefined): Tracing {
  if (setting !== undefined && setting !== false && !isTracing(setting)) {
    throw new InvalidArgumentError('tracing', 'a Tracing (see openTelemetryTracing) or false', setting);
  }
  return resolveTracing(setting);
}

function validateSequenceBlocks(blocks: SequenceBlocks | undefined): SequenceBlocks | undefined {
  if (blocks === undefined) return undefined;
  if (typeof blocks !== 'object' || blocks === null || typeof blocks.reserve !== 'function') {
    throw new InvalidArgumentError('sequenceBlocks', 'an object with a reserve function', blocks);
  }
  if (blocks.release !== undefined && typeof blocks.release !== 'function') {
    throw new InvalidArgumentError('sequenceBlocks.release', 'a function', blocks.release);
  }
  return blocks;
}
