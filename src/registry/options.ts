/** Options of the in-process task service: one declaration with their defaults and their validation. */
import {
  consoleLogger,
  InvalidArgumentError,
  isValidTaskKind,
  MAX_TIMER_DELAY_MS,
  type Owner,
  systemClock,
  type TaskKind,
} from '../tasks/index.js';
import { defineOptions, type OptionsInput, option, type ResolvedOptions } from '../tasks/options.js';
import { tracingOption } from '../tracing/index.js';

/** What a start guard is asked about. */
export interface StartGuardRequest {
  readonly kind: TaskKind;
  readonly owner: Owner | undefined;
  /** False for foreground work (its result goes back to the call that waits for it). */
  readonly background: boolean;
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

function isSequenceBlocks(value: unknown, path: string): boolean {
  const blocks = value as Partial<SequenceBlocks> | null;
  if (typeof blocks !== 'object' || blocks === null || typeof blocks.reserve !== 'function') return false;
  if (blocks.release !== undefined && typeof blocks.release !== 'function') {
    throw new InvalidArgumentError(`${path}.release`, 'a function', blocks.release);
  }
  return true;
}

/** The options of `createTaskService`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
export const taskServiceOptions = defineOptions('createTaskService', {
  /** Live (running + stopping) tasks one session may own at once. Default 10. */
  maxLiveTasksPerOwner: option.integer({ min: 1, default: 10 }),
  /**
   * Live ownerless tasks at once: they share one admission bucket, as if one owner had them all.
   * Default: `maxLiveTasksPerOwner`.
   */
  maxLiveOwnerlessTasks: option.integer({ min: 1 }),
  /** Live tasks in the whole service, owned or not. Default 1000. */
  maxLiveTasks: option.integer({ min: 1, default: 1000 }),
  /**
   * Finished tasks kept per session (and for ownerless tasks) so they can still be read; the oldest
   * are forgotten beyond it. Default 1000.
   */
  maxRetainedTasksPerOwner: option.integer({ min: 1, default: 1000 }),
  /** Observation cursors open at once on one task (`CURSOR_LIMIT` beyond). Default 16. */
  maxCursorsPerTask: option.integer({ min: 1, default: 16 }),
  /** Observation cursors open at once in the whole service (`CURSOR_LIMIT` beyond). Default 1024. */
  maxCursors: option.integer({ min: 1, default: 1024 }),
  /**
   * A cursor nobody read for this long is closed (its next read fails with `CURSOR_CLOSED`); a read in
   * progress, waiting included, keeps it open. Default 300000 (5 minutes).
   */
  cursorIdleMs: option.integer({ min: 1, max: MAX_TIMER_DELAY_MS, default: 300_000 }),
  /** The most bytes one cursor read returns (at least 4). Default 1048576 (1 MiB). */
  maxCursorReadBytes: option.integer({ min: 4, default: 1024 * 1024 }),
  /** Whether `start` requires an attached controller. Default true. */
  requireController: option.boolean({ default: true }),
  /** The clock, in epoch milliseconds. Default: the system clock. */
  now: option.func({ default: systemClock.now }),
  /**
   * The last sequence number already used per kind, so ids continue after those of an earlier process
   * (a store that outlives restarts). Default: every kind starts at 1.
   */
  initialSequences: option.record(option.integer({ min: 0 }), {
    keys: { expected: 'task kinds', isValid: isValidTaskKind },
  }),
  /** Formats the id of the `sequence`-th task of `kind`. Default `<kind>-<sequence>`. */
  formatId: option.func<(kind: TaskKind, sequence: number) => string>(),
  /**
   * Where sequence numbers come from when several services share one store (processes on one data
   * directory): blocks reserved there, so two services never hand out the same id. Default: none, each
   * service counts on its own from `initialSequences`.
   */
  sequenceBlocks: option.custom<SequenceBlocks>('an object with a reserve function', isSequenceBlocks),
  /**
   * A check of the host's, run in `start`'s preflight (after validation and the controller check, before
   * the limits and before the producer runs): a throw refuses the start and reaches the caller unchanged.
   * A session runtime uses it to refuse background work while its store cannot record endings. Default none.
   */
  startGuard: option.func<(request: StartGuardRequest) => void>(),
  /**
   * Traces every task's lifetime as a span (`task <kind>`) in the context active at `start`, and stores
   * its traceparent with the task. A `Tracing` (e.g. `openTelemetryTracing({ tracer })`), or false for
   * none. Default: the global OpenTelemetry API when `@opentelemetry/api` is installed, else none.
   */
  tracing: tracingOption(),
  /** Told about failing listeners and cancels. Default: the console logger. */
  logger: option.logger({ default: consoleLogger }),
});

/** Options of `createTaskService`. */
export type TaskServiceOptions = OptionsInput<typeof taskServiceOptions.rules>;
export type ResolvedTaskServiceOptions = ResolvedOptions<typeof taskServiceOptions.rules>;

/** The fixed defaults of `TaskServiceOptions`. */
export const TASK_SERVICE_DEFAULTS = taskServiceOptions.defaults;
