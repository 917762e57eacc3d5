/**
 * The session runtime: creates and resumes sessions over one task service and one store, wires each
 * session's delivery policy to its queue, keeps task records in the store, and shuts everything down.
 */

import { randomUUID } from 'node:crypto';
import {
  createDeliveryPolicy,
  DELIVERY_POLICY_DEFAULTS,
  type DeliveryPolicy,
  type DeliveryPolicyOptions,
  formatLostTaskNotification,
  rejectUnknownPolicyOptions,
  type TaskNotification,
} from '../notifications/index.js';
import { createTaskService, type SequenceBlocks } from '../registry/index.js';
import { type JsonObject, jsonCopy } from '../store/json.js';
import type { SessionStore } from '../store/session-store.js';
import { taskRecordFromSnapshot } from '../store/task-record-from-snapshot.js';
import {
  asSessionId,
  type Clock,
  createOwner,
  createTrustedCaller,
  ErrandError,
  InvalidArgumentError,
  isTerminalStatus,
  type Logger,
  parseTaskId,
  type SessionId,
  systemClock,
  type TaskService,
  type TaskSnapshot,
  validateSessionId,
} from '../tasks/index.js';
import { optionKeys, rejectUnknownOptions, validateLoggerOption } from '../tasks/option-keys.js';
import type { AnyToolDefinition } from '../tools/index.js';
import { isTracing, resolveTracing, type Tracing, type TracingSetting } from '../tracing/index.js';
import type { ModelPort } from './model-port.js';
import { Session } from './session.js';
import type { SessionEvent } from './session-events.js';
import { holderFor, isHolderLive, registerLiveRuntime } from './session-holder.js';
import { resolveSessionLimits, type SessionLimits } from './session-options.js';

const runtimeCaller = createTrustedCaller('session-runtime');

export type PolicyOptions = Omit<
  DeliveryPolicyOptions,
  'tasks' | 'owner' | 'enqueue' | 'currentBranchGeneration' | 'isShuttingDown' | 'isSealed' | 'logger' | 'now'
>;

/** Every key of `PolicyOptions`; any other key of `notifications` is rejected with `UNKNOWN_OPTION`. */
export const POLICY_OPTION_KEYS = optionKeys<PolicyOptions>()({
  defaultLane: true,
  lanes: true,
  laneOf: true,
  wakeBudget: true,
  wakeCounting: true,
  maxNotificationBytes: true,
  outputTail: true,
  readOutputTail: true,
  formatters: true,
  notifyModelStops: true,
});

/**
 * Options of `createSessionRuntime`. A key not listed here (or in `limits` or `notifications`) is rejected
 * with `UNKNOWN_OPTION`.
 */
export interface SessionRuntimeOptions {
  readonly store: SessionStore;
  /** The model every session talks to, or a factory per session. */
  readonly model: ModelPort | ((session: Session) => ModelPort);
  /** Default: a new in-process task service whose ids continue after those in the store. */
  readonly tasks?: TaskService;
  /** The tools of a session (producers' tools and the task tools), built once per session. */
  readonly tools?: (session: Session) => readonly AnyToolDefinition[];
  readonly systemPrompt?: string;
  /** Default working directory of sessions. Default `process.cwd()`. */
  readonly cwd?: string;
  /** Default environment of sessions. Default `process.env`. */
  readonly env?: Readonly<Record<string, string>>;
  /** Delivery policy options for every session (lanes, wake budget, output tail, formatters). */
  readonly notifications?: PolicyOptions;
  readonly limits?: SessionLimits;
  /** Runs for a person's input before it is delivered; background-task turns skip it. */
  readonly beforeUserPrompt?: (text: string, session: Session) => string | undefined;
  /** Shutdown sweeps that run before a closing session's tasks are cancelled (e.g. stop workflow runs). */
  readonly onSessionShutdown?: (session: Session) => Promise<void> | void;
  readonly logger?: Logger;
  /** Epoch milliseconds for the records sessions write. Default: the clock's `now`. */
  readonly now?: () => number;
  /** Schedules each session's idle drain and delivery retries. Default: the system clock. */
  readonly clock?: Clock;
  /**
   * Where sessions trace their turns (`invoke_agent`), model calls (`chat`), tool calls (`execute_tool`)
   * and notification deliveries (linked to the tasks' spans), and the default task service its tasks. A
   * `Tracing` (e.g. `openTelemetryTracing({ tracer })`), or false for none. Default: the global
   * OpenTelemetry API when `@opentelemetry/api` is installed, else none.
   */
  readonly tracing?: TracingSetting;
}

