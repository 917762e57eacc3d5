/**
 * A session: one conversation with its owner scope, command queue, input ledger and turn loop. Tasks the
 * session starts are owned by it; their notifications come back through its queue, exactly once.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { NotificationLane } from '../notifications/index.js';
import type { LedgerEntry, MessageRecord } from '../store/records.js';
import type { NewMessage, SessionStore } from '../store/session-store.js';
import {
  createOwner,
  ErrandError,
  InvalidArgumentError,
  type Logger,
  type Owner,
  type SessionId,
  type TaskService,
} from '../tasks/index.js';
import type { AnyToolDefinition, ReportedTaskEnd } from '../tools/index.js';
import {
  CommandQueue,
  QUEUE_PRIORITIES,
  type QueuedCommand,
  type QueuedNotification,
  type QueuedUserInput,
  type QueuePriority,
} from './command-queue.js';
import type { ModelPort } from './model-port.js';
import { NOTIFICATION_DELIVERY_FAILED, NotificationDeliveryError } from './notification-delivery-error.js';
import type {
  SessionEvent,
  SessionEventListener,
  SessionRunState,
  TurnEndReason,
  TurnOutcome,
  TurnSource,
} from './session-events.js';
import { SessionLedger } from './session-ledger.js';
import type { ResolvedSessionLimits } from './session-options.js';
import { runTurn, type TurnContext } from './turn-loop.js';

/** A notification ready for the session's queue (formatted and claimed by the delivery policy). */
export interface SessionNotification {
  readonly taskId: string;
  readonly label: string;
  readonly text: string;
  readonly lane?: NotificationLane;
  readonly priority?: QueuePriority;
  /** The task's branch generation; a stale one is dropped. */
  readonly branchGeneration: number;
  /** Defaults to `task:<id>:<attempt>`-style keys from the policy; identical keys are admitted once. */
  readonly idempotencyKey: string;
  /**
   * The task's attempt this notification is about. With it, a notification whose end the model already
   * read (`task_output`, `task_kill`) is not admitted (`result_read`).
   */
  readonly attempt?: number | undefined;
}

export type NotificationAdmission =
  | { readonly admitted: true; readonly ledgerId: number }
  | {
      readonly admitted: false;
      readonly reason: 'shutting_down' | 'branch_changed' | 'duplicate' | 'result_read';
    };

/** A notification a surface delivered outside a model turn (see `Session.takeQueuedNotifications`). */
export interface DeliveredNotification {
  readonly ledgerId: number;
  readonly taskId: string;
  readonly label: string;
  /** The `<task-notification>` text. */
  readonly text: string;
}

/**
 * Notifications a surface took out of the queue to hand over itself, not yet recorded as delivered (see
 * `Session.reserveQueuedNotifications`). Until it is committed or released, no turn and no other surface
 * sees them; they are still `queued` in the ledger.
 */
export interface NotificationReservation {
  /** The reserved notifications, in queue order (stale ones already dropped). */
  readonly notifications: readonly DeliveredNotification[];
  /** `reserved` until `commit` recorded them or `release` (or the session's shutdown) gave them back. */
  readonly state: 'reserved' | 'committed' | 'released';
  /**
   * Records them as delivered: one model-only message with the reservation's `source`, and the ledger
   * entries marked delivered, in one store step. Returns those delivered (an entry delivered or discarded
   * meanwhile is left out). If the store fails it throws `NOTIFICATION_DELIVERY_FAILED` and the
   * reservation stays reserved: commit again, or release. Returns nothing once committed or released.
   */
  commit(): DeliveredNotification[];
  /** Puts them back at the head of the queue, in order, for the next turn or surface. Idempotent. */
  release(): void;
}

export interface TakeQueuedNotificationsOptions {
  /** The `source` of the message that records the delivery, e.g. `mcp_tool_result`. */
  readonly source: string;
  /** The most notifications to take; the rest stay queued in order. Default: all. */
  readonly limit?: number;
}

export interface SendOptions {
  readonly priority?: QueuePriority;
  /** Makes a retried send idempotent. Default: a random key. */
  readonly idempotencyKey?: string;
}

export class SessionBusyError extends ErrandError {
  constructor(sessionId: string, action: string) {
    super('SESSION_BUSY', 'caller', `Cannot ${action} while session ${sessionId} is running a turn`, {
      context: { sessionId, action },
    });
  }
}

export class SessionClosedError extends ErrandError {
  constructor(sessionId: string) {
    super('SESSION_CLOSED', 'caller', `Session ${sessionId} is shutting down or closed`, {
      context: { sessionId },
    });
  }
}

