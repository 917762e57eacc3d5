/**
 * The in-process TaskService: a Map of task records with preflighted registration, first-outcome-wins
 * settlement, owner-scoped authorization and cleanup, consuming reads, bounded waits and the delivery claim.
 */
import {
  AdmissionLimitError,
  type BackgroundListing,
  type BackgroundWaitResult,
  backgroundListingOf,
  type Caller,
  CancelFailedError,
  CancelNotSupportedError,
  type ControllerScope,
  type Disposer,
  ErrandError,
  formatTaskId,
  InvalidArgumentError,
  InvalidTimeoutError,
  isTrustedCaller,
  type KillOptions,
  MAX_TIMER_DELAY_MS,
  MessagesNotSupportedError,
  NoControllerError,
  type OnTaskDoneOptions,
  type OnTasksChangedOptions,
  type OpenCursorOptions,
  type OutputCursor,
  type OutputStreamKind,
  type Owner,
  OwnerDisposedError,
  ProducerContractError,
  parseTaskId,
  type ReleaseClaimOptions,
  ServiceDisposedError,
  type StopInitiator,
  type TaskChangeListener,
  type TaskChangeReason,
  type TaskDoneListener,
  type TaskFacts,
  type TaskHooks,
  type TaskId,
  type TaskKind,
  TaskNotFoundError,
  TaskNotResumableError,
  TaskNotRunningError,
  type TaskOutcome,
  type TaskOutputStream,
  type TaskReadResult,
  type TaskRunContext,
  type TaskService,
  type TaskSnapshot,
  type TaskSpec,
  TERMINAL_STATUSES,
  WaitAbortedError,
} from '../tasks/index.js';
import { TaskTrace } from '../tracing/index.js';
import { ControllerSet } from './controller-set.js';
import { LiveOrder } from './live-order.js';
import {
  type ResolvedTaskServiceOptions,
  type SequenceBlock,
  type TaskServiceOptions,
  taskServiceOptions,
} from './options.js';
import { type CursorSubject, CursorTable, fixedBytesStream } from './output-cursors.js';
import {
  type BackgroundWaiter,
  EMPTY_DETAIL,
  isLive,
  RetentionQueue,
  type SessionBucket,
  snapshotOf,
  TaskRecord,
  touch,
  type Waiter,
  whenTerminal,
} from './task-record.js';
import { validateDetailPatch, validateHooks, validateSpec } from './validate-spec.js';

/** The longest wait (`MAX_TIMER_DELAY_MS`, under the name it was published with). */
export const MAX_WAIT_MS = MAX_TIMER_DELAY_MS;

const STOP_INITIATORS: readonly StopInitiator[] = ['user', 'model', 'system'];

interface OwnerState {
  readonly tasks: Set<TaskRecord>;
  readonly detach: () => void;
}

interface ChangeSubscription {
  readonly listener: TaskChangeListener;
  readonly caller: Caller;
}

interface DoneSubscription {
  readonly listener: TaskDoneListener;
  readonly owner: Owner | undefined;
}

/** The context a producer's run() receives; detail published before commit is kept for the record. */
class RunContext implements TaskRunContext {
  readonly taskId: TaskId;
  pendingDetail: TaskFacts;
  record: TaskRecord | undefined = undefined;
  attempt = 0;
  #bound: ((patch: Partial<TaskFacts>) => void) | undefined = undefined;
  readonly #onDetail: (record: TaskRecord) => void;

  constructor(taskId: TaskId, detail: TaskFacts, onDetail: (record: TaskRecord) => void) {
    this.taskId = taskId;
    this.pendingDetail = detail;
    this.#onDetail = onDetail;
  }

  /** Bound on first use, so producers may pass it around unbound without every task paying for it. */
  get updateDetail(): (patch: Partial<TaskFacts>) => void {
    this.#bound ??= (patch) => this.#update(patch);
    return this.#bound;
  }

  #update(patch: Partial<TaskFacts>): void {
    validateDetailPatch(patch);
    const record = this.record;
    if (record === undefined) {
      this.pendingDetail = Object.freeze({ ...this.pendingDetail, ...patch });
    } else if (record.attempt === this.attempt && isLive(record)) {
      // A context from an earlier attempt of a resumed task no longer speaks for it.
      record.detail = Object.freeze({ ...record.detail, ...patch });
      this.#onDetail(record);
    }
  }
}

/** Stands in for the hooks of a settled task that has no `readOutput`: they are never called again. */
const SETTLED_HOOKS: TaskHooks = Object.freeze({
  cancel: () => {},
  done: new Promise<TaskOutcome>(() => {}),
});

export function createTaskService(options?: TaskServiceOptions): TaskService {
  return new LocalTaskService(options);
}

