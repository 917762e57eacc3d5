/** Options every session store takes, the retention defaults, and their validation. */
import { InvalidArgumentError, systemClock } from '../tasks/index.js';
import { optionKeys, rejectUnknownOptions, type UnknownOptionsCheck } from '../tasks/option-keys.js';
import type { PruneOptions } from './session-store.js';

/**
 * Options of `createMemorySessionStore` (and part of `openSqliteSessionStore`'s). A key not listed here (or
 * in the provider's own options) is rejected with `UNKNOWN_OPTION`.
 */
export interface SessionStoreOptions {
  /** The clock, in epoch milliseconds. Default: the system clock. */
  readonly now?: () => number;
  /**
   * The largest single text or JSON field, in UTF-8 bytes of its stored form: a message's content, a
   * ledger entry's text, a task's detail or result text, a run's input or result, a step's result.
   * Larger writes fail with `STORE_RECORD_TOO_LARGE`. Default 1 MiB.
   */
  readonly maxFieldBytes?: number;
}

/** Every key of `SessionStoreOptions`; any other key is rejected with `UNKNOWN_OPTION`. */
export const SESSION_STORE_OPTION_KEYS = optionKeys<SessionStoreOptions>()({
  now: true,
  maxFieldBytes: true,
});

/** Every key of `PruneOptions`; any other key is rejected with `UNKNOWN_OPTION`. */
export const PRUNE_OPTION_KEYS = optionKeys<PruneOptions>()({
  keepClosedSessions: true,
  settledLedgerMaxAgeMs: true,
  abandonedMessageMaxAgeMs: true,
  finishedRecordMaxAgeMs: true,
  commandMaxAgeMs: true,
});

export interface ResolvedSessionStoreOptions {
  readonly now: () => number;
  readonly maxFieldBytes: number;
}

const DAY_MS = 24 * 60 * 60 * 1000;

export const STORE_DEFAULTS = Object.freeze({
  maxFieldBytes: 1024 * 1024,
});

export const STORE_RETENTION_DEFAULTS: Readonly<Required<PruneOptions>> = Object.freeze({
  keepClosedSessions: 100,
  settledLedgerMaxAgeMs: 7 * DAY_MS,
  abandonedMessageMaxAgeMs: 7 * DAY_MS,
  finishedRecordMaxAgeMs: 30 * DAY_MS,
  commandMaxAgeMs: DAY_MS,
});

export function validateNonNegativeInteger(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new InvalidArgumentError(field, 'a non-negative integer', value);
  }
  return value;
}

export function resolveSessionStoreOptions(options: SessionStoreOptions = {}): ResolvedSessionStoreOptions {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options', 'an object', options);
  }
  if (options.now !== undefined && typeof options.now !== 'function') {
    throw new InvalidArgumentError('now', 'a function', options.now);
  }
  let maxFieldBytes: number = STORE_DEFAULTS.maxFieldBytes;
  if (options.maxFieldBytes !== undefined) {
    maxFieldBytes = validateNonNegativeInteger('maxFieldBytes', options.maxFieldBytes);
    if (maxFieldBytes < 1)
      throw new InvalidArgumentError('maxFieldBytes', 'a positive integer', maxFieldBytes);
  }
  return { now: options.now ?? systemClock.now, maxFieldBytes };
}

/** `where` names the caller for an `UNKNOWN_OPTION` error (with `path` when the options are nested). */
export function resolvePruneOptions(
  options: PruneOptions = {},
  check: UnknownOptionsCheck = { where: 'SessionStore.prune' },
): Required<PruneOptions> {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError(check.path ?? 'options', 'an object', options);
  }
  rejectUnknownOptions(options, PRUNE_OPTION_KEYS, check);
  const resolved = { ...STORE_RETENTION_DEFAULTS };
  for (const field of Object.keys(STORE_RETENTION_DEFAULTS) as (keyof PruneOptions)[]) {
    const value = options[field];
    if (value !== undefined) resolved[field] = validateNonNegativeInteger(field, value);
  }
  return resolved;
}
