/**
 * The session runtime: sessions over one task service and one store. It wires each part below and keeps
 * the public API; each part has one job and a narrow context (see README.md, "where things live"):
 *
 * - `SessionOpening`: create and resume against the store (holders, residue, reconcile);
 * - `ResidentSessions`: the sessions open in memory, and what a close clears;
 * - `SessionResidency`: unloading idle sessions;
 * - `TaskRecordWriter`: the store's task records in step with the registry;
 * - `PendingStoreWrites` and `PersistenceNotes`: writes the store refused, and what the model hears of it;
 * - `admitPolicyNotification`, `queueUntoldEndings`: notifications into a session, live and on resume;
 * - `RuntimeEvents`: every session's events to the runtime's listeners.
 */

import { randomUUID } from 'node:crypto';
import { createDeliveryPolicy, type DeliveryPolicy } from '../notifications/index.js';
import { memoizedSource, type ProcessSource, procfsSource } from '../process/index.js';
import { createTaskService, type StartGuardRequest } from '../registry/index.js';
import type { SessionStore } from '../store/session-store.js';
import {
  asSessionId,
  createTrustedCaller,
  ErrandError,
  isTerminalStatus,
  type TaskService,
  validateSessionId,
} from '../tasks/index.js';
import type { RecordedTasks } from '../tools/index.js';
import type { ModelPort } from './model-port.js';
import { PendingStoreWrites, type StoreFailure } from './pending-store-writes.js';
import { PersistenceNotes } from './persistence-notes.js';
import { admitPolicyNotification } from './policy-admission.js';
import type { ReconcileContext } from './reconcile.js';
import { storeRecordedTasks } from './recorded-tasks.js';
import { type ResidentSession, ResidentSessions } from './resident-sessions.js';
import { type RuntimeEventListener, RuntimeEvents } from './runtime-events.js';
import { Session } from './session.js';
import {
  describeStoreFailure,
  PersistenceFailingError,
  SessionExistsError,
  SessionNotFoundError,
} from './session-errors.js';
import { registerLiveRuntime } from './session-holder.js';
import { type OpenRequest, SessionOpening } from './session-opening.js';
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
import { SessionResidency } from './session-residency.js';
import { storeSequenceBlocks } from './store-sequence-blocks.js';
import { TaskRecordWriter } from './task-record-writer.js';
import { queueUntoldEndings } from './untold-endings.js';

const runtimeCaller = createTrustedCaller('session-runtime');

export type {
  CreateSessionOptions,
  PolicyOptions,
  ResumeSessionOptions,
  RuntimeEventListener,
  SessionRuntimeOptions,
};

export class SessionRuntime {
  readonly tasks: TaskService;
  readonly store: SessionStore;
  readonly #options: ResolvedSessionRuntimeOptions;
  readonly #ownsTasks: boolean;
  readonly #now: () => number;
  /** Distinguishes this runtime's notifications in the ledger from an earlier one's with the same task ids. */
  readonly #instance = randomUUID().slice(0, 8);
  /** Sessions opened so far: each opening gets its own admission scope (see `#open`). */
  #openings = 0;
  /** Writes the store refused (task records, admissions), retried in order until it takes them. */
  readonly #pending: PendingStoreWrites;
  #toldWrites = 0;
  readonly #residents: ResidentSessions;
  readonly #residency: SessionResidency;
  readonly #notes: PersistenceNotes;
  readonly #records: TaskRecordWriter;
  readonly #opening: SessionOpening;
  readonly #events: RuntimeEvents;
  #processSource: ProcessSource | undefined;
  readonly #stopRecording: () => void;
  readonly #unregister: () => void;
  #disposal: Promise<void> | undefined;

