/** The registry's mutable record of one task, and the frozen snapshots it hands out. */
import type {
  BackgroundWaitResult,
  Owner,
  SessionId,
  StopInitiator,
  TaskDetail,
  TaskHooks,
  TaskId,
  TaskKind,
  TaskSnapshot,
  TaskStatus,
} from '../tasks/index.js';

export const EMPTY_DETAIL: TaskDetail = Object.freeze({});

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

export interface TaskRecord {
  readonly id: TaskId;
  readonly kind: TaskKind;
  label: string;
  owner: Owner | undefined;
  ownerSessionId: SessionId | undefined;
  outputLimitBytes: number | undefined;
  status: TaskStatus;
  reported: boolean;
  detail: TaskDetail;
  isBackgrounded: boolean;
  branchGeneration: number;
  stopInitiator: StopInitiator | undefined;
  cancellable: boolean;
  cancelRequestedAt: number | undefined;
  startedAt: number;
  endedAt: number | undefined;
  error: string | undefined;
  resultText: string | undefined;
  output: string | undefined;
  attempt: number;
  hooks: TaskHooks;
  /** Bumped on every change; the cached snapshot is valid while it matches. */
  version: number;
  cachedSnapshot: TaskSnapshot | undefined;
  cachedVersion: number;
  /** Allocated on first use: most tasks are never waited on. */
  waiters: Set<Waiter> | undefined;
  backgroundWaiters: Set<BackgroundWaiter> | undefined;
  /** Callbacks run once the record is terminal (disposal awaits them). */
  onTerminal: Array<() => void> | undefined;
  /** Serializes reads so two concurrent readers never interleave deltas. */
  readChain: Promise<unknown> | undefined;
}

export function isLive(record: TaskRecord): boolean {
  return record.status === 'running' || record.status === 'stopping';
}

export function touch(record: TaskRecord): void {
  record.version += 1;
}

export function snapshotOf(record: TaskRecord): TaskSnapshot {
  if (record.cachedSnapshot !== undefined && record.cachedVersion === record.version) {
    return record.cachedSnapshot;
  }
  const snapshot: TaskSnapshot = Object.freeze({
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
  });
  record.cachedSnapshot = snapshot;
  record.cachedVersion = record.version;
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
