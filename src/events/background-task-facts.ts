/**
 * What a viewer sees of one background task, derived from a registry snapshot plus optionally sampled
 * facts. Every field is JSON-ready (null, never undefined) so a fact set survives the wire unchanged.
 */
import { limitsSummaryOf, sandboxSummaryOf } from '../process/index.js';
import {
  isTerminalStatus,
  type ScheduleProgress,
  type TaskFacts,
  type TaskSnapshot,
  type TaskStatus,
  taskFact,
} from '../tasks/index.js';
import { type BackgroundWorkKind, displayKindOf } from './display-kind.js';
import { takeUtf8Tail } from './utf8-tail.js';

export interface BackgroundTaskFacts {
  /** The owning session; null for an ownerless task. */
  readonly sessionId: string | null;
  readonly taskId: string;
  /** The registry's task kind (`bash`, `pty`, `agent`, ...). */
  readonly taskKind: string;
  /** The display kind, decided here once. */
  readonly kind: BackgroundWorkKind;
  readonly label: string;
  /** The id of the tool call that started it (`detail.toolUseId`), so a viewer can find its card. */
  readonly toolUseId: string | null;
  readonly status: TaskStatus;
  /** Running, cancellable by its producer, and no cancel requested yet: a viewer may offer Stop. */
  readonly cancellable: boolean;
  /**
   * The task ended and the model is still to be told: its notification waits to be delivered (see
   * `isResultPending`). False while it runs, and once the end was delivered, discarded or read.
   */
  readonly resultPending: boolean;
  /** 1 for a task never resumed; a resumed id starts a new attempt. */
  readonly attempt: number;
  readonly startedAt: number;
  readonly endedAt: number | null;
  readonly cancelRequestedAt: number | null;
  readonly pid: number | null;
  /** Output bytes produced so far. */
  readonly outputBytes: number | null;
  /** The end of the output, bounded by the feed's `tailMaxBytes`. */
  readonly tail: string | null;
  readonly exitCode: number | null;
  readonly signal: string | null;
  /** The producer's raw port word (`completed`, `cancelled`, `timed_out`, `spawn_error`, ...). */
  readonly reason: string | null;
  readonly error: string | null;
  /** The sandbox it runs in (`workspace-write, network off`, from `detail.sandbox`); null when unconfined. */
  readonly sandbox: string | null;
  /** Its resource limits and their mechanism (`cgroup-v1: memory 512 MiB`, from `detail.limits`); null without. */
  readonly limits: string | null;
  /** A schedule's firings, next due time and missed-firing policy (`detail.schedule`); null for other kinds. */
  readonly schedule: ScheduleProgress | null;
}

/** The producer facts a viewer sees, read out of a task's `detail` (or sampled from its producer). */
export interface ViewerFacts {
  readonly pid?: number | undefined;
  readonly outputBytes?: number | undefined;
  readonly tail?: string | undefined;
  readonly exitCode?: number | undefined;
  readonly signal?: string | undefined;
  readonly reason?: string | undefined;
}

/** Reads viewer facts out of a task's detail. */
export type ViewerFactsReader = (detail: TaskFacts, task: TaskSnapshot) => ViewerFacts;

function integerOrUndefined(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

function exitCodeOrUndefined(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) ? value : undefined;
}

function stringOrUndefined(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/**
 * The default reader: `detail.pid`, `detail.outputBytes`, `detail.tail`, `detail.exitCode`,
 * `detail.signal` and `detail.reason`, each ignored unless it has the expected type.
 */
export const readDetailFacts: ViewerFactsReader = (detail) => ({
  pid: integerOrUndefined(detail.pid),
  outputBytes: integerOrUndefined(detail.outputBytes),
  tail: stringOrUndefined(detail.tail),
  exitCode: exitCodeOrUndefined(detail.exitCode),
  signal: stringOrUndefined(detail.signal),
  reason: stringOrUndefined(detail.reason),
});

export interface DeriveFactsOptions {
  readonly readFacts: ViewerFactsReader;
  readonly tailMaxBytes: number;
  /** Facts sampled from the producer; they win over the same facts in `detail`. */
  readonly sampled?: ViewerFacts | undefined;
  /**
   * Whether the result is pending, as the feed's ledger says. Default, for a feed that knows no ledger:
   * the task ended and nobody took its delivery claim yet.
   */
  readonly resultPending?: boolean | undefined;
}

export function deriveTaskFacts(task: TaskSnapshot, options: DeriveFactsOptions): BackgroundTaskFacts {
  const fromDetail = options.readFacts(task.detail, task);
  const sampled = options.sampled;
  const tail = sampled?.tail ?? fromDetail.tail;
  return Object.freeze({
    sessionId: task.ownerSessionId ?? null,
    taskId: task.id,
    taskKind: task.kind,
    kind: displayKindOf(task.kind),
    label: task.label,
    toolUseId: stringOrUndefined(task.detail.toolUseId) ?? null,
    status: task.status,
    cancellable: task.status === 'running' && task.cancellable && task.cancelRequestedAt === undefined,
    resultPending: options.resultPending ?? (isTerminalStatus(task.status) && !task.reported),
    attempt: task.attempt,
    startedAt: task.startedAt,
    endedAt: task.endedAt ?? null,
    cancelRequestedAt: task.cancelRequestedAt ?? null,
    pid: sampled?.pid ?? fromDetail.pid ?? null,
    // Output only grows: the larger of the sampled and the published count is the fresher one.
    outputBytes: largest(sampled?.outputBytes, fromDetail.outputBytes),
    tail: tail === undefined ? null : takeUtf8Tail(tail, options.tailMaxBytes).text,
    exitCode: fromDetail.exitCode ?? null,
    signal: fromDetail.signal ?? null,
    reason: fromDetail.reason ?? null,
    error: task.error ?? null,
    sandbox: sandboxSummaryOf(task.detail) ?? null,
    limits: limitsSummaryOf(task.detail) ?? null,
    schedule: taskFact(task, 'schedule') ?? null,
  });
}

function largest(left: number | undefined, right: number | undefined): number | null {
  if (left === undefined) return right ?? null;
  return right === undefined ? left : Math.max(left, right);
}

/** True when a viewer would see no difference between the two. */
export function sameFacts(left: BackgroundTaskFacts, right: BackgroundTaskFacts): boolean {
  for (const key of Object.keys(left) as (keyof BackgroundTaskFacts)[]) {
    if (left[key] !== right[key]) return false;
  }
  return true;
}
