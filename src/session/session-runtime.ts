/**
 * The session runtime: creates and resumes sessions over one task service and one store, wires each
 * session's delivery policy to its queue, keeps task records in the store, and shuts everything down.
 */

import { randomUUID } from 'node:crypto';
import {
  createDeliveryPolicy,
  type DeliveryPolicy,
  formatLostTaskNotification,
  type TaskNotification,
} from '../notifications/index.js';
import { memoizedSource, outputFileBeside, type ProcessSource, procfsSource } from '../process/index.js';
import { createTaskService, type SequenceBlocks, type StartGuardRequest } from '../registry/index.js';
import { type JsonObject, jsonCopy } from '../store/json.js';
import type { StoredTask } from '../store/records.js';
import type { SessionStore, TaskRecordInput, TransactionOptions } from '../store/session-store.js';
import { taskRecordFromSnapshot } from '../store/task-record-from-snapshot.js';
import { taskSnapshotFromRecord } from '../store/task-snapshot-from-record.js';
import {
  asSessionId,
  type Caller,
  type CancelTimer,
  type Clock,
  createTrustedCaller,
  ErrandError,
  isTerminalStatus,
  isTrustedCaller,
  type Logger,
  parseTaskId,
  type SessionId,
  type TaskService,
  type TaskSnapshot,
  TERMINAL_STATUSES,
  validateSessionId,
} from '../tasks/index.js';
import { readFileTail } from '../text/index.js';
import type { RecordedTasks } from '../tools/index.js';
import type { Tracing } from '../tracing/index.js';
import type { ModelPort } from './model-port.js';
import { sessionNotificationOf } from './notification-inbox.js';
import { PendingStoreWrites, type StoreFailure } from './pending-store-writes.js';
import { LOST_CASES, type LostCase, type ReconcileContext, reconcileSessionTasks } from './reconcile.js';
import { PROGRESS_KEY_PREFIX, takeQueuedResidue, untoldEndings } from './resume-residue.js';
import { Session } from './session.js';
import { describeStoreFailure, PersistenceFailingError } from './session-errors.js';
import type { SessionEvent } from './session-events.js';
import { holderFor, isHolderLive, registerLiveRuntime } from './session-holder.js';
import type { ResolvedSessionLimits } from './session-limits.js';
import {
  type CreateSessionOptions,
  createSessionOptions,
  type PolicyOptions,
  type ResolvedSessionRuntimeOptions,
  type ResumeSessionOptions,
  resumeSessionOptions,
  type SessionRuntimeOptions,
  sessionRuntimeOptions,
} from './session-options.js';

const runtimeCaller = createTrustedCaller('session-runtime');

export type { CreateSessionOptions, PolicyOptions, ResumeSessionOptions, SessionRuntimeOptions };

export class SessionNotFoundError extends ErrandError {
  constructor(sessionId: string) {
    super('SESSION_NOT_FOUND', 'caller', `No session with id ${JSON.stringify(sessionId)}`, {
      context: { sessionId },
    });
  }
}

export class SessionExistsError extends ErrandError {
  constructor(sessionId: string) {
    super(
      'SESSION_EXISTS',
      'caller',
      `Session ${JSON.stringify(sessionId)} is already open in this runtime`,
      {
        context: { sessionId },
      },
    );
  }
}

export type RuntimeEventListener = (sessionId: SessionId, event: SessionEvent) => void;

export class SessionRuntime {
  readonly tasks: TaskService;
  readonly store: SessionStore;
  readonly #options: ResolvedSessionRuntimeOptions;
  readonly #ownsTasks: boolean;
  readonly #sessions = new Map<
    string,
    { session: Session; policy: DeliveryPolicy; scope: string; detach: () => void }
  >();
  readonly #listeners = new Set<RuntimeEventListener>();
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #clock: Clock;
  readonly #tracing: Tracing;
  readonly #stopRecording: () => void;
  /** Distinguishes this runtime's notifications in the ledger from an earlier one's with the same task ids. */
  readonly #instance = randomUUID().slice(0, 8);
  readonly #unregister: () => void;
  readonly #allClosedWaiters: Array<() => void> = [];
  /** Per task (session and id): the viewer facts last persisted, so a detail update writes only when they change. */
  readonly #persisted = new Map<string, PersistedFacts>();
  /** Per task: the write of its pid, start time and output file, while they wait (`limits.processFactsDelayMs`). */
  readonly #factsWrites = new Map<string, CancelTimer>();
  #processSource: ProcessSource | undefined;
  /** Sessions opened so far: each opening gets its own admission scope (see `#enqueue`). */
  #openings = 0;
  readonly #limits: ResolvedSessionLimits;
  /** Task records and notifications the store refused, retried in order until it takes them. */
  readonly #pending: PendingStoreWrites;
  /** Per session: the line its next tool result carries about the store. */
  readonly #notes = new Map<string, string>();
  /** Sessions whose model was told the store is failing (they are told when it works again). */
  readonly #toldFailing = new Set<string>();
  #withdrawals = 0;
  /** The task service as the delivery policies see it: their claims are told apart (see `#record`). */
  readonly #policyTasks: TaskService;
  /** True while a delivery policy takes a claim. */
  #policyClaiming = false;
  /** Per resident session: when it last did anything (clock milliseconds), for residency. */
  readonly #lastActive = new Map<string, number>();
  #cancelResidency: CancelTimer | undefined;
  #disposal: Promise<void> | undefined;

