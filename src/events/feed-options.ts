/** Options of the background event feed, their defaults and their validation. */
import { randomBytes } from 'node:crypto';
import {
  type Caller,
  consoleLogger,
  createTrustedCaller,
  InvalidArgumentError,
  type Logger,
  systemClock,
  type TaskService,
  type TaskSnapshot,
} from '../tasks/index.js';
import { optionKeys, rejectUnknownOptions } from '../tasks/option-keys.js';
import { readDetailFacts, type ViewerFacts, type ViewerFactsReader } from './background-task-facts.js';
import type { NotificationLedgerView } from './notification-ledger-view.js';

/**
 * Reads facts that have no event (a byte count, a tail snapshot) straight from a running task's
 * producer. Called at most once per `sampleIntervalMs` per task; must not consume output.
 */
export type ViewerFactsSampler = (
  task: TaskSnapshot,
) => ViewerFacts | undefined | Promise<ViewerFacts | undefined>;

/** Options of `createBackgroundEventFeed`. A key not listed here is rejected with `UNKNOWN_OPTION`. */
export interface BackgroundEventFeedOptions {
  /** The task service whose change feed the events are derived from. */
  readonly tasks: TaskService;
  /** Whose view the feed shows (an owner: one session). Default: a trusted caller (every session's work). */
  readonly caller?: Caller;
  /** Events kept for replay after a reconnect; a viewer further behind gets a reset. Default 1000. */
  readonly ringSize?: number;
  /** The longest tail an event carries, in UTF-8 bytes (the end is kept). Default 1024. */
  readonly tailMaxBytes?: number;
  /** Reads viewer facts out of a task's detail. Default: `pid`, `outputBytes`, `tail`, `exitCode`, `signal`, `reason`. */
  readonly readFacts?: ViewerFactsReader;
  /**
   * Samples facts that have no event. Absent (the default): no polling at all. When given, running
   * background tasks are sampled every `sampleIntervalMs`, at most `maxSampledTasks` per round.
   */
  readonly sampler?: ViewerFactsSampler;
  /** The sampling period. Default 2000 ms. */
  readonly sampleIntervalMs?: number;
  /** Tasks sampled per round; the rest wait for the next rounds (round robin). Default 64. */
  readonly maxSampledTasks?: number;
  /** Names this feed's id sequence; viewers resuming with another feed's ids get a reset. Default random. */
  readonly streamId?: string;
  /**
   * The sessions' ledgers, which say when an ended work's result is pending: from its end until its
   * notification is delivered or discarded, or the model read the end. Absent: a result is pending
   * while nobody took the end's delivery claim (a notifier takes it before queueing, so this is short).
   */
  readonly ledger?: NotificationLedgerView;
  /**
   * While a shown work's result is pending, its ledger is read again this often: a delivery made by
   * another process on the same store (a client hook) sends this feed no signal. Default 1000 ms.
   */
  readonly ledgerCheckMs?: number;
  /** The clock, in epoch milliseconds. */
  readonly now?: () => number;
  readonly logger?: Logger;
}

/** Every key of `BackgroundEventFeedOptions`; any other key is rejected with `UNKNOWN_OPTION`. */
export const BACKGROUND_EVENT_FEED_OPTION_KEYS = optionKeys<BackgroundEventFeedOptions>()({
  tasks: true,
  caller: true,
  ringSize: true,
  tailMaxBytes: true,
  readFacts: true,
  sampler: true,
  sampleIntervalMs: true,
  maxSampledTasks: true,
  streamId: true,
  ledger: true,
  ledgerCheckMs: true,
  now: true,
  logger: true,
});

export interface ResolvedFeedOptions {
  readonly tasks: TaskService;
  readonly caller: Caller;
  readonly ringSize: number;
  readonly tailMaxBytes: number;
  readonly readFacts: ViewerFactsReader;
  readonly sampler: ViewerFactsSampler | undefined;
  readonly sampleIntervalMs: number;
  readonly maxSampledTasks: number;
  readonly streamId: string;
  readonly ledger: NotificationLedgerView | undefined;
  readonly ledgerCheckMs: number;
  readonly now: () => number;
  readonly logger: Logger;
}

export const BACKGROUND_EVENT_FEED_DEFAULTS = Object.freeze({
  ringSize: 1000,
  tailMaxBytes: 1024,
  sampleIntervalMs: 2000,
  maxSampledTasks: 64,
  ledgerCheckMs: 1000,
});

const STREAM_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

function positiveInteger(field: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new InvalidArgumentError(field, 'a positive integer', value);
  }
  return value;
}

function optionalLedger(value: unknown): NotificationLedgerView | undefined {
  if (value === undefined) return undefined;
  const ledger = value as Partial<NotificationLedgerView> | null;
  if (
    typeof ledger !== 'object' ||
    ledger === null ||
    typeof ledger.deliverableGeneration !== 'function' ||
    typeof ledger.queuedTaskIds !== 'function' ||
    typeof ledger.subscribe !== 'function'
  ) {
    throw new InvalidArgumentError(
      'ledger',
      'a NotificationLedgerView (deliverableGeneration, queuedTaskIds, subscribe)',
      value,
    );
  }
  return ledger as NotificationLedgerView;
}

function optionalFunction<Value>(field: string, value: Value | undefined): Value | undefined {
  if (value !== undefined && typeof value !== 'function') {
    throw new InvalidArgumentError(field, 'a function', value);
  }
  return value;
}

export function resolveFeedOptions(options: BackgroundEventFeedOptions): ResolvedFeedOptions {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options', 'an object', options);
  }
  rejectUnknownOptions(options, BACKGROUND_EVENT_FEED_OPTION_KEYS, { where: 'createBackgroundEventFeed' });
  const tasks = options.tasks;
  if (typeof tasks !== 'object' || tasks === null || typeof tasks.onTasksChanged !== 'function') {
    throw new InvalidArgumentError('tasks', 'a TaskService', tasks);
  }
  const streamId = options.streamId ?? randomBytes(6).toString('base64url');
  if (typeof streamId !== 'string' || !STREAM_ID_PATTERN.test(streamId)) {
    throw new InvalidArgumentError('streamId', '1-64 letters, digits, "_" or "-"', streamId);
  }
  return {
    tasks,
    caller: options.caller ?? createTrustedCaller('errand-events'),
    ringSize: positiveInteger('ringSize', options.ringSize, BACKGROUND_EVENT_FEED_DEFAULTS.ringSize),
    tailMaxBytes: positiveInteger(
      'tailMaxBytes',
      options.tailMaxBytes,
      BACKGROUND_EVENT_FEED_DEFAULTS.tailMaxBytes,
    ),
    readFacts: optionalFunction('readFacts', options.readFacts) ?? readDetailFacts,
    sampler: optionalFunction('sampler', options.sampler),
    sampleIntervalMs: positiveInteger(
      'sampleIntervalMs',
      options.sampleIntervalMs,
      BACKGROUND_EVENT_FEED_DEFAULTS.sampleIntervalMs,
    ),
    maxSampledTasks: positiveInteger(
      'maxSampledTasks',
      options.maxSampledTasks,
      BACKGROUND_EVENT_FEED_DEFAULTS.maxSampledTasks,
    ),
    streamId,
    ledger: optionalLedger(options.ledger),
    ledgerCheckMs: positiveInteger(
      'ledgerCheckMs',
      options.ledgerCheckMs,
      BACKGROUND_EVENT_FEED_DEFAULTS.ledgerCheckMs,
    ),
    now: optionalFunction('now', options.now) ?? systemClock.now,
    logger: options.logger ?? consoleLogger,
  };
}
