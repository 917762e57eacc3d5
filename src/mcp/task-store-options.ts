/** Options of the Errand-backed MCP task store: one declaration with their defaults and their validation. */
import { MAX_TIMER_DELAY_MS, systemClock } from '../tasks/index.js';
import { defineOptions, type OptionsInput, option, type ResolvedOptions } from '../tasks/options.js';

/** The options of `createErrandTaskStore`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
export const errandTaskStoreOptions = defineOptions('createErrandTaskStore', {
  /**
   * MCP tasks kept at once, running and finished. To make room the oldest finished one is dropped; when
   * every slot holds running work, a new task-augmented call fails with `MCP_TASK_LIMIT`. Default 100.
   */
  maxTasks: option.integer({ min: 1, default: 100 }),
  /**
   * How long a finished task's result stays available when the request gives no `ttl`. Default 3600000 ms
   * (at most `maxTtlMs`).
   */
  defaultTtlMs: option.integer({ min: 1, default: 3_600_000, atMost: 'maxTtlMs' }),
  /** The longest `ttl` granted; longer requests are capped (the task reports the granted one). Default 86400000 ms. */
  maxTtlMs: option.integer({ min: 1, default: 86_400_000 }),
  /** The `pollInterval` suggested to clients (the SDK's `tasks/result` also waits this long between checks). Default 500 ms. */
  pollIntervalMs: option.integer({ min: 1, max: MAX_TIMER_DELAY_MS, default: 500 }),
  /** The most bytes of command output in a task's result (the newest output is kept). Default 30000. */
  maxResultBytes: option.integer({ min: 1, default: 30_000 }),
  /** How long `tasks/cancel` waits for the stopped command's process tree to be gone before answering. Default 5000 ms. */
  cancelSettleMs: option.integer({ min: 0, max: MAX_TIMER_DELAY_MS, default: 5_000 }),
  /** Tasks per `tasks/list` page. Default 50. */
  listPageSize: option.integer({ min: 1, default: 50 }),
  /** Epoch-milliseconds clock. Default: the system clock. */
  now: option.func({ default: systemClock.now }),
});

/** Options of `createErrandTaskStore`. */
export type ErrandTaskStoreOptions = OptionsInput<typeof errandTaskStoreOptions.rules>;
export type ResolvedErrandTaskStoreOptions = ResolvedOptions<typeof errandTaskStoreOptions.rules>;

/** The fixed defaults of `ErrandTaskStoreOptions`. */
export const ERRAND_TASK_STORE_DEFAULTS = errandTaskStoreOptions.defaults;