  constructor(options: SessionRuntimeOptions) {
    // Everything is checked before the runtime attaches to a task service or a session reaches the store.
    const resolved = sessionRuntimeOptions.resolve(options);
    this.#options = resolved;
    this.store = resolved.store;
    this.#logger = resolved.logger;
    this.#clock = resolved.clock;
    this.#now = resolved.now ?? (() => this.#clock.now());
    this.#limits = resolved.limits;
    this.#pending = new PendingStoreWrites({
      clock: this.#clock,
      retryMs: this.#limits.deliveryRetryMs,
      retryMaxMs: this.#limits.deliveryRetryMaxMs,
      maxPending: this.#limits.maxPendingStoreWrites,
      logger: this.#logger,
      changed: (failure) => this.#persistenceChanged(failure),
    });
    this.#tracing = resolved.tracing;
    this.#ownsTasks = resolved.tasks === undefined;
    this.tasks =
      resolved.tasks ??
      createTaskService({
        // No initialSequences: the store's task_sequences already holds the highest id per kind.
        sequenceBlocks: storeSequenceBlocks(resolved.store),
        tracing: resolved.tracing,
        startGuard: (request) => this.checkStart(request),
      });
    const tasks = this.tasks;
    this.#policyTasks = new Proxy(tasks, {
      get: (target, property) => {
        if (property === 'claim') {
          return (id: string, caller?: Caller) => {
            this.#policyClaiming = true;
            try {
              return target.claim(id, caller);
            } finally {
              this.#policyClaiming = false;
            }
          };
        }
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    this.#stopRecording = this.tasks.onTasksChanged((change) => this.#record(change.reason, change.task), {
      caller: runtimeCaller,
    });
    this.#unregister = registerLiveRuntime(this.#instance);
  }

  /**
   * This runtime's instance id: what the store records as the holder of its sessions, and the address of
   * the commands (a person's stop from another process) this runtime answers.
   */
  get instanceId(): string {
    return this.#instance;
  }

  /**
   * Undefined while the store takes every write. While it refuses them (disk full, read-only, an I/O
   * error) task records and notifications are kept in memory and retried with back-off
   * (`limits.deliveryRetryMs`, doubling up to `limits.deliveryRetryMaxMs`): this says since when, why, and
   * how many wait. New background work is refused meanwhile (`checkStart`).
   */
  get persistence(): StoreFailure | undefined {
    return this.#pending.failure;
  }

  /**
   * Refuses background work with `PERSISTENCE_FAILING` while the store cannot record the endings of work
   * already running: work started now could end with nobody told. The task service this runtime creates
   * calls it in its preflight (`startGuard`); a host that brings its own service passes it as that
   * service's `startGuard`.
   */
  checkStart(request: StartGuardRequest): void {
    const failure = this.#pending.failure;
    if (failure === undefined || !request.background) return;
    throw new PersistenceFailingError(request.kind, describeStoreFailure(failure.error), failure.pending);
  }

  /** Subscribes to the events of every session of this runtime. */
  onSessionEvent(listener: RuntimeEventListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  createSession(input: CreateSessionOptions = {}): Session {
    this.#ensureOpen();
    const options = createSessionOptions.resolve(input);
    const id = options.id ?? asSessionId(`session-${randomUUID()}`);
    if (this.#sessions.has(id)) throw new SessionExistsError(id);
    const { parentId } = options;
    const cwd = options.cwd ?? this.#options.cwd ?? process.cwd();
    const record = this.store.createSession({
      id,
      ...(parentId ? { parentId } : {}),
      cwd,
      ...(options.title ? { title: options.title } : {}),
    });
    try {
      this.store.acquireSession(record.id, holderFor(this.#instance, this.#now()), isHolderLive);
      return this.#open(record.id, parentId, cwd, options.env, record.branchGeneration);
    } catch (error) {
      // A tools or model factory that throws leaves no session behind that looks open, or held.
      try {
        this.store.updateSession(record.id, { state: 'closed' });
      } catch {
        // The original error says more.
      }
      this.#releaseAfterFailedOpen(record.id);
      throw error;
    }
  }

  /**
   * Re-opens a stored session after a restart. Live task records of the old runtime become `lost` (their
   * processes died with it). Nothing the store knows ends untold: notifications the old process left
   * queued go back into the queue (a delivery writes its message and settles its entries in one
   * transaction, so a queued one was never delivered), and every ending the store recorded but never told
   * is queued now — those lost with the runtime quietly. A person's queued input is discarded
   * (`session_resumed`): whoever waited for its turn is gone.
   */
  resumeSession(id: string, input: ResumeSessionOptions = {}): Session {
    this.#ensureOpen();
    const options = resumeSessionOptions.resolve(input);
    const sessionId = validateSessionId(id, 'id');
    if (this.#sessions.has(sessionId)) throw new SessionExistsError(sessionId);
    const record = this.store.getSession(sessionId);
    if (!record) throw new SessionNotFoundError(sessionId);
    // Before anything is discarded or marked lost: a runtime that still has it open keeps it (SESSION_IN_USE).
    this.store.acquireSession(sessionId, holderFor(this.#instance, this.#now()), isHolderLive);
    let residue: ReturnType<typeof takeQueuedResidue>;
    let reconciled: ReturnType<typeof reconcileSessionTasks>;
    let session: Session;
    try {
      residue = takeQueuedResidue(this.store, sessionId);
      // Checked, never assumed: what still runs is taken over, what ended is settled with the truth.
      reconciled = reconcileSessionTasks(sessionId, this.#reconcileContext());
      this.store.markLiveAsLost({ sessionId, error: LOST_ON_RESUME_ERROR, keepTaskIds: reconciled.kept });
      if (record.state === 'closed') this.store.updateSession(sessionId, { state: 'active' });
      session = this.#open(sessionId, record.parentId, record.cwd, options.env, record.branchGeneration);
    } catch (error) {
      // Not opened here: another runtime may resume it.
      this.#releaseAfterFailedOpen(sessionId);
      throw error;
    }
    session.restoreNotifications(residue);
    reconciled.adopt(session.owner);
    this.#tellUntold(
      session,
      new Set(residue.filter((notification) => notification.ending !== false).map((entry) => entry.taskId)),
    );
    return session;
  }

  #reconcileContext(): ReconcileContext {
    const options = this.#options.reconcile;
    this.#processSource ??= options.processSource ?? memoizedSource(procfsSource());
    return {
      store: this.store,
      tasks: this.tasks,
      source: this.#processSource,
      clock: this.#clock,
      logger: this.#logger,
      killGraceMs: options.killGraceMs ?? 2000,
      ...(options.adoptDurable === undefined ? {} : { adoptDurable: options.adoptDurable }),
    };
  }

  /** Clears this runtime's holder of a session it failed to open (a no-op when another runtime holds it). */
  #releaseAfterFailedOpen(id: SessionId): void {
    try {
      this.store.releaseSession(id, this.#instance);
    } catch {
      // The original error says more; a holder left behind is stale once this runtime is disposed.
    }
  }

  /**
   * Queues the endings of the session's finished background tasks that the store never saw told (see
   * `untoldEndings`), less those whose notification is back in the queue (`queued`): a task lost with its
   * runtime quietly (no turn starts for it; the model learns with its next request), any other as the
   * delivery policy would have. Each is marked told once it is delivered, so it is told once.
   */
  #tellUntold(session: Session, queued: ReadonlySet<string>): void {
    const entry = this.#sessions.get(session.id);
    if (entry === undefined) return;
    const budgetBytes = this.#options.notifications.maxNotificationBytes;
    for (const task of untoldEndings(this.store, session.id, session.branchGeneration, queued)) {
      const key = `ending:${entry.scope}:${task.id}:${task.startedAt}`;
      try {
        if (task.status === 'lost') {
          session.deliverNotification({
            taskId: task.id,
            label: task.label,
            text: formatLostTaskNotification({
              taskId: task.id,
              kind: task.kind,
              label: task.label,
              error: task.error,
              outputFile: task.outputFile,
              lostCase: lostCaseOf(task) ?? 'runtime_stopped',
              budgetBytes,
            }),
            lane: 'quiet',
            branchGeneration: task.branchGeneration,
            idempotencyKey: key,
            // The span of the task that ran before the restart: its delivery links to it.
            ...(task.traceparent === undefined ? {} : { traceparent: task.traceparent }),
          });
          continue;
        }
        const snapshot = taskSnapshotFromRecord(task);
        const tail =
          task.outputFile === undefined
            ? undefined
            : readFileTail(task.outputFile, RECORDED_TAIL_READ_BYTES)?.text;
        const notification = entry.policy.notificationFor(snapshot, tail);
        if (notification === undefined) continue;
        session.deliverNotification(sessionNotificationOf(notification, key));
      } catch (error) {
        this.#logger.warn(`task ${task.id}: queueing the notification of its recorded ending failed`, {
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }
  }

  /**
   * The finished tasks the store remembers for a caller's session that the task service does not hold —
   * an earlier runtime's, after a resume — for `task_output` and `task_list` (`TaskToolsOptions.recorded`).
   * A caller sees only its own session's records.
   */
  readonly recordedTasks: RecordedTasks = {
    read: (taskId, caller, maxBytes) => {
      const sessionId = callerSession(caller);
      if (sessionId === undefined || typeof taskId !== 'string' || taskId === '') return undefined;
      const record = this.store.getTask(taskId, sessionId);
      if (record === undefined || !isTerminalStatus(record.status)) return undefined;
      // From the model's cursor: what it read before the restart is not given again.
      const tail =
        record.outputFile === undefined
          ? undefined
          : readFileTail(record.outputFile, maxBytes, record.readOffset);
      if (tail !== undefined && tail.totalBytes > record.readOffset) {
        try {
          this.store.saveTaskReadOffset(taskId, sessionId, tail.totalBytes);
        } catch {
          // Not recorded: the next read shows the same output again, nothing is lost.
        }
      }
      return {
        snapshot: taskSnapshotFromRecord(record),
        text: tail?.text ?? '',
        totalBytes: tail?.totalBytes,
        fromBytes: Math.min(record.readOffset, tail?.totalBytes ?? 0),
      };
    },
    list: (caller, limit) => {
      const sessionId = callerSession(caller);
      if (sessionId === undefined) return [];
      const finished = this.store.listTasks({ sessionId, statuses: TERMINAL_STATUSES });
      return finished.slice(Math.max(0, finished.length - limit)).map(taskSnapshotFromRecord);
    },
  };

  getSession(id: string): Session | undefined {
    return this.#sessions.get(id)?.session;
  }

  /**
   * The session, opened here if it is not: the resident one, or — unloaded for being idle
   * (`unloadIdleAfterMs`), or never opened by this runtime — resumed from the store
   * (`resumeSession`), with its conversation and ledger. A session still unloading is waited for.
   */
  async loadSession(id: string, options: ResumeSessionOptions = {}): Promise<Session> {
    const resident = this.#sessions.get(id)?.session;
    if (resident !== undefined && !resident.unloading) return resident;
    if (resident !== undefined) await resident.close();
    return this.getSession(id) ?? this.resumeSession(id, options);
  }

  /** How many sessions are open in this process's memory now. */
  get residentSessions(): number {
    return this.#sessions.size;
  }

  /**
   * Resolves once no session is open in this runtime. After `dispose()` that is at once — unless it was
   * called from inside a session's own turn, which closes only once that turn unwinds.
   */
  whenAllClosed(): Promise<void> {
    if (this.#sessions.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#allClosedWaiters.push(resolve));
  }

  /** Sessions open in this runtime. */
  listSessions(): Session[] {
    return [...this.#sessions.values()].map((entry) => entry.session);
  }

  /** The delivery policy of an open session (for progress notifications and sealing). */
  policyOf(id: string): DeliveryPolicy | undefined {
    return this.#sessions.get(id)?.policy;
  }

  async closeSession(id: string): Promise<void> {
    const entry = this.#sessions.get(id);
    if (!entry) throw new SessionNotFoundError(id);
    await entry.session.close();
  }

  #open(
    id: SessionId,
    parentId: SessionId | undefined,
    cwd: string,
    env: Readonly<Record<string, string>> | undefined,
    branchGeneration: number,
  ): Session {
    const options = this.#options;
    let modelFactory: ((session: Session) => ModelPort) | undefined;
    if (typeof options.model === 'function') modelFactory = options.model;
    const placeholder: ModelPort = options.model as ModelPort;
    // A session closed and re-opened (resumed) in this runtime starts a new admission scope: the registry
    // forgot its tasks at close, so a task re-registered under an old id (a resumed workflow run) starts
    // again at attempt 1, and its end must not be mistaken for the earlier one's notification.
    const scope = `${this.#instance}.${++this.#openings}`;
    const session = new Session({
      id,
      parentId,
      cwd,
      env: env ?? options.env ?? (process.env as Record<string, string>),
      branchGeneration,
      store: this.store,
      tasks: this.tasks,
      model: modelFactory ? unsetModel : placeholder,
      systemPrompt: options.systemPrompt,
      limits: this.#limits,
      logger: this.#logger,
      now: this.#now,
      clock: this.#clock,
      tracing: this.#tracing,
      tools: (created) => options.tools?.(created) ?? [],
      ...(options.beforeUserPrompt ? { beforeUserPrompt: options.beforeUserPrompt } : {}),
      onShutdown: async (closing) => {
        await options.onSessionShutdown?.(closing);
      },
      recordLater: (write, error) =>
        this.#pending.keepRefused(`withdrawal:${id}:${++this.#withdrawals}`, write, error),
      persistenceNote: () => this.#takeNote(id),
    });
    if (modelFactory) session.setModel(modelFactory(session));

    const policy = createDeliveryPolicy({
      ...options.notifications,
      tasks: this.#policyTasks,
      owner: session.owner,
      currentBranchGeneration: () => session.branchGeneration,
      isShuttingDown: () => session.shuttingDown || this.#disposal !== undefined,
      isSealed: () => session.sealed,
      logger: this.#logger,
      now: this.#now,
      enqueue: (notification) => this.#enqueue(session, scope, notification),
    });
    this.#lastActive.set(id, this.#clock.now());
    const stopForwarding = session.on((event) => {
      this.#lastActive.set(id, this.#clock.now());
      if (event.type === 'turn-start' && event.source === 'user') policy.noteUserInput();
      // A wake-up is spent when background results reach the model in a turn of their own: the message
      // that delivers them. A turn whose batch was all stale, or whose delivery the store refused, spends none.
      if (event.type === 'message' && event.message.source === 'background_task') policy.noteWake();
      for (const listener of [...this.#listeners]) {
        try {
          listener(id, event);
        } catch (error) {
          this.#logger.warn('a session event listener failed', {
            error: error instanceof Error ? error.message : String(error),
          });
        }
      }
      if (event.type === 'state' && event.state === 'closed') this.#forget(id);
    });
    const failure = this.#pending.failure;
    if (failure !== undefined) this.#notes.set(id, failingNote(failure));
    this.#sessions.set(id, {
      session,
      policy,
      scope,
      detach: () => {
        stopForwarding();
        policy.dispose();
      },
    });
    this.#armResidency();
    return session;
  }

  #enqueue(session: Session, scope: string, notification: TaskNotification): void {
    // The notification's own attempt: a resume while it was being formatted must not borrow the new one.
    const attempt = notification.attempt;
    const ending = notification.event === 'terminal';
    const key = ending
      ? `task:${scope}:${notification.taskId}:${attempt}:${notification.startedAt}`
      : `${PROGRESS_KEY_PREFIX}${scope}:${notification.taskId}:${attempt}:${notification.startedAt}:${notification.event}:${notification.eventKey ?? notification.createdAt}`;
    // While the store refuses writes the admission waits behind the task's record, and is retried: the
    // inbox applies its rules again then (a session closed meanwhile refuses it; a resume tells it).
    // Deferred durability: nobody has seen the admission yet; the delivery that shows it syncs it.
    const outcome = this.#pending.write(`notification:${session.id}:${key}`, () =>
      this.store.transaction(
        () =>
          session.deliverNotification({
            ...sessionNotificationOf(notification, key),
            attempt,
            ...(ending ? {} : { ending: false }),
          }),
        DEFERRED,
      ),
    );
    if (!outcome.written) return;
    const admission = outcome.value;
    // A duplicate was admitted before; an end the model already read needs no notification: both keep the claim.
    if (!admission.admitted && admission.reason !== 'duplicate' && admission.reason !== 'result_read') {
      throw new ErrandError(
        'NOTIFICATION_NOT_ADMITTED',
        'system',
        `Session ${session.id} did not admit the notification of ${notification.taskId}: ${admission.reason}`,
        { context: { taskId: notification.taskId, reason: admission.reason } },
      );
    }
  }

  #forget(id: string): void {
    const entry = this.#sessions.get(id);
    if (!entry) return;
    entry.detach();
    this.#sessions.delete(id);
    this.#lastActive.delete(id);
    this.#notes.delete(id);
    this.#toldFailing.delete(id);
    if (this.#disposal !== undefined && this.#sessions.size === 0) this.#unregister();
    if (this.#sessions.size === 0) for (const wake of this.#allClosedWaiters.splice(0)) wake();
    try {
      this.store.releaseSession(id, this.#instance);
    } catch (error) {
      // Left behind, the holder is stale once this runtime is disposed: a later resume replaces it.
      this.#logger.warn(`session ${id}: clearing its holder failed`, {
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }

  /**
   * Keeps the store's task records in step with the registry, so a restart still knows what ran and a
   * viewer in another process sees it: every change but a detail update, and a detail update only when
   * the pid or the output file changed (never per byte: a viewer reads the byte count off the file).
   *
   * A record's `reported` says the ending needs no telling any more. For the two claimants that tell the
   * model — the delivery policy, and a tool inside the session's own turn — it is written with what shows
   * it (the delivery of the notification, the stored tool result), not when the claim is taken: a crash
   * in between leaves it untold, and a resume tells it. A finished record is written unreported unless the
   * session is being torn down (closing, sealed, the runtime disposed: endings a teardown causes are never
   * told). Any other claim taken with `claim` or a read (a superseded workflow run, an MCP client's
   * `task_output`) is written at once, and a returned claim too. A claim a waiter takes as the task
   * settles is not written: the waiter may be a tool in a turn (`task_output` with `wait`), whose result
   * writes it; a host's own `tasks.wait` therefore leaves the ending to be told after a resume.
   *
   * A running command's pid, start time and output file wait for its next write, up to
   * `limits.processFactsDelayMs`, when its record already holds the tree's tag and status file: a command
   * that ends sooner writes them with its ending only, and a restart in between recognises its tree by the
   * tag and finds its output beside the status file. A durable command's are written at once:
   * re-attaching it needs its pid.
   */
  #record(reason: string, task: TaskSnapshot): void {
    if (task.ownerSessionId === undefined) return;
    const key = `${task.ownerSessionId}\u0000${task.id}`;
    if (reason === 'removed') {
      this.#persisted.delete(key);
      this.#cancelFactsWrite(key);
      return;
    }
    if (!this.#sessions.has(task.ownerSessionId)) return;
    this.#lastActive.set(task.ownerSessionId, this.#clock.now());
    const session = this.#sessions.get(task.ownerSessionId)?.session;
    if (session === undefined) return;
    const claim = reason === 'claimed' || reason === 'unclaimed';
    if (claim) {
      if (!isTerminalStatus(task.status)) return;
      // The policy's claim is written with the delivery of its notification, and one taken inside the
      // session's own turn with the tool result that showed the end: that is when the model sees it.
      if (reason === 'claimed' && (this.#policyClaiming || session.calledFromOwnTurn())) return;
    }
    const ended = isTerminalStatus(task.status);
    // A durable task its runtime let go of at exit runs on: its record stays live for the next resume.
    if (ended && task.detail.detached === true) return;
    const facts = viewerFacts(task.detail);
    if (reason === 'updated' || reason === FACTS_DUE) {
      if (ended) return;
      const written = this.#persisted.get(key);
      if (written?.eager === facts.eager) {
        if (written.process === facts.process) return;
        if (reason === 'updated' && this.#factsCanWait(task)) {
          this.#writeFactsLater(key, task.id);
          return;
        }
      }
    }
    this.#cancelFactsWrite(key);
    if (ended) this.#persisted.delete(key);
    else this.#persisted.set(key, facts);
    const tornDown = session.shuttingDown || session.sealed || this.#disposal !== undefined;
    const record = {
      ...taskRecordFromSnapshot(task),
      // Any other claimant (a read outside a turn, a superseded workflow run) means nobody is to be told.
      reported: claim ? reason === 'claimed' : ended && tornDown && task.reported,
    };
    try {
      // Kept and retried while the store refuses writes; shown to the model meanwhile, it is told. A record
      // nobody was shown is written with deferred durability: what shows it (a delivery, a tool result)
      // syncs it. One the model was shown is synced at once, so it is never told again.
      this.#pending.write(`task:${key}`, () => {
        const shown =
          record.reported || (ended && session.inbox.wasReported({ taskId: task.id, attempt: task.attempt }));
        return upsertAsJson(
          this.store,
          shown ? { ...record, reported: true } : record,
          shown ? IMMEDIATE : DEFERRED,
        );
      });
    } catch (error) {
      this.#logger.warn(`task ${task.id}: persisting its record failed`, {
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }

  /**
   * Whether a task's pid and output file may wait for its next write: its stored record recognises the
   * tree by its tag, and its output file is found beside its status file.
   */
  #factsCanWait(task: TaskSnapshot): boolean {
    const detail = task.detail;
    return (
      this.#limits.processFactsDelayMs > 0 &&
      detail.durable !== true &&
      typeof detail.processTag === 'string' &&
      typeof detail.statusFile === 'string' &&
      (typeof detail.outputFile !== 'string' || outputFileBeside(detail.statusFile) === detail.outputFile)
    );
  }

  #writeFactsLater(key: string, taskId: string): void {
    if (this.#factsWrites.has(key)) return;
    const cancel = this.#clock.schedule(this.#limits.processFactsDelayMs, () => {
      if (this.#factsWrites.get(key) !== cancel) return;
      this.#factsWrites.delete(key);
      let task: TaskSnapshot;
      try {
        task = this.tasks.get(taskId, runtimeCaller);
      } catch {
        return; // Forgotten: its last write carried what there was.
      }
      this.#record(FACTS_DUE, task);
    });
    this.#factsWrites.set(key, cancel);
  }

  #cancelFactsWrite(key: string): void {
    const cancel = this.#factsWrites.get(key);
    if (cancel === undefined) return;
    this.#factsWrites.delete(key);
    cancel();
  }

  /** Arms the residency timer for the first session that may have become idle long enough. */
  #armResidency(): void {
    const idleMs = this.#options.unloadIdleAfterMs;
    if (idleMs === undefined || idleMs === false || this.#disposal !== undefined) return;
    this.#cancelResidency?.();
    this.#cancelResidency = undefined;
    if (this.#sessions.size === 0) return;
    let first = Number.POSITIVE_INFINITY;
    for (const [id, { session }] of this.#sessions) {
      // One already on its way out is not waited for again.
      if (!session.unloading) first = Math.min(first, this.#lastActive.get(id) ?? 0);
    }
    if (first === Number.POSITIVE_INFINITY) return;
    const delay = Math.max(0, first + idleMs - this.#clock.now());
    const cancel = this.#clock.schedule(delay, () => {
      if (this.#cancelResidency !== cancel) return;
      this.#cancelResidency = undefined;
      this.#unloadIdle(idleMs);
    });
    this.#cancelResidency = cancel;
  }

  /**
   * Unloads every session idle for `idleMs`; one that looks idle but may not go (its work still runs,
   * a surface holds a reservation) counts as active now and is looked at again after `idleMs`.
   */
  #unloadIdle(idleMs: number): void {
    const now = this.#clock.now();
    for (const [id, { session }] of this.#sessions) {
      if (session.unloading || now - (this.#lastActive.get(id) ?? now) < idleMs) continue;
      const working = this.tasks
        .list(session.owner)
        .some((task) => task.ownerSessionId === id && !isTerminalStatus(task.status));
      if (!session.idle || working) {
        this.#lastActive.set(id, now);
        continue;
      }
      session.unload().catch((error: unknown) => {
        this.#logger.warn(`session ${id}: unloading it failed`, {
          error: error instanceof Error ? error.message : String(error),
        });
      });
    }
    this.#armResidency();
  }

  /** The store started failing, or works again: each session's next tool result says so, once. */
  #persistenceChanged(failure: StoreFailure | undefined): void {
    if (failure !== undefined) {
      for (const id of this.#sessions.keys()) this.#notes.set(id, failingNote(failure));
      return;
    }
    for (const id of this.#sessions.keys()) {
      if (this.#toldFailing.has(id)) this.#notes.set(id, RECOVERED_NOTE);
      else this.#notes.delete(id);
    }
    this.#toldFailing.clear();
  }

  #takeNote(id: string): string | undefined {
    const note = this.#notes.get(id);
    if (note === undefined) return undefined;
    this.#notes.delete(id);
    if (note === RECOVERED_NOTE) this.#toldFailing.delete(id);
    else this.#toldFailing.add(id);
    return note;
  }

  #ensureOpen(): void {
    if (this.#disposal)
      throw new ErrandError('RUNTIME_DISPOSED', 'caller', 'The session runtime is disposed');
  }

  /** Closes every session (which stops their tasks), then the task service if the runtime created it. */
  dispose(): Promise<void> {
    this.#disposal ??= (async () => {
      this.#cancelResidency?.();
      this.#cancelResidency = undefined;
      await Promise.all(this.listSessions().map((session) => session.close()));
      // A close from inside a session's own turn resolves before that turn unwinds: the runtime keeps
      // holding the session (live, for other runtimes) until it is closed, and deregisters after.
      if (this.#sessions.size === 0) this.#unregister();
      this.#stopRecording();
      for (const cancel of this.#factsWrites.values()) cancel();
      this.#factsWrites.clear();
      if (this.#ownsTasks) await this.tasks.dispose();
      // The last records the sessions' shutdown wrote: one more try if the store was refusing them.
      this.#pending.dispose();
    })();
    return this.#disposal;
  }
}

/**
 * Writes a task's record with its detail as the producer published it. Facts JSON cannot hold as they are
 * (a Date, NaN, a class instance), which the store refuses, are written as their JSON copy instead: what
 * `JSON.stringify` keeps of them.
 */
function upsertAsJson(store: SessionStore, record: TaskRecordInput, options: TransactionOptions): StoredTask {
  try {
    return store.upsertTask(record, options);
  } catch (error) {
    if (!refusedDetail(error)) throw error;
    return store.upsertTask({ ...record, detail: (jsonCopy(record.detail) ?? {}) as JsonObject }, options);
  }
}

function refusedDetail(error: unknown): boolean {
  if (!ErrandError.isInstance(error) || error.code !== 'INVALID_ARGUMENT') return false;
  const field = error.context?.field;
  return typeof field === 'string' && /^detail(?:$|[.[])/.test(field);
}

export function createSessionRuntime(options: SessionRuntimeOptions): SessionRuntime {
  return new SessionRuntime(options);
}

/** The session a caller acts for: an owner's (session equality grants access), none for anyone else. */
function callerSession(caller: Caller): SessionId | undefined {
  if (caller === undefined || isTrustedCaller(caller)) return undefined;
  return caller.sessionId;
}

/** A model that refuses: the factory replaces it before any turn can run. */
const unsetModel: ModelPort = {
  name: 'unset',
  generate: () => Promise.reject(new Error('The session has no model')),
};

/**
 * The diagnosis of a task without a process of its own (a subagent, a workflow run) found running when
 * its session is resumed: it ran inside the runtime that stopped, so it ended with it.
 */
const LOST_ON_RESUME_ERROR =
  'The runtime that ran this task stopped; the task ran inside it, so it ended with it, and its result is unknown.';

function lostCaseOf(task: StoredTask): LostCase | undefined {
  const value = task.detail.lostCase;
  return typeof value === 'string' && (LOST_CASES as readonly string[]).includes(value)
    ? (value as LostCase)
    : undefined;
}

/** The line a tool result carries once the store started refusing writes. */
function failingNote(failure: StoreFailure): string {
  return `[errand: the session store cannot be written (${describeStoreFailure(failure.error)}): task endings are kept in memory and retried; new background work is refused until it can]`;
}

/** The line a tool result carries once the store takes writes again. */
const RECOVERED_NOTE =
  '[errand: the session store can be written again: endings kept meanwhile are recorded and told]';

/**
 * What of a task's detail a viewer or a later runtime reads off its record, so a detail update writes
 * only when it changes: `process` (the pid, start time and output file) may wait for the next write (see
 * `#record`).
 */
interface PersistedFacts {
  readonly eager: string;
  readonly process: string;
}

function viewerFacts(detail: TaskSnapshot['detail']): PersistedFacts {
  return {
    eager: [detail.statusFile, detail.readOffset, detail.processTag, detail.bootId]
      .map(String)
      .join('\u0000'),
    process: [detail.pid, detail.processStartTime, detail.outputFile].map(String).join('\u0000'),
  };
}

/** The reason `#record` is called with when a task's waiting process facts are due. */
const FACTS_DUE = 'process_facts_due';

/** The durability of the records nobody was shown yet (`SessionStore.transaction`). */
const DEFERRED = { durability: 'deferred' } as const;
const IMMEDIATE = { durability: 'immediate' } as const;

/** How much of a recorded task's output file is read for the tail of its notification on resume. */
const RECORDED_TAIL_READ_BYTES = 4096;

/** How many ids of one kind a task service reserves in the store at a time. */
export const TASK_ID_BLOCK_SIZE = 100;

/**
 * Task id blocks reserved in `store` (`TaskServiceOptions.sequenceBlocks`): services of several processes
 * on one data directory never hand out the same id, and a service that ends gives back what it did not
 * use, so the next one continues right after its last id.
 */
export function storeSequenceBlocks(store: SessionStore, blockSize = TASK_ID_BLOCK_SIZE): SequenceBlocks {
  return {
    reserve: (kind, after) => store.reserveTaskSequences(kind, after, blockSize),
    release: (kind, block, lastUsed) => store.releaseTaskSequences(kind, block, lastUsed),
  };
}

/**
 * The highest sequence per kind among stored task ids, read from every record. The runtimes no longer
 * need it: a saved record raises the store's `task_sequences` (migration 10 seeded it from older records).
 */
export function lastSequences(store: SessionStore): Record<string, number> {
  const sequences: Record<string, number> = {};
  for (const task of store.listTasks()) {
    const parsed = parseTaskId(task.id);
    if (parsed && parsed.sequence > (sequences[parsed.kind] ?? 0)) sequences[parsed.kind] = parsed.sequence;
  }
  return sequences;
}
