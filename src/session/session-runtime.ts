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
import { createTaskService, type SequenceBlocks } from '../registry/index.js';
import { type JsonObject, jsonCopy } from '../store/json.js';
import type { SessionStore } from '../store/session-store.js';
import { taskRecordFromSnapshot } from '../store/task-record-from-snapshot.js';
import {
  asSessionId,
  type Clock,
  createTrustedCaller,
  ErrandError,
  isTerminalStatus,
  type Logger,
  parseTaskId,
  type SessionId,
  type TaskService,
  type TaskSnapshot,
  validateSessionId,
} from '../tasks/index.js';
import type { ModelPort } from './model-port.js';
import { Session } from './session.js';
import type { SessionEvent } from './session-events.js';
import { holderFor, isHolderLive, registerLiveRuntime } from './session-holder.js';
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
  readonly #sessions = new Map<string, { session: Session; policy: DeliveryPolicy; detach: () => void }>();
  readonly #listeners = new Set<RuntimeEventListener>();
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #clock: Clock;
  readonly #stopRecording: () => void;
  /** Distinguishes this runtime's notifications in the ledger from an earlier one's with the same task ids. */
  readonly #instance = randomUUID().slice(0, 8);
  readonly #unregister: () => void;
  readonly #allClosedWaiters: Array<() => void> = [];
  /** Per task (session and id): the viewer facts last persisted, so a detail update writes only when they change. */
  readonly #persisted = new Map<string, string>();
  /** Sessions opened so far: each opening gets its own admission scope (see `#enqueue`). */
  #openings = 0;
  #disposal: Promise<void> | undefined;

  constructor(options: SessionRuntimeOptions) {
    // Everything is checked before the runtime attaches to a task service or a session reaches the store.
    const resolved = sessionRuntimeOptions.resolve(options);
    this.#options = resolved;
    this.store = resolved.store;
    this.#logger = resolved.logger;
    this.#clock = resolved.clock;
    this.#now = resolved.now ?? (() => this.#clock.now());
    this.#ownsTasks = resolved.tasks === undefined;
    this.tasks =
      resolved.tasks ??
      createTaskService({
        initialSequences: lastSequences(resolved.store),
        sequenceBlocks: storeSequenceBlocks(resolved.store),
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
   * Re-opens a stored session after a restart. Its processes died with the old runtime: queued
   * notifications are discarded with `session_resumed` (none is delivered twice) and live task records
   * become `lost`.
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
    this.store.discardQueued(sessionId, 'session_resumed');
    this.store.markLiveAsLost({ sessionId, error: LOST_ON_RESUME_ERROR });
    let session: Session;
    try {
      if (record.state === 'closed') this.store.updateSession(sessionId, { state: 'active' });
      session = this.#open(sessionId, record.parentId, record.cwd, options.env, record.branchGeneration);
    } catch (error) {
      // Not opened here: another runtime may resume it.
      this.#releaseAfterFailedOpen(sessionId);
      throw error;
    }
    this.#tellLost(session);
    return session;
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
   * Queues, quietly (no turn starts for them), one notification per task of the session that was lost
   * with a runtime that stopped, so the model learns with its next request that the work it started is
   * gone: those just marked lost, and those of an earlier resume whose notification never reached the
   * model (the session closed again first). Tasks of an abandoned conversation branch stay untold, as
   * their other notifications would.
   */
  #tellLost(session: Session): void {
    const budgetBytes = this.#options.notifications.maxNotificationBytes;
    const lost = this.store
      .listTasks({ sessionId: session.id, statuses: ['lost'] })
      .filter(
        (task) => task.error === LOST_ON_RESUME_ERROR && task.branchGeneration === session.branchGeneration,
      );
    if (lost.length === 0) return;
    // Earlier "lost" notifications, by task: delivered ones are not told again.
    const earlier = new Map<string, { delivered: boolean; count: number }>();
    for (const entry of this.store.listLedger(session.id)) {
      const match = /^lost:([^:]+):(\d+):\d+$/.exec(entry.idempotencyKey);
      if (match === null) continue;
      const key = `${match[1]}:${match[2]}`;
      const known = earlier.get(key) ?? { delivered: false, count: 0 };
      earlier.set(key, { delivered: known.delivered || entry.state === 'delivered', count: known.count + 1 });
    }
    for (const task of lost) {
      const told = earlier.get(`${task.id}:${task.startedAt}`);
      if (told?.delivered) continue;
      try {
        session.deliverNotification({
          taskId: task.id,
          label: task.label,
          text: formatLostTaskNotification({
            taskId: task.id,
            kind: task.kind,
            label: task.label,
            error: task.error,
            outputFile: task.outputFile,
            budgetBytes,
          }),
          lane: 'quiet',
          branchGeneration: task.branchGeneration,
          idempotencyKey: `lost:${task.id}:${task.startedAt}:${(told?.count ?? 0) + 1}`,
        });
      } catch (error) {
        this.#logger.warn(`task ${task.id}: queueing the notification that it was lost failed`, {
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }
  }

  getSession(id: string): Session | undefined {
    return this.#sessions.get(id)?.session;
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
      limits: options.limits,
      logger: this.#logger,
      now: this.#now,
      clock: this.#clock,
      tools: (created) => options.tools?.(created) ?? [],
      ...(options.beforeUserPrompt ? { beforeUserPrompt: options.beforeUserPrompt } : {}),
      onShutdown: async (closing) => {
        await options.onSessionShutdown?.(closing);
      },
    });
    if (modelFactory) session.setModel(modelFactory(session));

    const policy = createDeliveryPolicy({
      ...options.notifications,
      tasks: this.tasks,
      owner: session.owner,
      currentBranchGeneration: () => session.branchGeneration,
      isShuttingDown: () => session.shuttingDown || this.#disposal !== undefined,
      isSealed: () => session.sealed,
      logger: this.#logger,
      now: this.#now,
      enqueue: (notification) => this.#enqueue(session, scope, notification),
    });
    const stopForwarding = session.on((event) => {
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
    this.#sessions.set(id, {
      session,
      policy,
      detach: () => {
        stopForwarding();
        policy.dispose();
      },
    });
    return session;
  }

  #enqueue(session: Session, scope: string, notification: TaskNotification): void {
    // The notification's own attempt: a resume while it was being formatted must not borrow the new one.
    const attempt = notification.attempt;
    const key =
      notification.event === 'terminal'
        ? `task:${scope}:${notification.taskId}:${attempt}:${notification.startedAt}`
        : `task:${scope}:${notification.taskId}:${attempt}:${notification.startedAt}:${notification.event}:${notification.createdAt}`;
    const admission = session.deliverNotification({
      taskId: notification.taskId,
      label: notification.label,
      text: notification.text,
      lane: notification.lane,
      priority: notification.priority,
      branchGeneration: notification.branchGeneration,
      idempotencyKey: key,
      attempt,
    });
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
   */
  #record(reason: string, task: TaskSnapshot): void {
    if (task.ownerSessionId === undefined) return;
    const key = `${task.ownerSessionId}\u0000${task.id}`;
    if (reason === 'removed') {
      this.#persisted.delete(key);
      return;
    }
    if (!this.#sessions.has(task.ownerSessionId)) return;
    const facts = `${String(task.detail.pid)}\u0000${String(task.detail.outputFile)}`;
    const ended = isTerminalStatus(task.status);
    if (reason === 'updated' && (ended || this.#persisted.get(key) === facts)) return;
    if (ended) this.#persisted.delete(key);
    else this.#persisted.set(key, facts);
    try {
      this.store.upsertTask({
        ...taskRecordFromSnapshot(task),
        detail: (jsonCopy(task.detail) ?? {}) as JsonObject,
      });
    } catch (error) {
      this.#logger.warn(`task ${task.id}: persisting its record failed`, {
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }

  #ensureOpen(): void {
    if (this.#disposal)
      throw new ErrandError('RUNTIME_DISPOSED', 'caller', 'The session runtime is disposed');
  }

  /** Closes every session (which stops their tasks), then the task service if the runtime created it. */
  dispose(): Promise<void> {
    this.#disposal ??= (async () => {
      await Promise.all(this.listSessions().map((session) => session.close()));
      // A close from inside a session's own turn resolves before that turn unwinds: the runtime keeps
      // holding the session (live, for other runtimes) until it is closed, and deregisters after.
      if (this.#sessions.size === 0) this.#unregister();
      this.#stopRecording();
      if (this.#ownsTasks) await this.tasks.dispose();
    })();
    return this.#disposal;
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

/** The diagnosis of a task found running when its session is resumed: its runtime stopped first. */
const LOST_ON_RESUME_ERROR =
  'The runtime that ran this task stopped; its process did not survive the restart.';

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

/** The highest sequence per kind among stored task ids, so new ids never reuse old ones. */
export function lastSequences(store: SessionStore): Record<string, number> {
  const sequences: Record<string, number> = {};
  for (const task of store.listTasks()) {
    const parsed = parseTaskId(task.id);
    if (parsed && parsed.sequence > (sequences[parsed.kind] ?? 0)) sequences[parsed.kind] = parsed.sequence;
  }
  return sequences;
}