export interface SessionDependencies {
  readonly id: SessionId;
  readonly parentId: SessionId | undefined;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  readonly branchGeneration: number;
  readonly store: SessionStore;
  readonly tasks: TaskService;
  readonly model: ModelPort;
  readonly systemPrompt: string | undefined;
  readonly limits: ResolvedSessionLimits;
  readonly logger: Logger;
  readonly now: () => number;
  /** Builds this session's tools once its owner exists. */
  readonly tools: (session: Session) => readonly AnyToolDefinition[];
  /** Runs when shutdown begins, before the owner's tasks are cancelled (e.g. stop workflow runs). */
  readonly onShutdown?: (session: Session) => Promise<void> | void;
  /** Runs for a person's input before it is delivered; background-task turns skip it. */
  readonly beforeUserPrompt?: (text: string, session: Session) => string | undefined;
}

/**
 * The turns the current code runs inside, innermost first: a turn's model request and tool calls (and
 * whatever they start) run in its frame, so `close()` can tell that it was called from the session's own
 * turn. Frames chain because a tool may run another session's turn (a subagent) inside its own.
 */
interface TurnFrame {
  readonly session: Session;
  readonly turnId: number;
  readonly outer: TurnFrame | undefined;
}

const turnFrames = new AsyncLocalStorage<TurnFrame>();

/**
 * How many task ends read by the model a session remembers, to refuse their notifications that were
 * still being formatted. That window is a few milliseconds; the bound only caps memory.
 */
const MAX_REPORTED_ENDS = 256;

export class Session {
  readonly id: SessionId;
  readonly parentId: SessionId | undefined;
  readonly owner: Owner;
  readonly tasks: TaskService;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  readonly #store: SessionStore;
  readonly #limits: ResolvedSessionLimits;
  readonly #logger: Logger;
  /** Task id → the highest attempt whose end a tool result showed the model (oldest first). */
  readonly #reportedEnds = new Map<string, number>();
  readonly #now: () => number;
  readonly #queue: CommandQueue;
  readonly #ledger: SessionLedger;
  readonly #listeners = new Set<SessionEventListener>();
  readonly #onShutdown: SessionDependencies['onShutdown'];
  readonly #beforeUserPrompt: SessionDependencies['beforeUserPrompt'];
  #model: ModelPort;
  #systemPrompt: string | undefined;
  #tools: readonly AnyToolDefinition[] = [];
  #branchGeneration: number;
  #state: SessionRunState = 'idle';
  #turn:
    | { readonly id: number; readonly controller: AbortController; readonly ended: Promise<void> }
    | undefined;
  #turnCount = 0;
  #drainScheduled = false;
  /** True while a drain applies a configuration or runs a turn: only one drain works the queue at a time. */
  #draining = false;
  #drainTimer: NodeJS.Timeout | undefined;
  #drainWindowStart = 0;
  #drainHolds = 0;
  /** Deliveries in a row that the store failed to record; sets the delay of the next retry. */
  #deliveryFailures = 0;
  #sealed = false;
  #closing: Promise<void> | undefined;
  /** Resolves once every shutdown step ran except waiting for the turn (what a close from the turn gets). */
  #closingSteps: Promise<void> | undefined;
  /** Notifications a surface holds between reserving and committing or releasing them. */
  readonly #reservations = new Set<Reserved>();
  #idleWaiters: Array<() => void> = [];

