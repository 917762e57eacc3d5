/** Options of the background event feed: one declaration with their defaults and their validation. */
import { randomBytes } from 'node:crypto';
import {
  type Caller,
  consoleLogger,
  createTrustedCaller,
  systemClock,
  type TaskService,
  type TaskSnapshot,
} from '../tasks/index.js';
import { defineOptions, type OptionsInput, option, type ResolvedOptions } from '../tasks/options.js';
import { readDetailFacts, type ViewerFacts, type ViewerFactsReader } from './background-task-facts.js';
import type { NotificationLedgerView } from './notification-ledger-view.js';

/**
 * Reads facts that have no event (a byte count, a tail snapshot) straight from a running task's
 * producer. Called at most once per `sampleIntervalMs` per task; must not consume output.
 */
export type ViewerFactsSampler = (
  task: TaskSnapshot,
) => ViewerFacts | undefined | Promise<ViewerFacts | undefined>;

const STREAM_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** The options of `createBackgroundEventFeed`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
export const backgroundEventFeedOptions = defineOptions('createBackgroundEventFeed', {
  /** The task service whose change feed the events are derived from. */
  tasks: option.required(option.shaped<TaskService>('a TaskService', ['onTasksChanged'])),
  /** Whose view the feed shows (an owner: one session). Default: a trusted caller (every session's work). */
  caller: option.shaped<NonNullable<Caller>>('a Caller', [], {
    fallback: () => createTrustedCaller('errand-events'),
  }),
  /** Events kept for replay after a reconnect; a viewer further behind gets a reset. Default 1000. */
  ringSize: option.integer({ min: 1, default: 1000 }),
  /** The longest tail an event carries, in UTF-8 bytes (the end is kept). Default 1024. */
  tailMaxBytes: option.integer({ min: 1, default: 1024 }),
  /** Reads viewer facts out of a task's detail. Default: `pid`, `outputBytes`, `tail`, `exitCode`, `signal`, `reason`. */
  readFacts: option.func<ViewerFactsReader>({ default: readDetailFacts }),
  /**
   * Samples facts that have no event. Absent (the default): no polling at all. When given, running
   * background tasks are sampled every `sampleIntervalMs`, at most `maxSampledTasks` per round.
   */
  sampler: option.func<ViewerFactsSampler>(),
  /** The sampling period. Default 2000 ms. */
  sampleIntervalMs: option.integer({ min: 1, default: 2000 }),
  /** Tasks sampled per round; the rest wait for the next rounds (round robin). Default 64. */
  maxSampledTasks: option.integer({ min: 1, default: 64 }),
  /** Names this feed's id sequence; viewers resuming with another feed's ids get a reset. Default random. */
  streamId: option.custom<string>(
    '1-64 letters, digits, "_" or "-"',
    (value) => typeof value === 'string' && STREAM_ID_PATTERN.test(value),
    { fallback: () => randomBytes(6).toString('base64url') },
  ),
  /**
   * The sessions' ledgers, which say when an ended work's result is pending: from its end until its
   * notification is delivered or discarded, or the model read the end. Absent: a result is pending
   * while nobody took the end's delivery claim (a notifier takes it before queueing, so this is short).
   */
  ledger: option.shaped<NotificationLedgerView>(
    'a NotificationLedgerView (deliverableGeneration, queuedTaskIds, subscribe)',
    ['deliverableGeneration', 'queuedTaskIds', 'subscribe'],
  ),
  /**
   * While a shown work's result is pending, its ledger is read again this often: a delivery made by
   * another process on the same store (a client hook) sends this feed no signal. Default 1000 ms.
   */
  ledgerCheckMs: option.integer({ min: 1, default: 1000 }),
  /** The clock, in epoch milliseconds. Default: the system clock. */
  now: option.func({ default: systemClock.now }),
  /** Told about failing listeners and samplers. Default: the console logger. */
  logger: option.logger({ default: consoleLogger }),
});

/** Options of `createBackgroundEventFeed`. */
export type BackgroundEventFeedOptions = OptionsInput<typeof backgroundEventFeedOptions.rules>;
export type ResolvedFeedOptions = ResolvedOptions<typeof backgroundEventFeedOptions.rules>;

/** The fixed defaults of `BackgroundEventFeedOptions`. */
export const BACKGROUND_EVENT_FEED_DEFAULTS = backgroundEventFeedOptions.defaults;