export class LocalTaskService implements TaskService {
  readonly #options: ResolvedTaskServiceOptions;
  readonly #records = new Map<string, TaskRecord>();
  readonly #sequences = new Map<string, number>();
  /** Reserved sequence blocks per kind (with `sequenceBlocks`). */
  readonly #blocks = new Map<string, SequenceBlock>();
  readonly #owners = new Map<Owner, OwnerState>();
  /** The next record's place in `list`'s order. */
  #nextListOrder = 0;
  /** Live counts and finished tasks per owning session ('' for ownerless tasks). */
  readonly #buckets = new Map<string, SessionBucket>();
  /** Copy-on-write lists: notifying iterates without copying, and (un)subscribing mid-notification is safe. */
  #doneSubscriptions: readonly DoneSubscription[] = [];
  #changeSubscriptions: readonly ChangeSubscription[] = [];
  readonly #controllers = new ControllerSet();
  readonly #cursors: CursorTable;
  #liveCount = 0;
  #disposal: Promise<void> | undefined;

  constructor(options?: TaskServiceOptions) {
    this.#options = taskServiceOptions.resolve(options);
    const { maxCursorsPerTask, maxCursors, cursorIdleMs, maxCursorReadBytes, now } = this.#options;
    this.#cursors = new CursorTable({ maxCursorsPerTask, maxCursors, cursorIdleMs, maxCursorReadBytes, now });
    for (const [kind, sequence] of Object.entries(this.#options.initialSequences)) {
      if (sequence !== undefined) this.#sequences.set(kind, sequence);
    }
  }

  // ---------------------------------------------------------------- registration

  start(spec: TaskSpec): Promise<TaskSnapshot>;
  start<F extends TaskFacts>(spec: TaskSpec<NoInfer<F>>): Promise<TaskSnapshot<F>>;
  // The registry stores facts without reading them: a producer's facts type is its own business.
  async start(spec: TaskSpec): Promise<TaskSnapshot> {
    return this.#startNow(spec);
  }

  #startNow(spec: TaskSpec): TaskSnapshot {
    // Preflight: every step that can fail happens before run().
    if (this.#disposal) throw new ServiceDisposedError();
    validateSpec(spec, typeof spec?.kind === 'string' && this.#sequences.has(spec.kind));
    const owner = spec.owner;
    // Foreground work is collected by the call that waits for it; background work needs a controller.
    if (spec.background !== false) this.#requireController(spec.kind, owner);
    if (owner?.disposed) throw new OwnerDisposedError(owner.sessionId);
    this.#options.startGuard?.({ kind: spec.kind, owner, background: spec.background !== false });
    const previous = spec.resumeId === undefined ? undefined : this.#preflightResume(spec, spec.resumeId);
    const bucket = this.#bucket(owner?.sessionId ?? '');
    // Ownerless tasks share one bucket ('') with a limit of its own, so they cannot crowd out the sessions.
    const { maxLiveTasksPerOwner, maxLiveOwnerlessTasks = maxLiveTasksPerOwner } = this.#options;
    const bucketLimit = owner ? maxLiveTasksPerOwner : maxLiveOwnerlessTasks;
    if (bucket.live >= bucketLimit) {
      this.#dropBucketIfEmpty(bucket);
      throw new AdmissionLimitError(
        owner ? `session ${owner.sessionId}` : 'the ownerless tasks',
        bucketLimit,
        owner || this.#options.maxLiveOwnerlessTasks === undefined
          ? 'tasks.maxLiveTasksPerOwner'
          : 'tasks.maxLiveOwnerlessTasks',
      );
    }
    if (this.#liveCount >= this.#options.maxLiveTasks) {
      this.#dropBucketIfEmpty(bucket);
      throw new AdmissionLimitError('the task service', this.#options.maxLiveTasks, 'tasks.maxLiveTasks');
    }
    const branchGeneration = spec.branchGeneration ?? owner?.branchGeneration ?? 0;
    if (!Number.isSafeInteger(branchGeneration) || branchGeneration < 0) {
      this.#dropBucketIfEmpty(bucket);
      throw new InvalidArgumentError('owner.branchGeneration', 'a non-negative integer', branchGeneration);
    }
    // The owner's cleanup attaches before run(), so attaching cannot fail after the work started.
    if (owner) this.#ownerState(owner);

    const current = this.#sequences.get(spec.kind) ?? 0;
    let sequence: number;
    try {
      sequence =
        spec.resumeId === undefined
          ? this.#nextSequence(spec.kind, current)
          : Math.max(current, parseTaskId(spec.resumeId)?.sequence ?? 0);
    } catch (error) {
      this.#dropBucketIfEmpty(bucket);
      throw error;
    }
    const id = spec.resumeId ?? this.#formatId(spec.kind, sequence);
    const context = new RunContext(
      id,
      spec.detail ? Object.freeze({ ...spec.detail }) : EMPTY_DETAIL,
      this.#onDetail,
    );

    // The task's span, in the caller's context (or the stored one); the producer starts inside it.
    const trace = TaskTrace.start(this.#options.tracing, {
      taskId: id,
      kind: spec.kind,
      label: spec.label,
      attempt: (previous?.attempt ?? 0) + 1,
      sessionId: owner?.sessionId,
      toolCallId: typeof spec.detail?.toolUseId === 'string' ? spec.detail.toolUseId : undefined,
      parent: spec.traceparent,
      previous: previous?.traceparent,
    });
    let hooks: TaskHooks;
    try {
      hooks =
        trace === undefined
          ? this.#runProducer(spec, context)
          : trace.run(() => this.#runProducer(spec, context));
    } catch (error) {
      trace?.abandon(error);
      this.#dropBucketIfEmpty(bucket);
      throw error;
    }

    // Commit: nothing below can fail.
    this.#sequences.set(spec.kind, sequence);
    let record: TaskRecord;
    if (previous) {
      record = previous;
      // The new attempt's output starts over: cursors over the old one have nothing more to read.
      this.#cursors.closeTask(record.id, 'task_resumed');
      this.#forgetRetained(record);
      if (record.owner !== owner && record.owner) this.#owners.get(record.owner)?.tasks.delete(record);
      record.label = spec.label;
      record.outputLimitBytes = spec.outputLimitBytes;
      record.status = 'running';
      record.reported = false;
      record.claimHolders = 0;
      record.tornDown = false;
      record.detail = context.pendingDetail;
      record.isBackgrounded = spec.background ?? true;
      record.branchGeneration = branchGeneration;
      record.stopInitiator = undefined;
      record.cancellable = hooks.cancellable !== false;
      record.cancelRequestedAt = undefined;
      record.endedAt = undefined;
      record.error = undefined;
      record.resultText = undefined;
      record.output = undefined;
      record.attempt += 1;
      record.hooks = hooks;
      record.readChain = undefined;
      record.settleListeners = undefined;
      // A resumed task may be re-registered by a replacement owner of the same session.
      record.owner = owner;
      touch(record);
    } else {
      record = new TaskRecord(
        id,
        spec.kind,
        spec.label,
        owner,
        bucket,
        hooks,
        context.pendingDetail,
        spec.background ?? true,
        branchGeneration,
        spec.outputLimitBytes,
        this.#options.now(),
        this.#nextListOrder++,
      );
      this.#records.set(id, record);
    }
    record.trace = trace;
    record.traceparent = trace?.traceparent ?? spec.traceparent;
    context.record = record;
    context.attempt = record.attempt;
    if (owner) this.#owners.get(owner)?.tasks.add(record);
    this.#liveCount += 1;
    record.bucket.live += 1;
    record.bucket.liveOrder.add(record);
    if (record.isBackgrounded) record.bucket.liveBackgrounded += 1;
    this.#watchDone(record, hooks);
    this.#emitChange('started', record);
    return snapshotOf(record);
  }

  /** Producer facts published through a run context. */
  readonly #onDetail = (record: TaskRecord): void => {
    touch(record);
    this.#emitChange('updated', record);
  };

  #bucket(key: string): SessionBucket {
    let bucket = this.#buckets.get(key);
    if (bucket === undefined) {
      bucket = {
        key,
        live: 0,
        liveBackgrounded: 0,
        liveOrder: new LiveOrder<TaskRecord>(),
        retained: new RetentionQueue<TaskRecord>(),
      };
      this.#buckets.set(key, bucket);
    }
    return bucket;
  }

  #dropBucketIfEmpty(bucket: SessionBucket): void {
    if (bucket.live === 0 && bucket.retained.size === 0) this.#buckets.delete(bucket.key);
  }

