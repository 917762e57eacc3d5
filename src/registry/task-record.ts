/** The registry's mutable record of one task, and the frozen snapshots it hands out. */

import type {
  BackgroundWaitResult,
  Owner,
  SessionId,
  StopInitiator,
  TaskFacts,
  TaskHooks,
  TaskId,
  TaskKind,
  TaskSnapshot,
  TaskStatus,
} from '../tasks/index.js';
import type { TaskTrace } from '../tracing/index.js';
import type { LiveOrder } from './live-order.js';
import { RetentionQueue } from './retention-queue.js';

export { RetentionQueue };

export const EMPTY_DETAIL: TaskFacts = Object.freeze({});

export interface Waiter {
  /** Set when settlement hands this waiter the terminal snapshot; an abort after that is ignored. */
  assigned: boolean;
  readonly resolve: (snapshot: TaskSnapshot) => void;
  readonly reject: (error: unknown) => void;
  readonly detach: () => void;
}

export interface BackgroundWaiter {
  readonly resolve: (result: BackgroundWaitResult) => void;
  readonly detach: () => void;
}

/** Per-session bookkeeping ('' for ownerless tasks): live count for admission, finished tasks for retention. */
export interface SessionBucket {
  readonly key: string;
  live: number;
  /** Live tasks in the background (a foreground one counts once it is moved there). */
  liveBackgrounded: number;
  /** The live tasks in registration order, newest reachable first (`listBackground`). */
  readonly liveOrder: LiveOrder<TaskRecord>;
  readonly retained: RetentionQueue<TaskRecord>;
}

export class TaskRecord {
  readonly id: TaskId;
  readonly kind: TaskKind;
  readonly bucket: SessionBucket;
  readonly ownerSessionId: SessionId | undefined;
  readonly startedAt: number;
  label: string;
  owner: Owner | undefined;
  outputLimitBytes: number | undefined;
  status: TaskStatus = 'running';
  reported = false;
  /**
   * How many parties hold the claim: settlement hands it to every live waiter at once. One of them
   * returning its share (`releaseClaim`) does not un-tell the others.
   */
  claimHolders = 0;
  /**
   * Set when an owner's or the service's disposal asked the task to stop: its end is taken by the
   * teardown (reported, the claim never returned), since nobody is left to tell.
   */
  tornDown = false;
  detail: TaskFacts;
  isBackgrounded: boolean;
  branchGeneration: number;
  stopInitiator: StopInitiator | undefined = undefined;
  cancellable: boolean;
  cancelRequestedAt: number | undefined = undefined;
  endedAt: number | undefined = undefined;
  error: string | undefined = undefined;
  resultText: string | undefined = undefined;
  output: string | undefined = undefined;
  attempt = 1;
  /** The task span's traceparent (or the spec's, when nothing traced it). */
  traceparent: string | undefined = undefined;
  /** The live span of the current attempt; undefined when tracing is off. */
  trace: TaskTrace | undefined = undefined;
  /** Whether the record sits in its bucket's retention queue, and where. */
  retained = false;
  retainedAt = -1;
  /** Its place in `list`'s order (registration order), and its links in its bucket's `liveOrder`. */
  readonly listOrder: number;
  livePrevious: TaskRecord | undefined = undefined;
  liveNext: TaskRecord | undefined = undefined;
  inLiveOrder = false;
  hooks: TaskHooks;
  /** The snapshot of the current state; cleared by every change. */
  cachedSnapshot: TaskSnapshot | undefined = undefined;
  /** Allocated on first use: most tasks are never waited on. */
  waiters: Set<Waiter> | undefined = undefined;
  backgroundWaiters: Set<BackgroundWaiter> | undefined = undefined;
  /** Callbacks run once the record is terminal (disposal awaits them). */
  onTerminal: Array<() => void> | undefined = undefined;
  /** Removable callbacks run once the record is terminal (cursors waiting for output or the end). */
  settleListeners: Set<() => void> | undefined = undefined;
  /** Serializes reads so two concurrent readers never interleave deltas. */
  readChain: Promise<unknown> | undefined = undefined;

  constructor(
    id: TaskId,
    kind: TaskKind,
    label: string,
    owner: Owner | undefined,
    bucket: SessionBucket,
    hooks: TaskHooks,
    detail: TaskFacts,
    isBackgrounded: boolean,
    branchGeneration: number,
    outputLimitBytes: number | undefined,
    startedAt: number,
    listOrder: number,
  ) {
    this.id = id;
    this.kind = kind;
    this.label = label;
    this.owner = owner;
    this.ownerSessionId = owner?.sessionId;
    this.bucket = bucket;
    this.hooks = hooks;
    this.cancellable = hooks.cancellable !== false;
    this.detail = detail;
    this.isBackgrounded = isBackgrounded;
    this.branchGeneration = branchGeneration;
    this.outputLimitBytes = outputLimitBytes;
    this.startedAt = startedAt;
    this.listOrder = listOrder;
  }
}

export function isLive(record: TaskRecord): boolean {
  return record.status === 'running' || record.status === 'stopping';
}

/** Marks the record changed: the next snapshot is built afresh. */
export function touch(record: TaskRecord): void {
  record.cachedSnapshot = undefined;
}

export function snapshotOf(record: TaskRecord): TaskSnapshot {
  let snapshot = record.cachedSnapshot;
  if (snapshot === undefined) {
    snapshot = Object.freeze({
      id: record.id,
      kind: record.kind,
      label: record.label,
      status: record.status,
      ownerSessionId: record.ownerSessionId,
      outputLimitBytes: record.outputLimitBytes,
      reported: record.reported,
      detail: record.detail,
      isBackgrounded: record.isBackgrounded,
      branchGeneration: record.branchGeneration,
      stopInitiator: record.stopInitiator,
      cancellable: record.cancellable,
      cancelRequestedAt: record.cancelRequestedAt,
      startedAt: record.startedAt,
      endedAt: record.endedAt,
      error: record.error,
      resultText: record.resultText,
      attempt: record.attempt,
      finalOutput: record.hooks.readOutput === undefined,
      traceparent: record.traceparent,
    });
    record.cachedSnapshot = snapshot;
  }
  return snapshot;
}

/** Resolves once the record is terminal. */
export function whenTerminal(record: TaskRecord): Promise<void> {
  if (!isLive(record)) return Promise.resolve();
  return new Promise((resolve) => {
    record.onTerminal ??= [];
    record.onTerminal.push(resolve);
  });
}