/** Every key of `SessionRuntimeOptions`; any other key is rejected with `UNKNOWN_OPTION`. */
export const SESSION_RUNTIME_OPTION_KEYS = optionKeys<SessionRuntimeOptions>()({
  store: true,
  model: true,
  tasks: true,
  tools: true,
  systemPrompt: true,
  cwd: true,
  env: true,
  notifications: true,
  limits: true,
  beforeUserPrompt: true,
  onSessionShutdown: true,
  logger: true,
  now: true,
  clock: true,
  tracing: true,
});

/** Options of `createSession`. A key not listed here is rejected with `UNKNOWN_OPTION`. */
export interface CreateSessionOptions {
  /** The session's id. Default `session-<uuid>`. */
  readonly id?: string;
  /** The session that started this one (a subagent's parent). */
  readonly parentId?: string;
  /** Working directory. Default: the runtime's `cwd`, else `process.cwd()`. */
  readonly cwd?: string;
  /** Environment. Default: the runtime's `env`, else `process.env`. */
  readonly env?: Readonly<Record<string, string>>;
  /** A title for people (dashboards, session lists). Default none. */
  readonly title?: string;
}

const CREATE_SESSION_OPTION_KEYS = optionKeys<CreateSessionOptions>()({
  id: true,
  parentId: true,
  cwd: true,
  env: true,
  title: true,
});

/** Options of `resumeSession`. A key not listed here is rejected with `UNKNOWN_OPTION`. */
export interface ResumeSessionOptions {
  /** Environment of the resumed session. Default: the runtime's `env`, else `process.env`. */
  readonly env?: Readonly<Record<string, string>>;
}

const RESUME_SESSION_OPTION_KEYS = optionKeys<ResumeSessionOptions>()({ env: true });

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

const defaultLogger: Logger = {
  warn(message, context) {
    process.emitWarning(`${message}${context ? ` ${JSON.stringify(context)}` : ''}`, 'ErrandWarning');
  },
};

export class SessionRuntime {
  readonly tasks: TaskService;
  readonly store: SessionStore;
  readonly #options: SessionRuntimeOptions;
  readonly #ownsTasks: boolean;
  readonly #sessions = new Map<string, { session: Session; policy: DeliveryPolicy; detach: () => void }>();
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
  readonly #persisted = new Map<string, string>();
  /** Sessions opened so far: each opening gets its own admission scope (see `#enqueue`). */
  #openings = 0;
  #disposal: Promise<void> | undefined;

