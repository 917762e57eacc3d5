/** Options of the Errand-backed MCP task store, their defaults and their validation. */
import { InvalidArgumentError, systemClock } from '../tasks/index.js';
import { optionKeys, rejectUnknownOptions } from '../tasks/option-keys.js';

/** Options of `createErrandTaskStore`. A key not listed here is rejected with `UNKNOWN_OPTION`. */
export interface ErrandTaskStoreOptions {
  /**
   * MCP tasks kept at once, running and finished. To make room the oldest finished one is dropped; when
   * every slot holds running work, a new task-augmented call fails with `MCP_TASK_LIMIT`. Default 100.
   */
  readonly maxTasks?: number;
  /** How long a finished task's result stays available when the request gives no `ttl`. Default 3600000 ms. */
  readonly defaultTtlMs?: number;
  /** The longest `ttl` granted; longer requests are capped (the task reports the granted one). Default 86400000 ms. */
  readonly maxTtlMs?: number;
  /** The `pollInterval` suggested to clients (the SDK's `tasks/result` also waits this long between checks). Default 500 ms. */
  readonly pollIntervalMs?: number;
  /** The most bytes of command output in a task's result (the newest output is kept). Default 30000. */
  readonly maxResultBytes?: number;
  /** How long `tasks/cancel` waits for the stopped command's process tree to be gone before answering. Default 5000 ms. */
  readonly cancelSettleMs?: number;
  /** Tasks per `tasks/list` page. Default 50. */
  readonly listPageSize?: number;
  /** Epoch-milliseconds clock. Default: the system clock. */
  readonly now?: () => number;
}

/** Every key of `ErrandTaskStoreOptions`; any other key is rejected with `UNKNOWN_OPTION`. */
export const ERRAND_TASK_STORE_OPTION_KEYS = optionKeys<ErrandTaskStoreOptions>()({
  maxTasks: true,
  defaultTtlMs: true,
  maxTtlMs: true,
  pollIntervalMs: true,
  maxResultBytes: true,
  cancelSettleMs: true,
  listPageSize: true,
  now: true,
});

export interface ResolvedErrandTaskStoreOptions {
  readonly maxTasks: number;
  readonly defaultTtlMs: number;
  readonly maxTtlMs: number;
  readonly pollIntervalMs: number;
  readonly maxResultBytes: number;
  readonly cancelSettleMs: number;
  readonly listPageSize: number;
  readonly now: () => number;
}

export const ERRAND_TASK_STORE_DEFAULTS = Object.freeze({
  maxTasks: 100,
  defaultTtlMs: 3_600_000,
  maxTtlMs: 86_400_000,
  pollIntervalMs: 500,
  maxResultBytes: 30_000,
  cancelSettleMs: 5_000,
  listPageSize: 50,
});

/** The longest delay a timer can express. */
const TIMER_MAX_MS = 2_147_483_647;

export function integerOption(
  field: string,
  value: unknown,
  fallback: number,
  minimum: number,
  maximum = Number.MAX_SAFE_INTEGER,
): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < minimum || value > maximum) {
    const expected =
      maximum === Number.MAX_SAFE_INTEGER
        ? minimum === 0
          ? 'a non-negative integer'
          : `an integer of at least ${minimum}`
        : `an integer from ${minimum} to ${maximum}`;
    throw new InvalidArgumentError(field, expected, value);
  }
  return value;
}

/** `prefix` places the options inside the caller's (`tasks.`), named `where` in an `UNKNOWN_OPTION` error. */
export function resolveErrandTaskStoreOptions(
  options: ErrandTaskStoreOptions = {},
  prefix = '',
  where = 'createErrandTaskStore',
): ResolvedErrandTaskStoreOptions {
  const path = prefix === '' ? undefined : prefix.slice(0, -1);
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError(path ?? 'options', 'an object', options);
  }
  rejectUnknownOptions(options, ERRAND_TASK_STORE_OPTION_KEYS, {
    where,
    ...(path === undefined ? {} : { path }),
  });
  if (options.now !== undefined && typeof options.now !== 'function') {
    throw new InvalidArgumentError(`${prefix}now`, 'a function', options.now);
  }
  const defaults = ERRAND_TASK_STORE_DEFAULTS;
  const maxTtlMs = integerOption(`${prefix}maxTtlMs`, options.maxTtlMs, defaults.maxTtlMs, 1);
  const defaultTtlMs = integerOption(
    `${prefix}defaultTtlMs`,
    options.defaultTtlMs,
    Math.min(defaults.defaultTtlMs, maxTtlMs),
    1,
    maxTtlMs,
  );
  return Object.freeze({
    maxTasks: integerOption(`${prefix}maxTasks`, options.maxTasks, defaults.maxTasks, 1),
    defaultTtlMs,
    maxTtlMs,
    pollIntervalMs: integerOption(
      `${prefix}pollIntervalMs`,
      options.pollIntervalMs,
      defaults.pollIntervalMs,
      1,
      TIMER_MAX_MS,
    ),
    maxResultBytes: integerOption(
      `${prefix}maxResultBytes`,
      options.maxResultBytes,
      defaults.maxResultBytes,
      1,
    ),
    cancelSettleMs: integerOption(
      `${prefix}cancelSettleMs`,
      options.cancelSettleMs,
      defaults.cancelSettleMs,
      0,
      TIMER_MAX_MS,
    ),
    listPageSize: integerOption(`${prefix}listPageSize`, options.listPageSize, defaults.listPageSize, 1),
    now: options.now ?? systemClock.now,
  });
}