  constructor(options: SessionRuntimeOptions) {
    // Everything is checked before the runtime attaches to a task service or a session reaches the store.
    const resolved = sessionRuntimeOptions.resolve(options);
    this.#options = resolved;
    this.store = resolved.store;
    this.#now = resolved.now ?? (() => resolved.clock.now());
    const limits = resolved.limits;
    this.#events = new RuntimeEvents(this.#options.logger);
    this.#residents = new ResidentSessions({
      releaseHolder: (id) => this.store.releaseSession(id, this.#instance),
      forgotten: (id) => this.#forgotten(id),
      logger: this.#options.logger,
    });
    this.#notes = new PersistenceNotes(() => this.#residents.ids());
    this.#pending = new PendingStoreWrites({
      clock: this.#options.clock,
      retryMs: limits.deliveryRetryMs,
      retryMaxMs: limits.deliveryRetryMaxMs,
      maxPending: limits.maxPendingStoreWrites,
      logger: this.#options.logger,
      changed: (failure) => this.#notes.changed(failure),
    });
    this.#residency = new SessionResidency({
      clock: this.#options.clock,
      idleAfterMs: resolved.unloadIdleAfterMs,
      residents: () => this.#residents.sessions(),
      isWorking: (session) =>
        this.tasks
          .list(session.owner)
          .some((task) => task.ownerSessionId === session.id && !isTerminalStatus(task.status)),
      logger: this.#options.logger,
    });
    this.#ownsTasks = resolved.tasks === undefined;
    this.tasks =
      resolved.tasks ??
      createTaskService({
        // No initialSequences: the store's task_sequences already holds the highest id per kind.
        sequenceBlocks: storeSequenceBlocks(resolved.store),
        tracing: resolved.tracing,
        startGuard: (request) => this.checkStart(request),
      });
    this.#records = new TaskRecordWriter(this.tasks, {
      sessionOf: (id) => {
        const session = this.#residents.get(id)?.session;
        if (session === undefined) return undefined;
        return {
          calledFromOwnTurn: () => session.calledFromOwnTurn(),
          tornDown: () => session.shuttingDown || session.sealed || this.#disposal !== undefined,
          wasTold: (end) => session.inbox.wasTold(end),
        };
      },
      store: this.store,
      pending: this.#pending,
      clock: this.#options.clock,
      processFactsDelayMs: limits.processFactsDelayMs,
      logger: this.#options.logger,
    });
    this.#opening = new SessionOpening({
      store: this.store,
      instanceId: this.#instance,
      now: this.#now,
      reconcile: () => this.#reconcileContext(),
      open: (request) => this.#open(request),
    });
    this.#stopRecording = this.tasks.onTasksChanged(
      (change) => {
        const owner = change.task.ownerSessionId;
        // Any change of a resident session's task counts as activity for residency.
        if (change.reason !== 'removed' && owner !== undefined && this.#residents.has(owner)) {
          this.#residency.touch(owner);
        }
        this.#records.record(change.reason, change.task);
      },
      { caller: runtimeCaller },
    );
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
    return this.#events.on(listener);
  }

  createSession(input: CreateSessionOptions = {}): Session {
    this.#ensureOpen();
    const options = createSessionOptions.resolve(input);
    const id = options.id ?? asSessionId(`session-${randomUUID()}`);
    if (this.#residents.has(id)) throw new SessionExistsError(id);
    return this.#opening.create({
      id,
      parentId: options.parentId,
      cwd: options.cwd ?? this.#options.cwd ?? process.cwd(),
      title: options.title,
      env: options.env,
    }).session;
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
    if (this.#residents.has(sessionId)) throw new SessionExistsError(sessionId);
    const { resident, requeued } = this.#opening.resume(sessionId, options.env);
    // Closed meanwhile (restoring its queue failed it): nothing is told to a session that is gone.
    if (this.#residents.get(sessionId) !== resident) return resident.session;
    queueUntoldEndings(
      {
        store: this.store,
        maxNotificationBytes: this.#options.notifications.maxNotificationBytes,
        logger: this.#options.logger,
      },
      resident,
      requeued,
    );
    return resident.session;
  }

  /**
   * The finished tasks the store remembers for a caller's session that the task service does not hold —
   * an earlier runtime's, after a resume — for `task_output` and `task_list` (`TaskToolsOptions.recorded`).
   * A caller sees only its own session's records.
   */
  readonly recordedTasks: RecordedTasks = storeRecordedTasks({
    getTask: (taskId, sessionId) => this.store.getTask(taskId, sessionId),
    listTasks: (filter) => this.store.listTasks(filter),
    saveTaskReadOffset: (taskId, sessionId, offset) =>
      this.store.saveTaskReadOffset(taskId, sessionId, offset),
  });

  getSession(id: string): Session | undefined {
    return this.#residents.get(id)?.session;
  }

  /**
   * The session, opened here if it is not: the resident one, or — unloaded for being idle
   * (`unloadIdleAfterMs`), or never opened by this runtime — resumed from the store
   * (`resumeSession`), with its conversation and ledger. A session still unloading is waited for.
   */
  async loadSession(id: string, options: ResumeSessionOptions = {}): Promise<Session> {
    const resident = this.getSession(id);
    if (resident !== undefined && !resident.unloading) return resident;
    if (resident !== undefined) await resident.close();
    return this.getSession(id) ?? this.resumeSession(id, options);
  }

  /** How many sessions are open in this process's memory now. */
  get residentSessions(): number {
    return this.#residents.size;
  }

  /**
   * Resolves once no session is open in this runtime. After `dispose()` that is at once — unless it was
   * called from inside a session's own turn, which closes only once that turn unwinds.
   */
  whenAllClosed(): Promise<void> {
    return this.#residents.whenAllClosed();
  }

  /** Sessions open in this runtime. */
  listSessions(): Session[] {
    return this.#residents.sessions();
  }

  /** The delivery policy of an open session (for progress notifications and sealing). */
  policyOf(id: string): DeliveryPolicy | undefined {
    return this.#residents.get(id)?.policy;
  }

  async closeSession(id: string): Promise<void> {
    const entry = this.#residents.get(id);
    if (!entry) throw new SessionNotFoundError(id);
    await entry.session.close();
  }

  /** Closes every session (which stops their tasks), then the task service if the runtime created it. */
  dispose(): Promise<void> {
    this.#disposal ??= (async () => {
      this.#residency.stop();
      await Promise.all(this.listSessions().map((session) => session.close()));
      // A close from inside a session's own turn resolves before that turn unwinds: the runtime keeps
      // holding the session (live, for other runtimes) until it is closed, and deregisters after.
      if (this.#residents.size === 0) this.#unregister();
      this.#stopRecording();
      this.#records.dispose();
      if (this.#ownsTasks) await this.tasks.dispose();
      // The last records the sessions' shutdown wrote: one more try if the store was refusing them.
      this.#pending.dispose();
    })();
    return this.#disposal;
  }

  /**
   * Wires a session whose record this runtime holds: the session, its delivery policy, its events to the
   * runtime's parts and listeners. A session closed and re-opened (resumed) in this runtime starts a new
   * admission scope: the registry forgot its tasks at close, so a task re-registered under an old id (a
   * resumed workflow run) starts again at attempt 1, and its end must not be mistaken for the earlier
   * one's notification.
   */
  #open(request: OpenRequest): ResidentSession {
    const { id } = request;
    const options = this.#options;
    const modelFactory = typeof options.model === 'function' ? options.model : undefined;
    const scope = `${this.#instance}.${++this.#openings}`;
    const session = new Session({
      id,
      parentId: request.parentId,
      cwd: request.cwd,
      env: request.env ?? options.env ?? (process.env as Record<string, string>),
      branchGeneration: request.branchGeneration,
      store: this.store,
      tasks: this.tasks,
      model: modelFactory ? unsetModel : (options.model as ModelPort),
      systemPrompt: options.systemPrompt,
      limits: options.limits,
      logger: this.#options.logger,
      now: this.#now,
      clock: this.#options.clock,
      tracing: this.#options.tracing,
      tools: (created) => options.tools?.(created) ?? [],
      ...(options.beforeUserPrompt ? { beforeUserPrompt: options.beforeUserPrompt } : {}),
      onShutdown: async (closing) => {
        await options.onSessionShutdown?.(closing);
      },
      recordLater: (write, error) =>
        this.#pending.keepRefused(`told:${id}:${++this.#toldWrites}`, write, error),
      persistenceNote: () => this.#notes.take(id),
    });
    if (modelFactory) session.setModel(modelFactory(session));

    const policy = createDeliveryPolicy({
      ...options.notifications,
      tasks: this.#records.policyTasks,
      owner: session.owner,
      currentBranchGeneration: () => session.branchGeneration,
      isShuttingDown: () => session.shuttingDown || this.#disposal !== undefined,
      isSealed: () => session.sealed,
      logger: this.#options.logger,
      now: this.#now,
      enqueue: (notification) =>
        admitPolicyNotification({ store: this.store, pending: this.#pending }, session, scope, notification),
    });
    this.#residency.touch(id);
    const stopForwarding = session.on((event) => {
      this.#residency.touch(id);
      if (event.type === 'turn-start' && event.source === 'user') policy.noteUserInput();
      // A wake-up is spent when background results reach the model in a turn of their own: the message
      // that delivers them. A turn whose batch was all stale, or whose delivery the store refused, spends none.
      if (event.type === 'message' && event.message.source === 'background_task') policy.noteWake();
      this.#events.emit(id, event);
      if (event.type === 'state' && event.state === 'closed') this.#residents.forget(id);
    });
    this.#notes.opened(id, this.#pending.failure);
    const resident: ResidentSession = {
      session,
      policy,
      scope,
      detach: () => {
        stopForwarding();
        policy.dispose();
      },
    };
    this.#residents.add(resident);
    this.#residency.arm();
    return resident;
  }

  /** A closed session is forgotten by every part; the last one of a disposed runtime deregisters it. */
  #forgotten(id: string): void {
    this.#residency.forget(id);
    this.#notes.forget(id);
    if (this.#disposal !== undefined && this.#residents.size === 0) this.#unregister();
  }

  #reconcileContext(): ReconcileContext {
    const options = this.#options.reconcile;
    this.#processSource ??= options.processSource ?? memoizedSource(procfsSource());
    return {
      store: this.store,
      tasks: this.tasks,
      source: this.#processSource,
      clock: this.#options.clock,
      logger: this.#options.logger,
      killGraceMs: options.killGraceMs ?? 2000,
      ...(options.adoptDurable === undefined ? {} : { adoptDurable: options.adoptDurable }),
      ...(options.adoptSchedule === undefined ? {} : { adoptSchedule: options.adoptSchedule }),
    };
  }

  #ensureOpen(): void {
    if (this.#disposal)
      throw new ErrandError('RUNTIME_DISPOSED', 'caller', 'The session runtime is disposed');
  }
}

export function createSessionRuntime(options: SessionRuntimeOptions): SessionRuntime {
  return new SessionRuntime(options);
}

/** A model that refuses: the factory replaces it before any turn can run. */
const unsetModel: ModelPort = {
  name: 'unset',
  generate: () => Promise.reject(new Error('The session has no model')),
};