  constructor(options: SessionRuntimeOptions) {
    // Everything is checked before the runtime attaches to a task service or a session reaches the store.
    validateRuntimeOptions(options);
    this.#options = options;
    this.store = options.store;
    this.#logger = options.logger ?? defaultLogger;
    this.#clock = options.clock ?? systemClock;
    this.#now = options.now ?? (() => this.#clock.now());
    this.#tracing = resolveTracing(options.tracing);
    this.#ownsTasks = options.tasks === undefined;
    this.tasks =
      options.tasks ??
      createTaskService({
        initialSequences: lastSequences(options.store),
        sequenceBlocks: storeSequenceBlocks(options.store),
        ...(options.tracing === undefined ? {} : { tracing: options.tracing }),
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

  createSession(options: CreateSessionOptions = {}): Session {
    this.#ensureOpen();
    rejectUnknownOptions(options, CREATE_SESSION_OPTION_KEYS, { where: 'createSession' });
    const id =
      options.id === undefined ? asSessionId(`session-${randomUUID()}`) : validateSessionId(options.id, 'id');
    if (this.#sessions.has(id)) throw new SessionExistsError(id);
    const parentId =
      options.parentId === undefined ? undefined : validateSessionId(options.parentId, 'parentId');
    validateEnvironment('env', options.env);
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
  resumeSession(id: string, options: ResumeSessionOptions = {}): Session {
    this.#ensureOpen();
    rejectUnknownOptions(options, RESUME_SESSION_OPTION_KEYS, { where: 'resumeSession' });
    const sessionId = validateSessionId(id, 'id');
    validateEnvironment('env', options.env);
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
    const budgetBytes =
      this.#options.notifications?.maxNotificationBytes ?? DELIVERY_POLICY_DEFAULTS.maxNotificationBytes;
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
          // The span of the task that ran before the restart: its delivery links to it.
          ...(task.traceparent === undefined ? {} : { traceparent: task.traceparent }),
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
      limits: resolveSessionLimits(options.limits),
      logger: this.#logger,
      now: this.#now,
      clock: this.#clock,
      tracing: this.#tracing,
      tools: (created) => options.tools?.(created) ?? [],
      ...(options.beforeUserPrompt ? { beforeUserPrompt: options.beforeUserPrompt } : {}),
      onShutdown: async (closing) => {
        await options.onSessionShutdown?.(closing);
      },
    });
    if (modelFactory) session.setModel(modelFactory(session));

    const policy = createDeliveryPolicy({
      // One wake-up per turn that background results start, however many notifications it carries.
      wakeCounting: 'external',
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
      ...(notification.traceparent === undefined ? {} : { traceparent: notification.traceparent }),
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

function validateRuntimeOptions(options: SessionRuntimeOptions): void {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options', 'an object', options);
  }
  rejectUnknownOptions(options, SESSION_RUNTIME_OPTION_KEYS, { where: 'createSessionRuntime' });
  if (typeof options.store !== 'object' || options.store === null) {
    throw new InvalidArgumentError('store', 'a SessionStore', options.store);
  }
  if (typeof options.model !== 'function' && typeof options.model?.generate !== 'function') {
    throw new InvalidArgumentError('model', 'a ModelPort or a factory of one', options.model);
  }
  const tasks = options.tasks as Partial<TaskService> | undefined;
  if (
    tasks !== undefined &&
    (typeof tasks !== 'object' ||
      tasks === null ||
      typeof tasks.attachController !== 'function' ||
      typeof tasks.onTasksChanged !== 'function')
  ) {
    throw new InvalidArgumentError('tasks', 'a TaskService', options.tasks);
  }
  for (const field of ['tools', 'beforeUserPrompt', 'onSessionShutdown', 'now'] as const) {
    if (options[field] !== undefined && typeof options[field] !== 'function') {
      throw new InvalidArgumentError(field, 'a function', options[field]);
    }
  }
  const clock = options.clock as Partial<Clock> | undefined;
  if (clock !== undefined && (typeof clock?.now !== 'function' || typeof clock.schedule !== 'function')) {
    throw new InvalidArgumentError('clock', 'a Clock ({ now, schedule })', options.clock);
  }
  if (options.systemPrompt !== undefined && typeof options.systemPrompt !== 'string') {
    throw new InvalidArgumentError('systemPrompt', 'a string', options.systemPrompt);
  }
  if (options.cwd !== undefined && (typeof options.cwd !== 'string' || options.cwd === '')) {
    throw new InvalidArgumentError('cwd', 'a non-empty path', options.cwd);
  }
  validateEnvironment('env', options.env);
  validateLoggerOption(options.logger);
  if (options.tracing !== undefined && options.tracing !== false && !isTracing(options.tracing)) {
    throw new InvalidArgumentError(
      'tracing',
      'a Tracing (see openTelemetryTracing) or false',
      options.tracing,
    );
  }
  resolveSessionLimits(options.limits);
  validatePolicyOptions(options.notifications);
}

function validateEnvironment(field: string, env: unknown): void {
  if (env !== undefined && (typeof env !== 'object' || env === null || Array.isArray(env))) {
    throw new InvalidArgumentError(field, 'an object of environment variables', env);
  }
}

/** The policy checks its own options; a probe policy over no tasks runs those checks up front. */
function validatePolicyOptions(notifications: PolicyOptions | undefined): void {
  if (notifications === undefined) return;
  if (typeof notifications !== 'object' || notifications === null) {
    throw new InvalidArgumentError('notifications', 'an object of delivery-policy options', notifications);
  }
  // Checked here: the policy itself would accept its own keys (`tasks`, `owner`) that the runtime sets.
  rejectUnknownPolicyOptions(notifications, POLICY_OPTION_KEYS, {
    where: 'createSessionRuntime',
    path: 'notifications',
  });
  const noTasks = { onTaskDone: () => () => {} } as unknown as TaskService;
  createDeliveryPolicy({
    ...notifications,
    tasks: noTasks,
    owner: createOwner('options-check'),
    enqueue: () => {},
  }).dispose();
}

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
