/** The `limits` of the session runtime: one declaration with their defaults and their validation. */
import { defineOptions, type OptionsInput, option, type ResolvedOptions } from '../tasks/options.js';

/** The `limits` of the session runtime. A key not declared here is rejected with `UNKNOWN_OPTION`. */
export const sessionLimitOptions = defineOptions('createSessionRuntime', {
  /** Model requests in one turn before it ends with `max_steps`. Default 50. */
  maxStepsPerTurn: option.integer({ min: 1, default: 50 }),
  /** Commands (inputs, notifications, configuration) one session may queue. Default 1000. */
  maxQueuedCommands: option.integer({ min: 1, default: 1000 }),
  /** The largest tool result kept in the conversation, in UTF-8 bytes (head and tail kept). Default 65536. */
  maxToolResultBytes: option.integer({ min: 1, default: 64 * 1024 }),
  /**
   * An idle session gathers notifications that arrive within this long of each other into one turn: a
   * turn starts once none arrived for this long and no other command is still ending (its exit heard, its
   * ending not yet told), so completions that land together wake the agent once, in one message. A lone
   * notification — none arrived this long before it and no command is ending — starts its turn at once.
   * Default 1 ms: the exits of a burst of commands arrive well under a millisecond apart. Raise it to
   * batch completions that are further apart; 0 gathers only what arrives in the same turn of the event
   * loop.
   */
  idleDrainQuietMs: option.integer({ min: 0, default: 1 }),
  /**
   * However busy the arrivals, a turn starts at most this long after the first queued one. Default 100 ms
   * (at least `idleDrainQuietMs`).
   */
  idleDrainMaxDelayMs: option.integer({ min: 0, default: 100, atLeast: 'idleDrainQuietMs' }),
  /**
   * Whether a lone notification (see `idleDrainQuietMs`) starts its turn at once. Default true; false makes
   * every first arrival wait out the quiet window, for a harness that would rather gather results that
   * land a little apart (the quiet window) than answer a single one sooner.
   */
  idleDrainLoneAtOnce: option.boolean({ default: true }),
  /**
   * How long a running command's pid and start time may wait to reach its task record, when the record
   * already holds its tree's tag: they go with the task's next write (its ending, for a command that ends
   * sooner), or this long after they were learnt. Meanwhile a restart recognises the tree by its tag and
   * status file. Default 1000 ms; 0 writes them at once. A durable command's are always written at once.
   */
  processFactsDelayMs: option.integer({ min: 0, max: 60_000, default: 1000 }),
  /**
   * When the store fails to record a delivery of queued notifications, they go back to the queue and the
   * session looks at it again after this long, doubling with each failure in a row. Default 1000 ms.
   */
  deliveryRetryMs: option.integer({ min: 1, default: 1000 }),
  /**
   * The longest wait between two such retries. Default 60000 ms (at least `deliveryRetryMs`). The same
   * back-off retries the task records and notifications the store refused (disk full, read-only).
   */
  deliveryRetryMaxMs: option.integer({ min: 1, default: 60_000, atLeast: 'deliveryRetryMs' }),
  /**
   * Writes the store refused that the runtime keeps in memory to retry (task records, notifications):
   * beyond this many the newest is dropped with a warning. New background work is refused while any
   * waits, so this is reached only if the store fails for very long with much work running. Default 10000.
   */
  maxPendingStoreWrites: option.integer({ min: 1, default: 10_000 }),
});

export type SessionLimits = OptionsInput<typeof sessionLimitOptions.rules>;
export type ResolvedSessionLimits = ResolvedOptions<typeof sessionLimitOptions.rules>;

/** The fixed defaults of `SessionLimits`. */
export const SESSION_LIMIT_DEFAULTS = sessionLimitOptions.defaults;