  #preflightResume(spec: TaskSpec, resumeId: TaskId): TaskRecord | undefined {
    const parsed = parseTaskId(resumeId);
    if (!parsed || parsed.kind !== spec.kind) {
      throw new InvalidArgumentError('resumeId', `an id of kind ${spec.kind}`, resumeId);
    }
    const existing = this.#records.get(resumeId);
    if (existing === undefined) {
      // Restored from elsewhere (a durable store): keep the counter ahead of it.
      return undefined;
    }
    if (!this.#isVisible(existing, spec.owner)) throw new TaskNotFoundError(resumeId);
    if (isLive(existing)) throw new TaskNotResumableError(resumeId, existing.status);
    return existing;
  }

  /** The next sequence of `kind`: one more, within this service's reserved block when blocks are used. */
  #nextSequence(kind: TaskKind, current: number): number {
    const blocks = this.#options.sequenceBlocks;
    if (blocks === undefined) return current + 1;
    const block = this.#blocks.get(kind);
    if (block !== undefined) {
      const next = Math.max(current + 1, block.first);
      if (next <= block.last) return next;
    }
    const fresh = blocks.reserve(kind, current);
    if (
      typeof fresh !== 'object' ||
      fresh === null ||
      !Number.isSafeInteger(fresh.first) ||
      !Number.isSafeInteger(fresh.last) ||
      fresh.first <= current ||
      fresh.last < fresh.first
    ) {
      throw new ErrandError(
        'SEQUENCE_BLOCK_INVALID',
        'system',
        `sequenceBlocks.reserve returned ${JSON.stringify(fresh)} for ${kind}; expected { first > ${current}, last >= first }`,
        { context: { kind } },
      );
    }
    this.#blocks.set(kind, { first: fresh.first, last: fresh.last });
    return fresh.first;
  }

  #formatId(kind: TaskKind, sequence: number): TaskId {
    const id = this.#options.formatId ? this.#options.formatId(kind, sequence) : formatTaskId(kind, sequence);
    return id as TaskId;
  }

  #runProducer(spec: TaskSpec, context: Parameters<TaskSpec['run']>[0]): TaskHooks {
    const hooks = spec.run(context);
    try {
      return validateHooks(spec.kind, hooks);
    } catch (error) {
      // Broken hooks cannot be registered; stop whatever they started if we can.
      try {
        (hooks as Partial<TaskHooks> | undefined)?.cancel?.('producer contract violation');
      } catch {
        // Nothing more can be done for it.
      }
      throw error;
    }
  }

  #watchDone(record: TaskRecord, hooks: TaskHooks): void {
    const attempt = record.attempt;
    hooks.done.then(
      (outcome) => {
        if (record.hooks === hooks && record.attempt === attempt) this.#settleWithOutcome(record, outcome);
      },
      (error: unknown) => {
        if (record.hooks !== hooks || record.attempt !== attempt) return;
        this.#options.logger.warn(
          `task ${record.id}: its done promise rejected (a producer contract violation)`,
          {
            taskId: record.id,
            error: String(error),
          },
        );
        this.#settle(record, {
          status: 'failed',
          error: `The producer's done promise rejected: ${error instanceof Error ? error.message : String(error)}`,
        });
      },
    );
  }

  #settleWithOutcome(record: TaskRecord, outcome: TaskOutcome): void {
    if (
      typeof outcome !== 'object' ||
      outcome === null ||
      !TERMINAL_STATUSES.includes(outcome.status) ||
      (outcome.detail !== undefined && (typeof outcome.detail !== 'object' || outcome.detail === null))
    ) {
      const error = new ProducerContractError(`The ${record.kind} producer settled with an invalid outcome`);
      this.#options.logger.warn(`task ${record.id}: ${error.message}`, { taskId: record.id });
      this.#settle(record, { status: 'failed', error: error.message });
      return;
    }
    this.#settle(record, outcome);
  }

  // ---------------------------------------------------------------- settlement

  /** First outcome wins: a settled record never changes status or notifies again. */
  #settle(record: TaskRecord, outcome: TaskOutcome): void {
    if (!isLive(record)) return;
    record.status = outcome.status;
    record.endedAt = this.#options.now();
    if (outcome.detail) record.detail = Object.freeze({ ...record.detail, ...outcome.detail });
    record.error = outcome.error;
    record.output = outcome.output;
    record.resultText = outcome.resultText;
    touch(record);

    this.#liveCount -= 1;
    record.bucket.live -= 1;
    record.bucket.liveOrder.delete(record);
    if (record.isBackgrounded) record.bucket.liveBackgrounded -= 1;
    if (record.tornDown && !record.reported) {
      // The teardown that ended it holds the claim: no notifier tells an owner that is going away.
      record.reported = true;
      record.claimHolders = 1;
    }

    // Live waiters take delivery before any notifier can.
    if (record.waiters) {
      const waiters = record.waiters;
      record.waiters = undefined;
      if (waiters.size > 0 && !record.reported) {
        record.reported = true;
        // Every waiter receives the end: the claim is theirs jointly.
        record.claimHolders = waiters.size;
        touch(record);
      }
      const snapshot = snapshotOf(record);
      for (const waiter of waiters) {
        waiter.assigned = true;
        waiter.detach();
        waiter.resolve(snapshot);
      }
    }
    if (record.backgroundWaiters) {
      const waiters = record.backgroundWaiters;
      record.backgroundWaiters = undefined;
      for (const waiter of waiters) {
        waiter.detach();
        waiter.resolve('settled');
      }
    }
    if (record.onTerminal) {
      const callbacks = record.onTerminal;
      record.onTerminal = undefined;
      for (const callback of callbacks) callback();
    }
    if (record.settleListeners) {
      const listeners = record.settleListeners;
      record.settleListeners = undefined;
      for (const listener of listeners) listener();
    }
    this.#emitChange('settled', record);
    // After the ending is told: a viewer hears of the end before the eviction it causes.
    this.#retain(record);
    this.#notifyDone(record);
    // A finished task keeps only what reads still need: without readOutput or an output stream, nothing
    // of the producer's hooks is used again, and letting them go keeps retained records small.
    if (record.hooks.readOutput === undefined && record.hooks.output === undefined) {
      record.hooks = SETTLED_HOOKS;
    }
  }

  #notifyDone(record: TaskRecord): void {
    const subscriptions = this.#doneSubscriptions;
    // Once the service is being disposed, nobody is told of any end: what ends now, its disposal ended.
    if (subscriptions.length === 0 || this.#disposal !== undefined) return;
    const snapshot = snapshotOf(record);
    for (const subscription of subscriptions) {
      if (subscription.owner !== undefined && subscription.owner !== record.owner) continue;
      try {
        const result = subscription.listener(snapshot);
        if (result && typeof (result as Promise<void>).then === 'function') {
          (result as Promise<void>).then(undefined, (error: unknown) => this.#listenerFailed(record, error));
        }
      } catch (error) {
        this.#listenerFailed(record, error);
      }
    }
  }

  #listenerFailed(record: TaskRecord, error: unknown): void {
    this.#options.logger.warn(`task ${record.id}: a task-done listener failed`, {
      taskId: record.id,
      error: error instanceof Error ? error.message : String(error),
    });
  }

  /** Keeps a bounded number of finished tasks per session; the oldest are forgotten first. */
  #retain(record: TaskRecord): void {
    const retained = record.bucket.retained;
    retained.add(record);
    if (retained.size > this.#options.maxRetainedTasksPerOwner) {
      const oldest = retained.shift();
      if (oldest) this.#remove(oldest);
    }
  }

  #forgetRetained(record: TaskRecord): void {
    record.bucket.retained.delete(record);
  }

  #remove(record: TaskRecord): void {
    if (this.#records.get(record.id) !== record) return;
    this.#cursors.closeTask(record.id, 'task_forgotten');
    this.#records.delete(record.id);
    this.#forgetRetained(record);
    this.#dropBucketIfEmpty(record.bucket);
    if (record.owner) this.#owners.get(record.owner)?.tasks.delete(record);
    this.#emitChange('removed', record);
  }

  // ---------------------------------------------------------------- reading

  get(id: string, caller?: Caller): TaskSnapshot {
    return snapshotOf(this.#authorize(id, caller));
  }

  list(caller?: Caller): TaskSnapshot[] {
    const snapshots: TaskSnapshot[] = [];
    for (const record of this.#records.values()) {
      if (this.#isVisible(record, caller)) snapshots.push(snapshotOf(record));
    }
    return snapshots;
  }

  listBackground(caller: Caller, max: number): BackgroundListing {
    if (caller === undefined || isTrustedCaller(caller)) return backgroundListingOf(this.list(caller), max);
    const bucket = this.#buckets.get(caller.sessionId);
    if (bucket === undefined) return { tasks: [], live: 0, finished: 0 };
    // The newest live ones, walking from the newest: foreground calls in flight are skipped.
    const chosen: TaskRecord[] = [];
    for (const record of bucket.liveOrder.newestFirst()) {
      if (chosen.length >= max) break;
      if (record.isBackgrounded) chosen.push(record);
    }
    // Finished ones: the retained records, bounded by `maxRetainedTasksPerOwner` whatever is live.
    const finished: TaskRecord[] = [];
    for (const record of bucket.retained) if (record.isBackgrounded) finished.push(record);
    finished.sort((a, b) => a.listOrder - b.listOrder);
    chosen.push(...finished.slice(Math.max(0, finished.length - max)));
    chosen.sort((a, b) => a.listOrder - b.listOrder);
    return {
      tasks: chosen.map((record) => snapshotOf(record)),
      live: bucket.liveBackgrounded,
      finished: finished.length,
    };
  }

  read(id: string, caller?: Caller): Promise<TaskReadResult> {
    let record: TaskRecord;
    try {
      record = this.#authorize(id, caller);
    } catch (error) {
      return Promise.reject(error);
    }
    const run = () => this.#readNow(record);
    const result = record.readChain ? record.readChain.then(run, run) : run();
    record.readChain = result;
    return result;
  }

  async #readNow(record: TaskRecord): Promise<TaskReadResult> {
    const hooks = record.hooks;
    if (hooks.readOutput === undefined) {
      if (isLive(record)) return { text: '', snapshot: snapshotOf(record) };
      this.#claimRecord(record);
      return { text: record.output ?? '', snapshot: snapshotOf(record) };
    }
    const wasTerminal = !isLive(record);
    const attempt = record.attempt;
    const before = snapshotOf(record);
    let text: string;
    try {
      text = await hooks.readOutput();
    } catch (error) {
      throw new ProducerContractError(`Reading the output of task ${record.id} failed`, {
        cause: error,
        context: { taskId: record.id },
      });
    }
    if (typeof text !== 'string') {
      throw new ProducerContractError(`The ${record.kind} producer's readOutput returned a non-string`, {
        context: { taskId: record.id },
      });
    }
    // A resume while the read ran made this the output of an earlier attempt: it claims nothing of the new one.
    if (record.attempt !== attempt) return { text, snapshot: before };
    if (wasTerminal) this.#claimRecord(record);
    return { text, snapshot: snapshotOf(record) };
  }

  // ---------------------------------------------------------------- observation cursors

  async openCursor(id: string, caller?: Caller, options?: OpenCursorOptions): Promise<OutputCursor> {
    if (this.#disposal) throw new ServiceDisposedError();
    return this.#cursors.open(this.#cursorSubject(this.#authorize(id, caller)), options);
  }

  /** What the cursors of one registration read: it is never re-registered under them (they close first). */
  #cursorSubject(record: TaskRecord): CursorSubject {
    const hooks = record.hooks;
    const kind: OutputStreamKind =
      hooks.output !== undefined ? 'bytes' : hooks.readOutput === undefined ? 'final' : 'none';
    let result: TaskOutputStream | undefined;
    return {
      taskId: record.id,
      kind,
      stream: () => {
        if (kind === 'bytes') return hooks.output;
        if (kind === 'none' || isLive(record)) return undefined;
        // A final-output task's stream is its result, complete once it has ended.
        result ??= fixedBytesStream(Buffer.from(record.output || record.resultText || '', 'utf8'));
        return result;
      },
      status: () => record.status,
      onSettle: (listener) => {
        record.settleListeners ??= new Set();
        record.settleListeners.add(listener);
        return () => {
          record.settleListeners?.delete(listener);
        };
      },
    };
  }

  // ---------------------------------------------------------------- waiting

  wait(id: string, timeoutMs: number, caller?: Caller, signal?: AbortSignal): Promise<TaskSnapshot> {
    if (
      typeof timeoutMs !== 'number' ||
      !Number.isFinite(timeoutMs) ||
      timeoutMs <= 0 ||
      timeoutMs > MAX_WAIT_MS
    ) {
      return Promise.reject(new InvalidTimeoutError('timeoutMs', timeoutMs, MAX_WAIT_MS));
    }
    let record: TaskRecord;
    try {
      record = this.#authorize(id, caller);
    } catch (error) {
      return Promise.reject(error);
    }
    if (!isLive(record)) {
      this.#claimRecord(record);
      return Promise.resolve(snapshotOf(record));
    }
    if (signal?.aborted) return Promise.reject(new WaitAbortedError(record.id, signal.reason));
    return new Promise<TaskSnapshot>((resolve, reject) => {
      const onAbort = () => {
        // Unregister synchronously: a settlement in the same tick must not claim for this waiter.
        if (waiter.assigned) return;
        record.waiters?.delete(waiter);
        clearTimeout(timer);
        reject(new WaitAbortedError(record.id, signal?.reason));
      };
      const timer = setTimeout(() => {
        if (waiter.assigned) return;
        record.waiters?.delete(waiter);
        signal?.removeEventListener('abort', onAbort);
        resolve(snapshotOf(record));
      }, timeoutMs);
      const waiter: Waiter = {
        assigned: false,
        resolve,
        reject,
        detach: () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
        },
      };
      record.waiters ??= new Set();
      record.waiters.add(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  // ---------------------------------------------------------------- stopping

  async kill(id: string, caller?: Caller, reason?: string, options: KillOptions = {}): Promise<TaskSnapshot> {
    const record = this.#authorize(id, caller);
    if (reason !== undefined && typeof reason !== 'string') {
      throw new InvalidArgumentError('reason', 'a string', reason, { taskId: record.id });
    }
    if (options.initiator !== undefined && !STOP_INITIATORS.includes(options.initiator)) {
      throw new InvalidArgumentError('initiator', '"user", "model" or "system"', options.initiator);
    }
    if (!isLive(record)) return snapshotOf(record);
    if (!record.cancellable) throw new CancelNotSupportedError(record.id, record.kind);
    if (record.status === 'stopping') return snapshotOf(record);
    const previousInitiator = record.stopInitiator;
    record.status = 'stopping';
    record.cancelRequestedAt = this.#options.now();
    record.stopInitiator = options.initiator ?? previousInitiator;
    touch(record);
    // Viewers learn the task is no longer cancellable before the producer is asked to stop.
    this.#emitChange('stopping', record);
    try {
      record.hooks.cancel(reason);
    } catch (error) {
      // The caller's request failed; the task keeps running as it was.
      if (record.status === 'stopping') {
        record.status = 'running';
        record.cancelRequestedAt = undefined;
        record.stopInitiator = previousInitiator;
        touch(record);
        this.#emitChange('updated', record);
      }
      throw new CancelFailedError(record.id, error);
    }
    return snapshotOf(record);
  }

  /**
   * Teardown cancel (owner or service disposal). A cancel that throws forces the record to `failed`:
   * disposal cannot wait on a promise that may never settle.
   */
  #cancelForTeardown(record: TaskRecord, reason: string): void {
    if (!isLive(record)) return;
    record.tornDown = true;
    // Work let go of is not being stopped: it is not shown stopping (a record of it stays as it was).
    if (record.status === 'running' && record.hooks.detach === undefined) {
      record.status = 'stopping';
      record.cancelRequestedAt = this.#options.now();
      record.stopInitiator ??= 'system';
      touch(record);
      this.#emitChange('stopping', record);
    }
    try {
      // Work that outlives its runtime is let go of, not stopped.
      if (record.hooks.detach) record.hooks.detach();
      else record.hooks.cancel(reason);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.#options.logger.warn(`task ${record.id}: cancel threw during ${reason}; work may be left behind`, {
        taskId: record.id,
        error: message,
      });
      this.#settle(record, {
        status: 'failed',
        error: `Cancel failed during ${reason}: ${message}. The work may be left behind.`,
      });
    }
  }

  // ---------------------------------------------------------------- claims, background, messages

  claim(id: string, caller?: Caller): boolean {
    return this.#claimRecord(this.#authorize(id, caller));
  }

  #claimRecord(record: TaskRecord): boolean {
    if (isLive(record) || record.reported) return false;
    record.reported = true;
    record.claimHolders = 1;
    touch(record);
    this.#emitChange('claimed', record);
    return true;
  }

  releaseClaim(id: string, caller?: Caller, options: ReleaseClaimOptions = {}): void {
    const record = this.#authorize(id, caller);
    const attempt = options.attempt;
    if (attempt !== undefined && (!Number.isSafeInteger(attempt) || attempt < 1)) {
      throw new InvalidArgumentError('attempt', 'a positive integer', attempt, { taskId: record.id });
    }
    // Checked in the same step as the release: the claim of a newer attempt is not the caller's to return.
    if (attempt !== undefined && attempt !== record.attempt) return;
    // A teardown's claim is never returned: the owner it would tell is gone.
    if (!record.reported || record.tornDown) return;
    if (record.claimHolders > 1) {
      // Another waiter received the same end: the result was reported to it all the same.
      record.claimHolders -= 1;
      return;
    }
    record.reported = false;
    record.claimHolders = 0;
    touch(record);
    this.#emitChange('unclaimed', record);
  }

  requestBackground(id: string, caller?: Caller): TaskSnapshot {
    const record = this.#authorize(id, caller);
    if (!isLive(record) || record.isBackgrounded) return snapshotOf(record);
    // Checked now, not at start: the work stays in the foreground, where its call still collects it.
    this.#requireController(record.kind, record.owner);
    record.isBackgrounded = true;
    record.bucket.liveBackgrounded += 1;
    touch(record);
    if (record.backgroundWaiters) {
      const waiters = record.backgroundWaiters;
      record.backgroundWaiters = undefined;
      for (const waiter of waiters) {
        waiter.detach();
        waiter.resolve('backgrounded');
      }
    }
    this.#emitChange('backgrounded', record);
    return snapshotOf(record);
  }

  waitForBackground(id: string, caller?: Caller, signal?: AbortSignal): Promise<BackgroundWaitResult> {
    let record: TaskRecord;
    try {
      record = this.#authorize(id, caller);
    } catch (error) {
      return Promise.reject(error);
    }
    if (!isLive(record)) return Promise.resolve('settled');
    if (record.isBackgrounded) return Promise.resolve('backgrounded');
    if (signal?.aborted) return Promise.reject(new WaitAbortedError(record.id, signal.reason));
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        record.backgroundWaiters?.delete(waiter);
        reject(new WaitAbortedError(record.id, signal?.reason));
      };
      const waiter: BackgroundWaiter = {
        resolve,
        detach: () => signal?.removeEventListener('abort', onAbort),
      };
      record.backgroundWaiters ??= new Set();
      record.backgroundWaiters.add(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  setStopInitiator(id: string, initiator: StopInitiator, caller?: Caller): TaskSnapshot {
    const record = this.#authorize(id, caller);
    if (!STOP_INITIATORS.includes(initiator)) {
      throw new InvalidArgumentError('initiator', '"user", "model" or "system"', initiator);
    }
    if (!isLive(record)) throw new TaskNotRunningError(record.id, record.status);
    if (record.stopInitiator !== initiator) {
      record.stopInitiator = initiator;
      touch(record);
      this.#emitChange('updated', record);
    }
    return snapshotOf(record);
  }

  sendMessage(id: string, message: string, caller?: Caller): TaskSnapshot {
    const record = this.#authorize(id, caller);
    if (typeof message !== 'string' || message.length === 0) {
      throw new InvalidArgumentError('message', 'a non-empty string', message, { taskId: record.id });
    }
    if (!isLive(record)) throw new TaskNotRunningError(record.id, record.status);
    if (!record.hooks.sendMessage) throw new MessagesNotSupportedError(record.id, record.kind);
    record.hooks.sendMessage(message);
    return snapshotOf(record);
  }

  // ---------------------------------------------------------------- subscriptions

  onTaskDone(listener: TaskDoneListener, options: OnTaskDoneOptions = {}): Disposer {
    if (typeof listener !== 'function') throw new InvalidArgumentError('listener', 'a function', listener);
    const subscription: DoneSubscription = { listener, owner: options.owner };
    this.#doneSubscriptions = [...this.#doneSubscriptions, subscription];
    return () => {
      this.#doneSubscriptions = this.#doneSubscriptions.filter((candidate) => candidate !== subscription);
    };
  }

  onTasksChanged(listener: TaskChangeListener, options: OnTasksChangedOptions = {}): Disposer {
    if (typeof listener !== 'function') throw new InvalidArgumentError('listener', 'a function', listener);
    const subscription: ChangeSubscription = { listener, caller: options.caller };
    this.#changeSubscriptions = [...this.#changeSubscriptions, subscription];
    return () => {
      this.#changeSubscriptions = this.#changeSubscriptions.filter((candidate) => candidate !== subscription);
    };
  }

  #emitChange(reason: TaskChangeReason, record: TaskRecord): void {
    const trace = record.trace;
    if (trace !== undefined) {
      trace.change(reason, snapshotOf(record));
      if (reason === 'settled' || reason === 'removed') record.trace = undefined;
    }
    const subscriptions = this.#changeSubscriptions;
    if (subscriptions.length === 0) return;
    const task = snapshotOf(record);
    for (const subscription of subscriptions) {
      if (!this.#isVisible(record, subscription.caller)) continue;
      let visible: readonly TaskSnapshot[] | undefined;
      const change = {
        reason,
        task,
        tasks: () => {
          visible ??= Object.freeze(this.list(subscription.caller));
          return visible;
        },
      };
      try {
        subscription.listener(change);
      } catch (error) {
        this.#options.logger.warn(`task ${record.id}: a task-change listener failed`, {
          taskId: record.id,
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }
  }

  /** Fails unless some attached controller can collect and stop background work of `owner`. */
  #requireController(kind: TaskKind, owner: Owner | undefined): void {
    if (this.#options.requireController && !this.#controllers.serves(owner)) {
      throw new NoControllerError(kind, owner?.sessionId);
    }
  }

  attachController(name: string, scope?: ControllerScope): Disposer {
    return this.#controllers.attach(name, scope);
  }

  // ---------------------------------------------------------------- owners and disposal

  #ownerState(owner: Owner): OwnerState {
    let state = this.#owners.get(owner);
    if (!state) {
      const tasks = new Set<TaskRecord>();
      const detach = owner.addCleanup(() => this.#disposeOwner(owner, tasks));
      state = { tasks, detach };
      this.#owners.set(owner, state);
    }
    return state;
  }

  async #disposeOwner(owner: Owner, tasks: Set<TaskRecord>): Promise<void> {
    const live = [...tasks].filter(isLive);
    for (const record of live) this.#cancelForTeardown(record, 'owner disposal');
    await Promise.all(live.map(whenTerminal));
    for (const record of [...tasks]) {
      // A resumed record may have moved to a replacement owner meanwhile.
      if (record.owner === owner) this.#remove(record);
    }
    this.#owners.delete(owner);
  }

  dispose(): Promise<void> {
    if (this.#disposal === undefined) {
      // Set before any cancel runs: a start that a cancel or a listener triggers is refused, not leaked.
      let finish!: () => void;
      this.#disposal = new Promise<void>((resolve) => {
        finish = resolve;
      });
      void this.#disposeNow().then(finish);
    }
    return this.#disposal;
  }

  async #disposeNow(): Promise<void> {
    const live = [...this.#records.values()].filter(isLive);
    for (const record of live) this.#cancelForTeardown(record, 'service disposal');
    await Promise.all(live.map(whenTerminal));
    // What the disposal ended leaves the set (announced as removed), so no viewer keeps a stale row;
    // tasks that had finished before stay readable.
    for (const record of live) this.#remove(record);
    this.#cursors.closeAll('service_disposed');
    for (const state of this.#owners.values()) state.detach();
    this.#owners.clear();
    this.#releaseSequenceBlocks();
  }

  /** Gives back the unused ends of the reserved blocks, so the next service continues right after. */
  #releaseSequenceBlocks(): void {
    const release = this.#options.sequenceBlocks?.release;
    if (release === undefined) return;
    for (const [kind, block] of this.#blocks) {
      const lastUsed = Math.max(block.first - 1, Math.min(block.last, this.#sequences.get(kind) ?? 0));
      try {
        release.call(this.#options.sequenceBlocks, kind, block, lastUsed);
      } catch (error) {
        this.#options.logger.warn(`releasing the unused ${kind} ids failed`, {
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }
    this.#blocks.clear();
  }

  // ---------------------------------------------------------------- authorization

  #isVisible(record: TaskRecord, caller: Caller): boolean {
    if (caller === undefined) return record.ownerSessionId === undefined;
    if (isTrustedCaller(caller)) return true;
    return record.ownerSessionId === caller.sessionId;
  }

  /** Unknown, malformed and unauthorized ids all fail the same way. */
  #authorize(id: string, caller: Caller): TaskRecord {
    const record = typeof id === 'string' ? this.#records.get(id) : undefined;
    if (record === undefined || !this.#isVisible(record, caller)) throw new TaskNotFoundError(String(id));
    return record;
  }
}