  constructor(dependencies: SessionDependencies) {
    this.id = dependencies.id;
    this.parentId = dependencies.parentId;
    this.cwd = dependencies.cwd;
    this.env = dependencies.env;
    this.tasks = dependencies.tasks;
    this.#store = dependencies.store;
    this.#model = dependencies.model;
    this.#systemPrompt = dependencies.systemPrompt;
    this.#limits = dependencies.limits;
    this.#logger = dependencies.logger;
    this.#now = dependencies.now;
    this.#branchGeneration = dependencies.branchGeneration;
    this.#onShutdown = dependencies.onShutdown;
    this.#beforeUserPrompt = dependencies.beforeUserPrompt;
    this.#queue = new CommandQueue(dependencies.limits.maxQueuedCommands);
    this.#ledger = new SessionLedger({
      sessionId: this.id,
      store: this.#store,
      branchGeneration: () => this.#branchGeneration,
      emit: (event) => this.#emit(event),
    });
    this.owner = createOwner(this.id, { branchGeneration: () => this.#branchGeneration });
    this.#tools = dependencies.tools(this);
  }

  get state(): SessionRunState {
    return this.#state;
  }

  get branchGeneration(): number {
    return this.#branchGeneration;
  }

  get model(): ModelPort {
    return this.#model;
  }

  get tools(): readonly AnyToolDefinition[] {
    return this.#tools;
  }

  /** True once shutdown began: notifications are no longer admitted. */
  get shuttingDown(): boolean {
    return this.#closing !== undefined;
  }

  /** A sealed session (a finished subagent run) admits no more background notifications. */
  get sealed(): boolean {
    return this.#sealed;
  }

  /**
   * Seals the session: no more background notifications are admitted, and those still queued are
   * discarded (`sealed`) — a finished run starts no turn for them, even one already scheduled.
   */
  seal(): void {
    if (this.#sealed) return;
    this.#sealed = true;
    const queued = this.#queue.remove((command) => command.kind === 'notification') as QueuedNotification[];
    if (queued.length === 0) return;
    this.#ledger.discard(queued, 'sealed');
    for (const notification of queued) {
      this.#emit({ type: 'notification-discarded', taskId: notification.taskId, reason: 'sealed' });
    }
  }

  /** Commands waiting in the queue. */
  get queuedCommands(): number {
    return this.#queue.length;
  }

  /** The live branch of the conversation. */
  messages(): MessageRecord[] {
    return this.#store.listMessages(this.id);
  }

  on(listener: SessionEventListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  #emit(event: SessionEvent): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(event);
      } catch (error) {
        this.#logger.warn(`session ${this.id}: an event listener failed`, {
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }
  }

  #setState(state: SessionRunState): void {
    if (this.#state === state) return;
    this.#state = state;
    this.#emit({ type: 'state', state });
    if (state === 'idle' || state === 'closed') this.#wakeIdleWaiters();
  }

  // ---------------------------------------------------------------- input

  /**
   * Queues a person's input. It is written to the input ledger at once and delivered by its own turn,
   * after whatever is ahead of it. Resolves with that turn's outcome.
   */
  send(text: string, options: SendOptions = {}): Promise<TurnOutcome> {
    if (typeof text !== 'string' || text.trim() === '') {
      return Promise.reject(new InvalidArgumentError('text', 'a non-empty string', text));
    }
    if (this.#closing) return Promise.reject(new SessionClosedError(this.id));
    let priority: QueuePriority;
    let entry: LedgerEntry | undefined;
    try {
      // A bad option (the store checks the key) or a failing store rejects; send() never throws.
      priority = validatePriority(options?.priority);
      entry = this.#ledger.admitInput(text, priority, options?.idempotencyKey ?? `user:${randomUUID()}`);
    } catch (error) {
      return Promise.reject(error);
    }
    if (entry === undefined) {
      return Promise.reject(
        new InvalidArgumentError(
          'idempotencyKey',
          'a key not used before in this session',
          options?.idempotencyKey,
        ),
      );
    }
    const ledgerId = entry.id;
    return new Promise<TurnOutcome>((resolve, reject) => {
      const command: QueuedUserInput = {
        kind: 'user_input',
        priority,
        ledgerId,
        text,
        queuedAt: this.#now(),
        settle: (outcome, error) => (error === undefined ? resolve(outcome as TurnOutcome) : reject(error)),
      };
      try {
        this.#queue.push(command);
      } catch (error) {
        this.#ledger.discardEntries([ledgerId], 'queue_full');
        reject(error);
        return;
      }
      this.#scheduleDrain();
    });
  }

  /**
   * Queues a configuration change (a model switch, a new system prompt). It is a barrier: notifications
   * queued after it wait until it is applied between turns, in order. Resolves once applied — except when
   * called from inside this session's own running turn (a tool): it cannot apply before that turn ends,
   * so it resolves once queued, and an apply that fails is logged.
   */
  configure(
    label: string,
    apply: () => void | Promise<void>,
    priority: QueuePriority = 'next',
  ): Promise<void> {
    if (typeof label !== 'string' || label.trim() === '') {
      return Promise.reject(new InvalidArgumentError('label', 'a non-empty string', label));
    }
    if (typeof apply !== 'function') {
      return Promise.reject(new InvalidArgumentError('apply', 'a function', apply));
    }
    if (this.#closing) return Promise.reject(new SessionClosedError(this.id));
    // From inside this session's own turn (a tool switching the model), waiting for the apply would wait
    // for the turn that waits for the tool: the promise then says the change is queued, and an apply
    // that fails later is logged.
    const fromOwnTurn = this.#calledFromOwnTurn();
    return new Promise((resolve, reject) => {
      this.#queue.push({
        kind: 'configure',
        priority: validatePriority(priority),
        label,
        apply,
        queuedAt: this.#now(),
        settle: fromOwnTurn
          ? (error) => {
              if (error !== undefined && !(error instanceof SessionClosedError)) {
                this.#logger.warn(`session ${this.id}: configuration "${label}" failed to apply`, {
                  error: error instanceof Error ? error.message : String(error),
                });
              }
            }
          : (error) => (error === undefined ? resolve() : reject(error)),
      });
      if (fromOwnTurn) resolve();
      this.#scheduleDrain();
    });
  }

  setModel(model: ModelPort): void {
    this.#model = model;
  }

  setSystemPrompt(prompt: string | undefined): void {
    this.#systemPrompt = prompt;
  }

  /**
   * Admits a notification: checks shutdown and the branch generation, writes it to the ledger (identical
   * keys are admitted once), and queues it. A wakeup-lane notification starts a turn if the session is idle.
   */
  deliverNotification(notification: SessionNotification): NotificationAdmission {
    if (this.#closing) return { admitted: false, reason: 'shutting_down' };
    if (notification.branchGeneration !== this.#branchGeneration) {
      this.#emit({ type: 'notification-discarded', taskId: notification.taskId, reason: 'branch_changed' });
      return { admitted: false, reason: 'branch_changed' };
    }
    if (this.#wasReported(notification.taskId, notification.attempt)) {
      this.#emit({ type: 'notification-discarded', taskId: notification.taskId, reason: 'result_read' });
      return { admitted: false, reason: 'result_read' };
    }
    const lane = notification.lane ?? 'wakeup';
    const priority = validatePriority(notification.priority);
    const entry = this.#ledger.admitNotification({
      taskId: notification.taskId,
      text: notification.text,
      lane,
      priority,
      branchGeneration: notification.branchGeneration,
      idempotencyKey: notification.idempotencyKey,
    });
    if (entry === undefined) return { admitted: false, reason: 'duplicate' };
    try {
      this.#queue.push({
        kind: 'notification',
        priority,
        ledgerId: entry.id,
        taskId: notification.taskId,
        label: notification.label,
        text: notification.text,
        lane,
        branchGeneration: notification.branchGeneration,
        attempt: notification.attempt,
        queuedAt: this.#now(),
      });
    } catch (error) {
      this.#ledger.discardEntries([entry.id], 'queue_full');
      throw error;
    }
    this.#emit({ type: 'notification-queued', taskId: notification.taskId, lane });
    if (lane === 'wakeup') this.#scheduleDrain();
    return { admitted: true, ledgerId: entry.id };
  }

  /**
   * Delivers queued notifications outside a model turn, for a surface with no model loop of its own (the
   * MCP server appends them to its next tool result; its runtime keeps them quiet so no idle turn takes
   * them first). Takes up to `limit` notifications in queue order (quiet ones included, stopping at a
   * configuration barrier), drops stale ones, and commits the rest to the ledger as delivered in one
   * model-only message with `source`: each is delivered once, here or by a turn, never both. Returns
   * what was delivered, in queue order; nothing while a turn runs or a configuration is being applied
   * (the drain delivers them, in order) or once shutdown began. If the store fails to record the delivery,
   * it throws `NOTIFICATION_DELIVERY_FAILED`: nothing was delivered and the notifications stay queued,
   * in order, for the next call.
   */
  takeQueuedNotifications(options: TakeQueuedNotificationsOptions): DeliveredNotification[] {
    const reservation = this.reserveQueuedNotifications(options);
    try {
      return reservation.commit();
    } catch (error) {
      reservation.release();
      if (ErrandError.hasCode(error, NOTIFICATION_DELIVERY_FAILED)) {
        this.#deliveryFailures += 1;
        this.#scheduleDrainRetry();
      }
      throw error;
    }
  }

  /**
   * The first half of `takeQueuedNotifications`, for a surface that learns only later whether what it
   * sent arrived (the MCP server hands a tool result to its transport after this call): takes the same
   * notifications out of the queue, drops stale ones, and returns them reserved. `commit()` once they were
   * handed over records them as delivered; `release()` if they were not puts them back at the head of the
   * queue, so they are delivered once, later. Reserves nothing while a turn runs, a configuration is
   * being applied, or once shutdown began; shutdown discards what is still reserved (`shutdown`).
   */
  reserveQueuedNotifications(options: TakeQueuedNotificationsOptions): NotificationReservation {
    if (typeof options?.source !== 'string' || options.source === '') {
      throw new InvalidArgumentError('source', 'a non-empty string', options?.source);
    }
    const limit = options.limit ?? Number.POSITIVE_INFINITY;
    if (limit !== Number.POSITIVE_INFINITY && (!Number.isSafeInteger(limit) || limit < 1)) {
      throw new InvalidArgumentError('limit', 'a positive integer', options.limit);
    }
    // While a drain works (a turn, or a configuration being applied) the drain delivers them, in order.
    if (this.#turn || this.#draining || this.#closing) return this.#reserve([], options.source);
    const taken = this.#queue.takeNotificationsBeforeBarrier('later', limit);
    let fresh: QueuedNotification[];
    try {
      fresh = this.#ledger.dropStale(taken);
    } catch (error) {
      this.#queue.requeue(taken);
      throw new NotificationDeliveryError(this.id, taken, error);
    }
    return this.#reserve(fresh, options.source);
  }

  #reserve(notifications: QueuedNotification[], source: string): NotificationReservation {
    let pending = notifications;
    let state: NotificationReservation['state'] = notifications.length === 0 ? 'committed' : 'reserved';
    const reservation: Reserved = {
      get state() {
        return state;
      },
      notifications: notifications.map(toDelivered),
      pending: () => (state === 'reserved' ? pending : []),
      drop: () => {
        state = 'released';
        this.#reservations.delete(reservation);
      },
      commit: () => {
        if (state !== 'reserved') return [];
        let delivered: QueuedNotification[];
        try {
          delivered = this.#ledger.deliverBatch(pending, source);
        } catch (error) {
          // Recorded in part (a conflict moved some out of the way) or not at all: the rest stay reserved.
          if (error instanceof NotificationDeliveryError) pending = [...error.undelivered];
          throw error;
        }
        state = 'committed';
        this.#reservations.delete(reservation);
        this.#deliveryFailures = 0;
        return delivered.map(toDelivered);
      },
      release: () => {
        if (state !== 'reserved') return;
        state = 'released';
        this.#reservations.delete(reservation);
        this.#queue.requeue(pending);
        this.#scheduleDrain();
      },
    };
    if (state === 'reserved') this.#reservations.add(reservation);
    return reservation;
  }

  // ---------------------------------------------------------------- control

  /** Stops the running turn. Background tasks keep running: interrupting a turn is not stopping work. */
  interrupt(reason = 'interrupted'): boolean {
    if (!this.#turn) return false;
    this.#turn.controller.abort(new Error(reason));
    return true;
  }

  /**
   * Holds idle draining (a "send now" promotion lease): queued notifications wait until every hold is
   * released. Returns the release function.
   */
  holdIdleDrain(): () => void {
    this.#drainHolds += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#drainHolds -= 1;
      this.#scheduleDrain();
    };
  }

  /**
   * Tells the session that a tool result showed the model how `taskId` ended (attempt `attempt`, when
   * known). Its queued notification is withdrawn (discarded as `result_read`), and one still being
   * formatted is not admitted: the model read it once already. The turn loop calls this for every tool
   * result; a surface that runs tools outside turns (the MCP server) calls it itself.
   */
  taskEndReported(end: { readonly taskId: string; readonly attempt?: number | undefined }): void {
    this.#taskEndReported({ taskId: end.taskId, attempt: end.attempt });
  }

  #taskEndReported(end: ReportedTaskEnd): void {
    if (end.attempt !== undefined) {
      const known = this.#reportedEnds.get(end.taskId);
      this.#reportedEnds.delete(end.taskId);
      this.#reportedEnds.set(end.taskId, Math.max(known ?? 0, end.attempt));
      if (this.#reportedEnds.size > MAX_REPORTED_ENDS) {
        const oldest = this.#reportedEnds.keys().next().value;
        if (oldest !== undefined) this.#reportedEnds.delete(oldest);
      }
    }
    const withdrawn = this.#queue.remove(
      (command) =>
        command.kind === 'notification' &&
        command.taskId === end.taskId &&
        (end.attempt === undefined || command.attempt === undefined || command.attempt <= end.attempt),
    ) as QueuedNotification[];
    if (withdrawn.length === 0) return;
    this.#ledger.discard(withdrawn, 'result_read');
    for (const notification of withdrawn) {
      this.#emit({ type: 'notification-discarded', taskId: notification.taskId, reason: 'result_read' });
    }
  }

  #wasReported(taskId: string, attempt: number | undefined): boolean {
    if (attempt === undefined) return false;
    const reported = this.#reportedEnds.get(taskId);
    return reported !== undefined && attempt <= reported;
  }

  /**
   * Rewinds the conversation to after message `toSeq` (0: the start). The branch generation increments:
   * late results of tasks started on the old branch are dropped, at enqueue and again before persisting.
   */
  rewind(toSeq: number): number {
    if (this.#turn) throw new SessionBusyError(this.id, 'rewind');
    if (this.#closing) throw new SessionClosedError(this.id);
    const result = this.#store.rewind(this.id, toSeq);
    this.#branchGeneration = result.session.branchGeneration;
    const stale = this.#queue.remove(
      (command) => command.kind === 'notification' && command.branchGeneration !== this.#branchGeneration,
    ) as QueuedNotification[];
    this.#ledger.discard(stale, 'branch_changed');
    return this.#branchGeneration;
  }

  /** Resolves when no turn runs and nothing that would start one is queued. */
  whenIdle(): Promise<void> {
    if (this.#isSettledIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  #isSettledIdle(): boolean {
    if (this.#state === 'closed') return true;
    return (
      this.#turn === undefined &&
      !this.#draining &&
      !this.#drainScheduled &&
      (this.#drainHolds > 0 || !this.#queue.peekWake())
    );
  }

  #wakeIdleWaiters(): void {
    if (!this.#isSettledIdle()) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const wake of waiters) wake();
  }

  // ---------------------------------------------------------------- draining and turns

  /**
   * Debounces the idle drain: it runs once arrivals have been quiet for `idleDrainQuietMs`, and at most
   * `idleDrainMaxDelayMs` after the first, so a burst of completions starts one turn with one message.
   */
  #scheduleDrain(): void {
    if (this.#closing) return;
    const now = performance.now();
    if (this.#drainTimer === undefined) this.#drainWindowStart = now;
    else clearTimeout(this.#drainTimer);
    const { idleDrainQuietMs, idleDrainMaxDelayMs } = this.#limits;
    const delay = Math.min(idleDrainQuietMs, Math.max(0, this.#drainWindowStart + idleDrainMaxDelayMs - now));
    this.#setDrainTimer(delay);
  }

  /**
   * After the store failed to record a delivery: the drain looks at the queue again after
   * `deliveryRetryMs`, doubling with each failure in a row up to `deliveryRetryMaxMs`. A new arrival
   * drains sooner, as usual.
   */
  #scheduleDrainRetry(): void {
    if (this.#closing) return;
    const { deliveryRetryMs, deliveryRetryMaxMs } = this.#limits;
    const doublings = Math.min(this.#deliveryFailures - 1, 30);
    const delay = Math.min(deliveryRetryMaxMs, deliveryRetryMs * 2 ** Math.max(0, doublings));
    if (this.#drainTimer !== undefined) clearTimeout(this.#drainTimer);
    this.#drainWindowStart = performance.now() + delay;
    this.#setDrainTimer(delay);
  }

  #setDrainTimer(delay: number): void {
    this.#drainScheduled = true;
    this.#drainTimer = setTimeout(() => {
      this.#drainTimer = undefined;
      this.#drainScheduled = false;
      void this.#drain();
    }, delay);
  }

  async #drain(): Promise<void> {
    // A drain that is applying a configuration looks at the queue again when it is done: a second one
    // would start the next turn before the configuration it must run under.
    if (this.#draining) return;
    this.#draining = true;
    try {
      while (!this.#turn && !this.#closing && this.#drainHolds === 0) {
        const head = this.#queue.peekWake();
        if (!head) break;
        if (head.kind === 'configure') {
          this.#queue.take(head);
          try {
            await head.apply();
            head.settle();
          } catch (error) {
            head.settle(error);
          }
          continue;
        }
        if (head.kind === 'user_input') {
          this.#queue.take(head);
          // Queued notifications (quiet ones included) become context ahead of the person's words.
          const context = this.#queue.takeNotificationsBeforeBarrier();
          if (await this.#startTurn('user', context, head)) {
            // The store failed to record a delivery: the next turn would fail the same way at once.
            this.#scheduleDrainRetry();
            break;
          }
          continue;
        }
        const batch = this.#queue.takeNotificationsBeforeBarrier(head.priority);
        if (await this.#startTurn('background_task', batch, undefined)) {
          this.#scheduleDrainRetry();
          break;
        }
      }
    } finally {
      this.#draining = false;
    }
    this.#wakeIdleWaiters();
  }

  /** Runs one turn; true when it ended because the store failed to record a delivery of notifications. */
  async #startTurn(
    source: TurnSource,
    notifications: QueuedNotification[],
    input: QueuedUserInput | undefined,
  ): Promise<boolean> {
    const turnId = ++this.#turnCount;
    const controller = new AbortController();
    let markEnded!: () => void;
    const ended = new Promise<void>((resolve) => {
      markEnded = resolve;
    });
    this.#turn = { id: turnId, controller, ended };
    this.#setState('running');
    const title = input ? firstLine(input.text) : batchTitle(notifications);
    this.#emit({ type: 'turn-start', turnId, source, title });
    let outcome: TurnOutcome;
    let inputDelivered = false;
    let deliveryFailed = false;
    try {
      const delivered =
        source === 'user'
          ? this.#deliverQueued(() => this.#ledger.deliverEach(notifications, 'task_notification_steer'))
          : this.#deliverQueued(() => this.#ledger.deliverBatch(notifications, 'background_task')).length > 0;
      if (input) {
        this.#deliverUserInput(input);
        inputDelivered = true;
      }
      if (source === 'background_task' && !delivered) {
        // Every notification of the batch was stale or already delivered: nothing to wake the model for.
        outcome = { turnId, reason: 'completed', text: '' };
      } else {
        const frame: TurnFrame = { session: this, turnId, outer: turnFrames.getStore() };
        outcome = await turnFrames.run(frame, () => runTurn(this.#turnContext(turnId, controller.signal)));
      }
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      deliveryFailed = ErrandError.hasCode(error, NOTIFICATION_DELIVERY_FAILED);
      this.#logger.warn(`session ${this.id}: turn ${turnId} failed`, {
        error: message,
        ...(ErrandError.isInstance(error) ? { code: error.code } : {}),
      });
      outcome = { turnId, reason: 'error', text: '', error: message };
      // The input will never be delivered (its turn failed before it): its ledger entry must not stay queued.
      if (input && !inputDelivered) this.#discardUndeliveredInput(input);
    } finally {
      this.#turn = undefined;
      markEnded();
    }
    this.#emit({
      type: 'turn-end',
      turnId,
      reason: outcome.reason,
      text: outcome.text,
      ...(outcome.error ? { error: outcome.error } : {}),
    });
    input?.settle(outcome);
    if (!this.#closing) this.#setState('idle');
    return deliveryFailed;
  }

  #turnContext(turnId: number, signal: AbortSignal): TurnContext {
    return {
      turnId,
      signal,
      model: this.#model,
      system: this.#systemPrompt,
      tools: this.#tools,
      limits: this.#limits,
      messages: () => this.#store.listMessages(this.id),
      append: (message) => this.#append(message),
      injectQueuedNotifications: () => {
        const queued = this.#queue.takeNotificationsBeforeBarrier();
        return this.#deliverQueued(() => this.#ledger.deliverEach(queued, 'task_notification_steer'));
      },
      taskEndReported: (end) => this.#taskEndReported(end),
      toolContext: (toolCallId) => ({
        caller: this.owner,
        toolCallId,
        signal,
        cwd: this.cwd,
        env: this.env,
      }),
      emit: (event) => this.#emit(event),
    };
  }

  #append(message: NewMessage): MessageRecord {
    const record = this.#store.appendMessage(this.id, message);
    this.#emit({ type: 'message', message: record });
    return record;
  }

  #deliverUserInput(input: QueuedUserInput): void {
    const text = this.#beforeUserPrompt?.(input.text, this) ?? input.text;
    this.#ledger.deliverInput(input, text);
  }

  #discardUndeliveredInput(input: QueuedUserInput): void {
    try {
      this.#ledger.discardEntries([input.ledgerId], 'delivery_failed');
    } catch (error) {
      // A resume discards it (`session_resumed`); it is never delivered either way.
      this.#logger.warn(`session ${this.id}: discarding an undelivered input failed`, {
        ledgerId: input.ledgerId,
        error: describeError(error),
      });
    }
  }

  /**
   * Runs one ledger delivery of queued notifications. If the store fails to record it, the notifications
   * it did not deliver go back to the head of the queue, in order, so the queue and the ledger agree: the
   * next turn, idle drain or surface delivers them, once. The error is rethrown for the caller to report.
   */
  #deliverQueued<T>(deliver: () => T): T {
    try {
      const delivered = deliver();
      this.#deliveryFailures = 0;
      return delivered;
    } catch (error) {
      if (error instanceof NotificationDeliveryError) {
        this.#queue.requeue(error.undelivered);
        this.#deliveryFailures += 1;
        // A drain that runs a turn schedules the retry once the turn has ended.
        if (!this.#draining) this.#scheduleDrainRetry();
      }
      throw error;
    }
  }

  // ---------------------------------------------------------------- shutdown

  /**
   * Closes the session: blocks new notifications, interrupts the turn, runs the shutdown sweeps (workflow
   * runs first), cancels every task the session owns and waits for them, discards what is still queued,
   * and marks the session closed once the turn has ended. Idempotent.
   *
   * Called from inside the session's own running turn (a tool's `execute`, or anything it awaits or
   * started), it cannot wait for that turn, which waits for the caller: it begins the same shutdown (the
   * turn's signal aborts with `session closing`) and resolves once every other step has run — tasks
   * cancelled and awaited, the queue discarded. The session reaches `closed` as soon as the turn unwinds;
   * a `close()` from outside the turn resolves only then.
   */
  close(): Promise<void> {
    return this.beginShutdown();
  }

  /**
   * Begins shutdown: from this call on no notification is admitted, then the sweeps of `close()` run.
   * Resolves when the session is closed (from inside the session's own turn: when every step but waiting
   * for that turn ran, see `close()`). Idempotent; `close()` is the same step.
   */
  beginShutdown(): Promise<void> {
    if (this.#closing === undefined) {
      let begin!: () => void;
      const started = new Promise<void>((resolve) => {
        begin = resolve;
      });
      let stepsDone!: () => void;
      this.#closingSteps = new Promise<void>((resolve) => {
        stepsDone = resolve;
      });
      // Set before any sweep runs, so whatever the sweeps trigger already sees a closing session.
      this.#closing = started.then(() => this.#closeNow(stepsDone));
      begin();
    }
    if (this.#calledFromOwnTurn() && this.#closingSteps) return this.#closingSteps;
    return this.#closing;
  }

  /** True when the caller runs inside this session's turn that is still running. */
  #calledFromOwnTurn(): boolean {
    const turn = this.#turn;
    if (turn === undefined) return false;
    for (let frame = turnFrames.getStore(); frame; frame = frame.outer) {
      if (frame.session === this && frame.turnId === turn.id) return true;
    }
    return false;
  }

  async #closeNow(stepsDone: () => void): Promise<void> {
    try {
      await this.#runShutdownSteps();
    } finally {
      stepsDone();
    }
    // The interrupted turn may still be finishing a model request or a tool call that ignores the abort.
    while (this.#turn) await this.#turn.ended;
    await this.#closeStep('storing it as closed failed', () =>
      this.#store.updateSession(this.id, { state: 'closed' }),
    );
    this.#setState('closed');
    this.#listeners.clear();
  }

  async #runShutdownSteps(): Promise<void> {
    this.#setState('shutting_down');
    if (this.#drainTimer) clearTimeout(this.#drainTimer);
    this.#drainTimer = undefined;
    this.#drainScheduled = false;
    this.interrupt('session closing');
    // Every step is guarded: whatever fails, queued inputs are answered and the session ends closed.
    await this.#closeStep('a shutdown sweep failed', () => this.#onShutdown?.(this));
    await this.#closeStep('disposing its owner failed (a cleanup threw)', () => this.owner.dispose());
    const leftover = this.#queue.remove(() => true);
    const ledgerIds: number[] = [];
    // What a surface still holds reserved is not delivered: a commit after this finds it discarded.
    for (const reservation of [...this.#reservations]) {
      for (const notification of reservation.pending()) ledgerIds.push(notification.ledgerId);
      reservation.drop();
    }
    for (const command of leftover) {
      if (command.kind === 'notification') ledgerIds.push(command.ledgerId);
      if (command.kind === 'user_input') {
        ledgerIds.push(command.ledgerId);
        command.settle(undefined, new SessionClosedError(this.id));
      }
      if (command.kind === 'configure') command.settle(new SessionClosedError(this.id));
    }
    if (ledgerIds.length > 0) {
      await this.#closeStep('discarding its queued entries failed', () =>
        this.#ledger.discardEntries(ledgerIds, 'shutdown'),
      );
    }
  }

  async #closeStep(failure: string, step: () => unknown): Promise<void> {
    try {
      await step();
    } catch (error) {
      this.#logger.warn(`session ${this.id}: ${failure}`, { error: describeError(error) });
    }
  }
}

