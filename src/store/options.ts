/** Options every session store takes, and those of `prune`: one declaration each, with their defaults. */
import { systemClock } from '../tasks/index.js';
import { defineOptions, type OptionsInput, option, type ResolvedOptions } from '../tasks/options.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The options of `createMemorySessionStore` (and part of `openSqliteSessionStore`'s). A key not declared
 * here (or in the provider's own options) is rejected with `UNKNOWN_OPTION`.
 */
export const sessionStoreOptions = defineOptions('createMemorySessionStore', {
  /** The clock, in epoch milliseconds. Default: the system clock. */
  now: option.func({ default: systemClock.now }),
  /**
   * The largest single text or JSON field, in UTF-8 bytes of its stored form: a message's content, a
   * ledger entry's text, a task's detail or result text, a run's input or result, a step's result.
   * Larger writes fail with `STORE_RECORD_TOO_LARGE`. Default 1 MiB.
   */
  maxFieldBytes: option.integer({ min: 1, default: 1024 * 1024 }),
});

/** Options of `createMemorySessionStore`. */
export type SessionStoreOptions = OptionsInput<typeof sessionStoreOptions.rules>;
export type ResolvedSessionStoreOptions = ResolvedOptions<typeof sessionStoreOptions.rules>;

/** The fixed defaults of `SessionStoreOptions`. */
export const STORE_DEFAULTS = sessionStoreOptions.defaults;

/** What `prune` removes. A key not declared here is rejected with `UNKNOWN_OPTION`. */
export const pruneOptions = defineOptions('SessionStore.prune', {
  /** Closed sessions kept (newest by `updatedAt`); older closed sessions go with all their records. Default 100. */
  keepClosedSessions: option.integer({ min: 0, default: 100 }),
  /** Delivered and discarded ledger entries last changed longer ago than this go. Default 7 days. */
  settledLedgerMaxAgeMs: option.integer({ min: 0, default: 7 * DAY_MS }),
  /** Abandoned messages older than this go, unless a ledger entry still points at them. Default 7 days. */
  abandonedMessageMaxAgeMs: option.integer({ min: 0, default: 7 * DAY_MS }),
  /** Terminal task records and finished workflow runs (with their steps) older than this go. Default 30 days. */
  finishedRecordMaxAgeMs: option.integer({ min: 0, default: 30 * DAY_MS }),
  /**
   * Runtime commands answered longer ago than this go, and so do pending ones submitted longer ago (their
   * runtime never answered). Default 1 day.
   */
  commandMaxAgeMs: option.integer({ min: 0, default: DAY_MS }),
});

/** What `prune` removes. Every field has a default (`STORE_RETENTION_DEFAULTS`). */
export type PruneOptions = OptionsInput<typeof pruneOptions.rules>;
export type ResolvedPruneOptions = ResolvedOptions<typeof pruneOptions.rules>;

/** The retention `prune` applies when given no options. */
export const STORE_RETENTION_DEFAULTS: ResolvedPruneOptions = pruneOptions.defaults;
