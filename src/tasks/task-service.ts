/** The TaskService contract. The in-process provider is the default; durable ones implement the same shape. */
import type { BackgroundListing } from './background-listing.js';
import type { OpenCursorOptions, OutputCursor } from './output-stream.js';
import type { Caller } from './owner.js';
import type { StopInitiator } from './status.js';
import type { TaskFacts } from './task-facts.js';
import type {
  BackgroundWaitResult,
  ControllerScope,
  Disposer,
  KillOptions,
  OnTaskDoneOptions,
  OnTasksChangedOptions,
  ReleaseClaimOptions,
  TaskChangeListener,
  TaskDoneListener,
  TaskReadResult,
  TaskSnapshot,
  TaskSpec,
} from './types.js';

export interface TaskService {
  /** Atomic, preflighted registration; resolves to the committed snapshot. */
  start(spec: TaskSpec): Promise<TaskSnapshot>;
  /**
   * The same, for a producer with facts of its own: `start<BashFacts>(spec)` checks the spec's detail,
   * `updateDetail` and the outcome against `BashFacts` and types the snapshot's. `F` is never inferred.
   */
  start<F extends TaskFacts>(spec: TaskSpec<NoInfer<F>>): Promise<TaskSnapshot<F>>;
  /** A non-consuming snapshot. Unknown and unauthorized ids both throw `TASK_NOT_FOUND`. */
  get(id: string, caller?: Caller): TaskSnapshot;
  /** Non-consuming snapshots of every task the caller may see, oldest first. */
  list(caller?: Caller): TaskSnapshot[];
  /**
   * The caller's background tasks for a bounded listing (`task_list`): the newest `max` live ones and
   * the newest `max` finished ones, in `list`'s order, with how many of each there are — what
   * `backgroundListingOf(list(caller), max)` gives, at a cost in `max` (and the finished tasks held),
   * not in the live tasks. Optional: a listing without it reads `list`.
   */
  listBackground?(caller: Caller, max: number): BackgroundListing;
  /**
   * Streaming tasks: the output since the last read (consuming). Final-output tasks: the result once
   * settled (idempotent). Reading a terminal task claims its delivery.
   */
  read(id: string, caller?: Caller): Promise<TaskReadResult>;
  /** Requests cancellation; resolves to the snapshot after the request. A terminal task is returned as is. */
  kill(id: string, caller?: Caller, reason?: string, options?: KillOptions): Promise<TaskSnapshot>;
  /**
   * Opens a non-consuming cursor over the task's output (see `OutputCursor`), authorized like `get`:
   * unknown and unauthorized ids both throw `TASK_NOT_FOUND`. Fails with `CURSOR_LIMIT` when the task or
   * the service has as many open cursors as its limits allow, and with `INVALID_ARGUMENT` for a position
   * outside the stream. Opening and reading never claim the task's delivery nor move the model's read.
   */
  openCursor(id: string, caller?: Caller, options?: OpenCursorOptions): Promise<OutputCursor>;
  /**
   * Resolves to the terminal snapshot when the task ends (claiming its delivery) or the live snapshot
   * after `timeoutMs`. Aborting `signal` cancels only this wait.
   */
  wait(id: string, timeoutMs: number, caller?: Caller, signal?: AbortSignal): Promise<TaskSnapshot>;
  /** Subscribes to terminal snapshots; each listener is isolated from the others and from the lifecycle. */
  onTaskDone(listener: TaskDoneListener, options?: OnTaskDoneOptions): Disposer;
  /** Subscribes to changes of the caller-visible set (the level signal). */
  onTasksChanged(listener: TaskChangeListener, options?: OnTasksChangedOptions): Disposer;
  /**
   * Declares a task controller (something that can collect and stop work: the task tools, a dashboard)
   * for the owners of `scope`, or for the whole service. A start for an owner no attached controller
   * serves — or an ownerless start while no service-wide controller is attached — fails with
   * `NO_CONTROLLER` before the producer runs.
   */
  attachController(name: string, scope?: ControllerScope): Disposer;

  /** Takes the one-shot delivery claim of a terminal task; true for the first claimant only. */
  claim(id: string, caller?: Caller): boolean;
  /**
   * Returns a claim (for example when enqueueing the notification failed). With `attempt`, only while the
   * task is still at that attempt: a notifier of an earlier attempt never returns a resumed task's claim.
   */
  releaseClaim(id: string, caller?: Caller, options?: ReleaseClaimOptions): void;
  /** Moves running foreground work to the background. Resolves to the snapshot after the move. */
  requestBackground(id: string, caller?: Caller): TaskSnapshot;
  /** Resolves when the task is moved to the background or settles, whichever comes first. */
  waitForBackground(id: string, caller?: Caller, signal?: AbortSignal): Promise<BackgroundWaitResult>;
  /** Records who asked for a stop before the stop is requested (workflows read it when they notify). */
  setStopInitiator(id: string, initiator: StopInitiator, caller?: Caller): TaskSnapshot;
  /** Forwards a message to a running task that accepts messages. */
  sendMessage(id: string, message: string, caller?: Caller): TaskSnapshot;

  /** Cancels every live task, waits for compliant producers, detaches from owners. Idempotent. */
  dispose(): Promise<void>;
}