/** A reservation with the session's own handles on it. */
interface Reserved extends NotificationReservation {
  /** What is still reserved (nothing once committed or released). */
  pending(): readonly QueuedNotification[];
  /** Forgets it without requeueing (shutdown discards its entries). */
  drop(): void;
}

function toDelivered(notification: QueuedNotification): DeliveredNotification {
  return {
    ledgerId: notification.ledgerId,
    taskId: notification.taskId,
    label: notification.label,
    text: notification.text,
  };
}

function describeError(error: unknown): string {
  if (error instanceof AggregateError) {
    return [error.message, ...error.errors.map((inner: unknown) => describeError(inner))].join('; ');
  }
  return error instanceof Error ? error.message : String(error);
}

function validatePriority(priority: QueuePriority | undefined): QueuePriority {
  if (priority === undefined) return 'next';
  if (!QUEUE_PRIORITIES.includes(priority)) {
    throw new InvalidArgumentError('priority', '"now", "next" or "later"', priority);
  }
  return priority;
}

/** First three task labels, then "+N" for the rest. */
export function batchTitle(notifications: readonly { readonly label: string }[]): string {
  const labels = notifications.slice(0, 3).map((notification) => notification.label);
  const rest = notifications.length - labels.length;
  return rest > 0 ? `${labels.join(', ')} +${rest}` : labels.join(', ');
}

function firstLine(text: string): string {
  const line = text.split('\n', 1)[0] ?? '';
  return line.length > 80 ? `${line.slice(0, 77)}...` : line;
}

export type { QueuedCommand, TurnEndReason };
