/** The shapes that cross the task-service boundary: specs, producer hooks, outcomes and snapshots. */
import type { SessionId, TaskId, TaskKind } from './ids.js';
import type { TaskOutputStream } from './output-stream.js';
import type { Caller, Owner } from './owner.js';
import type { StopInitiator, TaskStatus, TerminalTaskStatus } from './status.js';
import type { TaskFacts } from './task-facts.js';

/**
 * What a producer reports when its work has ended and its resources are released. `F` is the producer's
 * facts type (`TaskFacts` or one that extends it).
 */
export interface TaskOutcome<F extends TaskFacts = TaskFacts> {
  readonly status: TerminalTaskStatus;
  /** The final output of a final-output task (one without `readOutput`). */
  readonly output?: string;
  /** Facts merged over the task's detail. */
  readonly detail?: Partial<F>;
  /** A diagnosis to show with a failed or lost task. */
  readonly error?: string;
  /** A produced artifact's text (for example a workflow run's result). */
  readonly resultText?: string;
}

/** The execution hooks a producer returns from `run()`. */
export interface TaskHooks<F extends TaskFacts = TaskFacts> {
  /**
   * Requests termination: synchronous, idempotent, and must make `done` settle. Disposal calls it even
   * on tasks that declare `cancellable: false`.
   */
  cancel(reason?: string): void;
  /** Never rejects; settles only after the producer released the task's resources. */
  readonly done: Promise<TaskOutcome<F>>;
  /** The next consuming output delta. Absent: a final-output task whose result is `outcome.output`. */
  readOutput?(): string | Promise<string>;
  /**
   * The output as a byte stream that observation cursors read without consuming it (the bash and pty
   * producers: their output file). Absent: cursors of a streaming task read nothing; cursors of a
   * final-output task read its result once it has ended.
   */
  readonly output?: TaskOutputStream;
  /** False: callers cannot stop it (`CANCEL_NOT_SUPPORTED`); only disposal cancels it. Default true. */
  readonly cancellable?: boolean;
  /** Forwards a message to running work that accepts them (a subagent). */
  sendMessage?(message: string): void;
  /**
   * For work meant to outlive its runtime (a durable command): called by a teardown (the owner's or the
   * service's disposal) instead of `cancel`. It lets go of the work without stopping it, and must make
   * `done` settle. Absent: a teardown cancels. A caller's kill always cancels.
   */
  detach?(): void;
}

export interface TaskRunContext<F extends TaskFacts = TaskFacts> {
  readonly taskId: TaskId;
  /** Publishes new producer facts (merged into `detail`); ignored once the task has settled. */
  updateDetail(patch: Partial<F>): void;
}

/**
 * What a producer registers. `F` is its facts type: `tasks.start<BashFacts>(spec)` lets `detail`,
 * `updateDetail` and the outcome's `detail` carry exactly the facts a bash task documents.
 */
export interface TaskSpec<F extends TaskFacts = TaskFacts> {
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
  readonly detail?: Partial<F>;
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
  run(context: TaskRunContext<F>): TaskHooks<F>;
}

/** A frozen view of one task. `F` types its `detail`: what the task's producer publishes. */
export interface TaskSnapshot<F extends TaskFacts = TaskFacts> {
  readonly id: TaskId;
  readonly kind: TaskKind;
  readonly label: string;
  readonly status: TaskStatus;
  readonly ownerSessionId: SessionId | undefined;
  readonly outputLimitBytes: number | undefined;
  /**
   * The one-shot delivery claim: true once some reader, waiter or notifier *claimed* the terminal result.
   * The field keeps its first name (a snapshot's JSON is public); the word for the fact is *claimed*.
   */
  readonly reported: boolean;
  /** The producer's facts, as it published them (the registry does not check their types: `taskFact` does). */
  readonly detail: Readonly<F>;
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
