/** The shapes that cross the task-service boundary: specs, producer hooks, outcomes and snapshots. */
import type { SessionId, TaskId, TaskKind } from './ids.js';
import type { Caller, Owner } from './owner.js';
import type { StopInitiator, TaskStatus, TerminalTaskStatus } from './status.js';

/**
 * Producer facts (exit code, signal, stop reason, output file, tool-use id, ...). The registry stores and
 * projects them without interpreting them. Values should be JSON-serializable.
 */
export type TaskDetail = Readonly<Record<string, unknown>>;

/** What a producer reports when its work has ended and its resources are released. */
export interface TaskOutcome {
  readonly status: TerminalTaskStatus;
  /** The final output of a final-output task (one without `readOutput`). */
  readonly output?: string;
  /** Merged over the task's detail. */
  readonly detail?: TaskDetail;
  /** A diagnosis to show with a failed or lost task. */
  readonly error?: string;
  /** A produced artifact's text (for example a workflow run's result). */
  readonly resultText?: string;
}

/** The execution hooks a producer returns from `run()`. */
export interface TaskHooks {
  /**
   * Requests termination: synchronous, idempotent, and must make `done` settle. Disposal calls it even
   * on tasks that declare `cancellable: false`.
   */
  cancel(reason?: string): void;
  /** Never rejects; settles only after the producer released the task's resources. */
  readonly done: Promise<TaskOutcome>;
  /** The next consuming output delta. Absent: a final-output task whose result is `outcome.output`. */
  readOutput?(): string | Promise<string>;
  /** False: callers cannot stop it (`CANCEL_NOT_SUPPORTED`); only disposal cancels it. Default true. */
  readonly cancellable?: boolean;
  /** Forwards a message to running work that accepts them (a subagent). */
  sendMessage?(message: string): void;
}

export interface TaskRunContext {
  readonly taskId: TaskId;
  /** Publishes new producer facts (merged into `detail`); ignored once the task has settled. */
  updateDetail(patch: TaskDetail): void;
}

export interface TaskSpec {
  readonly kind: TaskKind;
  /** A short human label (a command, a description). */
  readonly label: string;
  /** The session that owns the task. Absent: an ownerless task, open to non-agent callers. */
  readonly owner?: Owner;
  /** The producer's presentation budget for model-facing text. Projected unchanged into snapshots. */
  readonly outputLimitBytes?: number;
  /** Whether the task starts as background work. Default true; foreground work is registered too. */
  readonly background?: boolean;
  /** Overrides the owner's branch generation. */
  readonly branchGeneration?: number;
  /** Initial producer facts. */
  readonly detail?: TaskDetail;
  /** Re-registers a finished task under the same id (resume); resets its settlement surface. */
  readonly resumeId?: TaskId;
  /**
   * A W3C traceparent the task continues (a re-attached task's stored one, a job from another process).
   * Absent: the task's span is a child of the context active when `start` is called.
   */
  readonly traceparent?: string;
  /**
   * Starts the work. Called exactly once, after every check that can fail has passed; if it throws,
   * nothing is registered and no id is spent.
   */
  run(context: TaskRunContext): TaskHooks;
}

export interface TaskSnapshot {
  readonly id: TaskId;
  readonly kind: TaskKind;
  readonly label: string;
  readonly status: TaskStatus;
  readonly ownerSessionId: SessionId | undefined;
  readonly outputLimitBytes: number | undefined;
  /** The one-shot delivery claim: true once some reader, waiter or notifier took the terminal result. */
  readonly reported: boolean;
  readonly detail: TaskDetail;
  readonly isBackgrounded: boolean;
  readonly branchGeneration: number;
  readonly stopInitiator: StopInitiator | undefined;
  readonly cancellable: boolean;
  readonly cancelRequestedAt: number | undefined;
  readonly startedAt: number;
  readonly endedAt: number | undefined;
  readonly error: string | undefined;
  readonly resultText: string | undefined;
  /** How many times the id has been (re-)registered; 1 for a task that was never resumed. */
  readonly attempt: number;
  /** True when the producer produces a final output rather than a stream. */
  readonly finalOutput: boolean;
  /**
   * The W3C traceparent of the task's span (its trace context), kept with its record so a notification
   * delivered later — after a resume too — links to it. Undefined when nothing traced it.
   */
  readonly traceparent: string | undefined;
}

export interface TaskReadResult {
  readonly text: string;
  readonly snapshot: TaskSnapshot;
}

export interface ReleaseClaimOptions {
  /** The attempt the claim was taken on; a task re-registered since (a resume) keeps its own claim. */
  readonly attempt?: number;
}

export interface KillOptions {
  readonly initiator?: StopInitiator;
}

export type TaskChangeReason =
  | 'started'
  | 'updated'
  | 'backgrounded'
  | 'stopping'
  | 'settled'
  | 'claimed'
  | 'unclaimed'
  | 'removed';

export interface TaskChange {
  readonly reason: TaskChangeReason;
  /** The task that changed (for `removed`, its last snapshot). */
  readonly task: TaskSnapshot;
  /** The full caller-visible set after the change (the level signal), computed on demand. */
  tasks(): readonly TaskSnapshot[];
}

export type TaskDoneListener = (snapshot: TaskSnapshot) => void | Promise<void>;
export type TaskChangeListener = (change: TaskChange) => void;

export interface OnTaskDoneOptions {
  /** Deliver only tasks owned by exactly this owner instance. Absent: every task. */
  readonly owner?: Owner;
}

export interface OnTasksChangedOptions {
  /** Limits both the changes and the level signal to what this caller may see. */
  readonly caller?: Caller;
}

/**
 * What a task controller serves: whose background work it can collect and stop. Give at most one of
 * `owner` and `serves`, and `ownerless` for work without an owner; give no scope at all for a
 * service-wide controller, which serves every owner and ownerless work.
 */
export interface ControllerScope {
  /** Serves the tasks of this owner's session (session equality, as access is granted). */
  readonly owner?: Owner;
  /** Serves the owners it accepts; asked at every start of owned background work. */
  readonly serves?: (owner: Owner) => boolean;
  /** Serves ownerless work (its callers are non-agent callers, who read and stop it themselves). Default false. */
  readonly ownerless?: boolean;
}

/** Returned by subscriptions and attachments; call it to undo them. */
export type Disposer = () => void;

export type BackgroundWaitResult = 'backgrounded' | 'settled';
