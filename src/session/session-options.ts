/** Limits of the session runtime, their defaults and their validation. */
import { InvalidArgumentError } from '../tasks/index.js';
import { optionKeys, rejectUnknownOptions, type UnknownOptionsCheck } from '../tasks/option-keys.js';

/** The `limits` of the session runtime. A key not listed here is rejected with `UNKNOWN_OPTION`. */
export interface SessionLimits {
  /** Model requests in one turn before it ends with `max_steps`. Default 50. */
  readonly maxStepsPerTurn?: number;
  /** Commands (inputs, notifications, configuration) one session may queue. Default 1000. */
  readonly maxQueuedCommands?: number;
  /** The largest tool result kept in the conversation, in UTF-8 bytes (head and tail kept). Default 65536. */
  readonly maxToolResultBytes?: number;
  /**
   * An idle session starts a turn once no new notification arrived for this long, so completions that
   * land together wake the agent once, in one message. Default 1 ms: the exits of a burst of commands
   * arrive well under a millisecond apart, while a lone completion still reaches the model within a few
   * milliseconds. Raise it to batch completions that are further apart.
   */
  readonly idleDrainQuietMs?: number;
  /** However busy the arrivals, a turn starts at most this long after the first queued one. Default 100 ms. */
  readonly idleDrainMaxDelayMs?: number;
  /**
   * When the store fails to record a delivery of queued notifications, they go back to the queue and the
   * session looks at it again after this long, doubling with each failure in a row. Default 1000 ms.
   */
  readonly deliveryRetryMs?: number;
  /**
   * The longest wait between two such retries. Default 60000 ms (at least `deliveryRetryMs`). The same
   * back-off retries the task records and notifications the store refused (disk full, read-only).
   */
  readonly deliveryRetryMaxMs?: number;
  /**
   * Writes the store refused that the runtime keeps in memory to retry (task records, notifications):
   * beyond this many the newest is dropped with a warning. New background work is refused while any
   * waits, so this is reached only if the store fails for very long with much work running. Default 10000.
   */
  readonly maxPendingStoreWrites?: number;
}

export type ResolvedSessionLimits = Required<SessionLimits>;

/** Every key of `SessionLimits`; any other key is rejected with `UNKNOWN_OPTION`. */
export const SESSION_LIMIT_KEYS = optionKeys<SessionLimits>()({
  maxStepsPerTurn: true,
  maxQueuedCommands: true,
  maxToolResultBytes: true,
  idleDrainQuietMs: true,
  idleDrainMaxDelayMs: true,
  deliveryRetryMs: true,
  deliveryRetryMaxMs: true,
  maxPendingStoreWrites: true,
});

export const SESSION_LIMIT_DEFAULTS: ResolvedSessionLimits = Object.freeze({
  maxStepsPerTurn: 50,
  maxQueuedCommands: 1000,
  maxToolResultBytes: 64 * 1024,
  idleDrainQuietMs: 1,
  idleDrainMaxDelayMs: 100,
  deliveryRetryMs: 1000,
  deliveryRetryMaxMs: 60_000,
  maxPendingStoreWrites: 10_000,
});

/** `check` names the function the limits were handed to, for an `UNKNOWN_OPTION` error. */
export function resolveSessionLimits(
  limits: SessionLimits = {},
  check: UnknownOptionsCheck = { where: 'createSessionRuntime', path: 'limits' },
): ResolvedSessionLimits {
  if (typeof limits !== 'object' || limits === null) {
    throw new InvalidArgumentError('limits', 'an object of session limits', limits);
  }
  rejectUnknownOptions(limits, SESSION_LIMIT_KEYS, check);
  const resolved = { ...SESSION_LIMIT_DEFAULTS };
  for (const field of Object.keys(SESSION_LIMIT_DEFAULTS) as Array<keyof ResolvedSessionLimits>) {
    const value = limits[field];
    if (value === undefined) continue;
    const minimum = field === 'idleDrainQuietMs' || field === 'idleDrainMaxDelayMs' ? 0 : 1;
    if (!Number.isSafeInteger(value) || value < minimum) {
      throw new InvalidArgumentError(
        `limits.${field}`,
        minimum === 0 ? 'a non-negative integer' : 'a positive integer',
        value,
      );
    }
    resolved[field] = value;
  }
  if (resolved.idleDrainMaxDelayMs < resolved.idleDrainQuietMs) {
    throw new InvalidArgumentError(
      'limits.idleDrainMaxDelayMs',
      `at least limits.idleDrainQuietMs (${resolved.idleDrainQuietMs})`,
      resolved.idleDrainMaxDelayMs,
    );
  }
  if (resolved.deliveryRetryMaxMs < resolved.deliveryRetryMs) {
    throw new InvalidArgumentError(
      'limits.deliveryRetryMaxMs',
      `at least limits.deliveryRetryMs (${resolved.deliveryRetryMs})`,
      resolved.deliveryRetryMaxMs,
    );
  }
  return resolved;
}
