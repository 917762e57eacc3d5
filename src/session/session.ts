/**
 * A session: one conversation with its owner scope, command queue, input ledger and turns. Tasks the
 * session starts are owned by it; their notifications come back through its inbox, exactly once.
 *
 * The session wires its parts behind narrow contexts and keeps only what ties them together (state,
 * events, the public API): `NotificationInbox` (admit, mark told, reserve / commit / release, discard),
 * `SessionLedger` (the store's input ledger), `SessionInput` (inputs and configuration changes),
 * `DrainScheduler` (debounce and retry back-off on the injected clock), `QueueDrain` (the drain loop),
 * `TurnRunner` (one turn at a time) and `SessionShutdown` (the closing steps). See README.md.
 */

import { endingsUnderway } from '../process/index.js';
import type { MessageRecord } from '../store/records.js';
import type { NewMessage, SessionStore, StoreDurability } from '../store/session-store.js';
import {
  type Clock,
  createOwner,
  type Logger,
  type Owner,
  type SessionId,
  type TaskService,
} from '../tasks/index.js';
import {
  type AnyToolDefinition,
  type TaskDigest,
  type ToldTaskEnd,
  taskDigest,
  type UntoldEnding,
} from '../tools/index.js';
import { NOOP_TRACING, type Tracing } from '../tracing/index.js';
import { CommandQueue, type QueuedCommand, type QueuePriority } from './command-queue.js';
import { ConversationView } from './conversation-view.js';
import { DrainScheduler } from './drain-scheduler.js';
import type { ModelPort } from './model-port.js';
import {
  type DeliveredNotification,
  type InboxDrain,
  type InboxOwner,
  type InboxSurface,
  type NotificationAdmission,
  NotificationInbox,
  type NotificationReservation,
  type RestoredNotification,
  type SessionNotification,
  type TakeQueuedNotificationsOptions,
} from './notification-inbox.js';
import { QueueDrain } from './queue-drain.js';
import { SessionBusyError, SessionClosedError } from './session-errors.js';
import type {
  SessionEvent,
  SessionEventListener,
  SessionRunState,
  TurnEndReason,
  TurnOutcome,
} from './session-events.js';
import { type SendOptions, SessionInput } from './session-input.js';
import { SessionLedger } from './session-ledger.js';
import type { ResolvedSessionLimits } from './session-limits.js';
import { type ClosingSession, SessionShutdown } from './session-shutdown.js';
import { type TurnAgent, TurnRunner, type TurnTranscript } from './turn-runner.js';

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
  /** Epoch milliseconds for the records the session writes. */
  readonly now: () => number;
  /** Schedules the idle drain and its retries. */
  readonly clock: Clock;
  /** Builds this session's tools once its owner exists. */
  readonly tools: (session: Session) => readonly AnyToolDefinition[];
  /** Runs when shutdown begins, before the owner's tasks are cancelled (e.g. stop workflow runs). */
  readonly onShutdown?: (session: Session) => Promise<void> | void;
  /** Runs for a person's input before it is delivered; background-task turns skip it. */
  readonly beforeUserPrompt?: (text: string, session: Session) => string | undefined;
  /** Keeps a write the store refused to run again later (see `NotificationInboxContext.recordLater`). */
  readonly recordLater?: (write: () => void, error: unknown) => void;
  /** The line the next tool result carries about the store, once (see `takePersistenceNote`). */
  readonly persistenceNote?: () => string | undefined;
  /** Where the session's turns, model calls, tool calls and deliveries are traced. Default: none. */
  readonly tracing?: Tracing;
}

export class Session {
  readonly id: SessionId;
  readonly parentId: SessionId | undefined;
  readonly owner: Owner;
  readonly tasks: TaskService;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  /** Where this session's notifications wait: the API every surface hands them to the model through. */
  readonly inbox: InboxSurface;
  readonly #inbox: NotificationInbox;
  readonly #store: SessionStore;
  readonly #conversation: ConversationView;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #queue: CommandQueue;
  readonly #ledger: SessionLedger;
  readonly #scheduler: DrainScheduler;
  readonly #turns: TurnRunner;
  readonly #drain: QueueDrain;
  readonly #input: SessionInput;
  readonly #shutdown: SessionShutdown;
  readonly #listeners = new Set<SessionEventListener>();
  #model: ModelPort;
  #systemPrompt: string | undefined;
  #tools: readonly AnyToolDefinition[] = [];
  #branchGeneration: number;
  #state: SessionRunState = 'idle';
  #sealed = false;
  #unloading = false;
  readonly #persistenceNote: (() => string | undefined) | undefined;

  constructor(dependencies: SessionDependencies) {
    this.id = dependencies.id;
    // Every message of this session is written here (its turns, its deliveries, its rewinds).
    this.#conversation = new ConversationView(dependencies.store, this.id, {
      writer: { generation: () => this.#branchGeneration },
    });
    this.parentId = dependencies.parentId;
    this.cwd = dependencies.cwd;
    this.env = dependencies.env;
    this.tasks = dependencies.tasks;
    this.#store = dependencies.store;
    this.#model = dependencies.model;
    this.#systemPrompt = dependencies.systemPrompt;
    this.#logger = dependencies.logger;
    this.#now = dependencies.now;
    this.#branchGeneration = dependencies.branchGeneration;
    const limits = dependencies.limits;
    const tracing = dependencies.tracing ?? NOOP_TRACING;
    const emit = (event: SessionEvent) => this.#emit(event);
    const branch = { branchGeneration: () => this.#branchGeneration };
    const closing = { isClosing: () => this.#shutdown.begun };
    this.#queue = new CommandQueue(limits.maxQueuedCommands);
    this.#ledger = new SessionLedger({ sessionId: this.id, store: this.#store, ...branch, emit });
    this.#scheduler = new DrainScheduler({
      clock: dependencies.clock,
      limits,
      ...closing,
      drain: () => void this.#drain.run(),
      endingsUnderway,
    });
    this.#inbox = new NotificationInbox({
      owner: this.#inboxOwner(),
      queue: this.#queue,
      ledger: this.#ledger,
      drain: this.#inboxDrain(),
      now: this.#now,
      emit,
      ...(dependencies.recordLater ? { recordLater: dependencies.recordLater } : {}),
      tracing,
    });
    this.inbox = this.#inbox;
    this.#turns = new TurnRunner({
      sessionId: this.id,
      logger: this.#logger,
      limits,
      tracing,
      inbox: this.#inbox,
      ledger: this.#ledger,
      agent: this.#turnAgent(dependencies),
      transcript: this.#turnTranscript(),
      status: { emit, setState: (state) => this.#setState(state), ...closing },
    });
    this.#shutdown = new SessionShutdown({
      sessionId: this.id,
      logger: this.#logger,
      queue: this.#queue,
      turn: this.#turns,
      scheduler: this.#scheduler,
      inbox: this.#inbox,
      ledger: this.#ledger,
      session: this.#closingSession(dependencies),
    });
    this.#drain = new QueueDrain({
      queue: this.#queue,
      inbox: this.#inbox,
      turns: this.#turns,
      scheduler: this.#scheduler,
      ...closing,
      isClosed: () => this.#state === 'closed',
    });
    this.#input = new SessionInput({
      sessionId: this.id,
      logger: this.#logger,
      queue: this.#queue,
      ledger: this.#ledger,
      now: this.#now,
      ...closing,
      calledFromOwnTurn: () => this.#turns.calledFromOwnTurn(),
      wake: () => this.#scheduler.schedule(),
      tracing,
    });
    this.owner = createOwner(this.id, branch);
    this.#persistenceNote = dependencies.persistenceNote;
    this.#tools = dependencies.tools(this);
  }

  // ---------------------------------------------------------------- the ports its parts are given

  /** What the inbox reads of this session: its branch, and whether it closes or drains. */
  #inboxOwner(): InboxOwner {
    return {
      sessionId: this.id,
      branchGeneration: () => this.#branchGeneration,
      isClosing: () => this.#shutdown.begun,
      isDraining: () => this.#turns.running || this.#drain.working,
    };
  }

  /** What the inbox tells this session's drain. */
  #inboxDrain(): InboxDrain {
    return {
      wake: () => this.#scheduler.schedule(),
      deliverySucceeded: () => this.#scheduler.noteSuccess(),
      deliveryFailed: () => {
        this.#scheduler.noteFailure();
        // A drain that runs a turn schedules the retry once the turn has ended.
        if (!this.#drain.working) this.#scheduler.retry();
      },
    };
  }

  /** What a turn asks the model with: this session's model, prompt and tools, now. */
  #turnAgent(dependencies: SessionDependencies): TurnAgent {
    return {
      model: () => this.#model,
      system: () => this.#systemPrompt,
      tools: () => this.#tools,
      toolContext: (toolCallId, signal) => ({
        caller: this.owner,
        toolCallId,
        signal,
        cwd: this.cwd,
        env: this.env,
      }),
      beforeUserPrompt: (text) => dependencies.beforeUserPrompt?.(text, this) ?? text,
    };
  }

  /** The conversation a turn reads and writes. */
  #turnTranscript(): TurnTranscript {
    return {
      modelMessages: () => this.#conversation.modelMessages(),
      // The turn loop's writes wait for the disk off the event loop (`durable`), before anything acts on them.
      append: (message) => this.#append(message, 'deferred'),
      appendToolResults: (message, ends) => this.#appendToolResults(message, ends, 'deferred'),
      durable: () => this.#store.whenDurable(),
      persistenceNote: () => this.takePersistenceNote(),
    };
  }

  /** What shutdown ends of this session: its state, its owner's work, its record. */
  #closingSession(dependencies: SessionDependencies): ClosingSession {
    return {
      setState: (state) => this.#setState(state),
      sweep: () => dependencies.onShutdown?.(this),
      disposeOwner: () => this.owner.dispose(),
      // An unloaded session stays active in the store: it is resumed when needed again.
      storeClosed: () => {
        if (!this.#unloading) this.#store.updateSession(this.id, { state: 'closed' });
      },
      closed: () => this.#listeners.clear(),
    };
  }

  /**
   * The line the next tool result carries about the store — that it is failing (endings are kept in
   * memory and retried, new background work is refused), or that it works again — once per change;
   * undefined when there is nothing new to say. The turn loop appends it to tool results; a surface that
   * answers tools itself (the MCP server) does the same.
   */
  takePersistenceNote(): string | undefined {
    return this.#persistenceNote?.();
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
    return this.#shutdown.begun;
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
    this.#inbox.discardWhere(() => true, 'sealed');
  }

  /** Commands waiting in the queue. */
  get queuedCommands(): number {
    return this.#queue.length;
  }

  /** Endings queued for the model and not delivered yet, in queue order (progress notices left out). */
  untoldEndings(): UntoldEnding[] {
    return this.#inbox
      .queuedNotifications()
      .filter((notification) => notification.ending !== false)
      .map((notification) => ({ taskId: notification.taskId, label: notification.label }));
  }

  /**
   * The task digest: this session's live background work (schedules included) and the endings it has not
   * been told, at most `maxBytes` (default 4096; ids only past it). A harness that compacts or summarises
   * the conversation hands it to the model with the summary, so the model does not start its work again.
   * It claims nothing: the endings it lists are still delivered by their notifications.
   */
  taskDigest(options: { readonly maxBytes?: number } = {}): TaskDigest {
    return taskDigest(this.tasks, this.owner, {
      untold: this.untoldEndings(),
      ...(options.maxBytes === undefined ? {} : { maxBytes: options.maxBytes }),
      now: this.#now(),
    });
  }

  /** The live branch of the conversation. */
  messages(): MessageRecord[] {
    return this.#conversation.records();
  }

  on(listener: SessionEventListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  #emit(event: SessionEvent): void {
    // A message event follows the commit that wrote it: the conversation keeps it without a read.
    if (event.type === 'message') this.#conversation.appended(event.message);
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
    if (state === 'idle' || state === 'closed') this.#drain.wakeIdleWaiters();
  }

  /**
   * Appends a message. `deferred` (the turn loop's own writes) commits without waiting for the disk; the
   * loop awaits `store.whenDurable()` before anything acts on what it wrote.
   */
  #append(message: NewMessage, durability?: StoreDurability): MessageRecord {
    const record =
      durability === undefined
        ? this.#store.appendMessage(this.id, message)
        : this.#store.transaction(() => this.#store.appendMessage(this.id, message), { durability });
    this.#emit({ type: 'message', message: record });
    return record;
  }

  /**
   * Appends a step's tool results with the task ends they show (`inbox.markToldWith`): the message, the
   * discarded notifications and the ends marked told are one write, so after a crash the store never says
   * the model saw an end that no stored result shows, nor the other way round.
   */
  #appendToolResults(
    message: NewMessage,
    ends: readonly ToldTaskEnd[],
    durability?: StoreDurability,
  ): MessageRecord {
    if (ends.length === 0) return this.#append(message, durability);
    const record = this.#inbox.markToldWith(
      ends,
      () => this.#store.appendMessage(this.id, message),
      durability,
    );
    this.#emit({ type: 'message', message: record });
    return record;
  }

  // ---------------------------------------------------------------- input (see SessionInput)

  /**
   * Queues a person's input. It is written to the input ledger at once and delivered by its own turn,
   * after whatever is ahead of it. Resolves with that turn's outcome.
   */
  send(text: string, options: SendOptions = {}): Promise<TurnOutcome> {
    return this.#input.send(text, options);
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
    return this.#input.configure(label, apply, priority);
  }

  setModel(model: ModelPort): void {
    this.#model = model;
  }

  setSystemPrompt(prompt: string | undefined): void {
    this.#systemPrompt = prompt;
  }

  // ---------------------------------------------------------------- notifications (see NotificationInbox)

  /**
   * Admits a notification (`inbox.admit`): checks shutdown, the branch generation and the ends the model
   * already read, writes it to the ledger (identical keys are admitted once), and queues it. A
   * wakeup-lane notification starts a turn if the session is idle.
   */
  deliverNotification(notification: SessionNotification): NotificationAdmission {
    return this.inbox.admit(notification);
  }

  /**
   * Puts back the notifications an earlier process left queued in the ledger (`inbox.restore`): a resume.
   * Nothing is written; a wakeup one wakes the session.
   */
  restoreNotifications(notifications: readonly RestoredNotification[]): void {
    this.#inbox.restore(notifications);
  }

  /**
   * Delivers queued notifications outside a model turn (`inbox.take`), for a surface with no model loop
   * of its own: up to `limit` in queue order (quiet ones included, stopping at a configuration barrier),
   * stale ones dropped, the rest committed as delivered in one model-only message with `source`. Each is
   * delivered once, here or by a turn, never both. Nothing while a turn runs or a configuration is being
   * applied (the drain delivers them, in order) or once shutdown began. If the store fails to record the
   * delivery, it throws `NOTIFICATION_DELIVERY_FAILED`: nothing was delivered and the notifications stay
   * queued, in order, for the next call.
   */
  takeQueuedNotifications(options: TakeQueuedNotificationsOptions): DeliveredNotification[] {
    return this.inbox.take(options);
  }

  /**
   * The first half of `takeQueuedNotifications` (`inbox.reserve`), for a surface that learns only later
   * whether what it sent arrived: `commit()` once they were handed over, `release()` if they were not.
   * Shutdown discards what is still reserved (`shutdown`).
   */
  reserveQueuedNotifications(options: TakeQueuedNotificationsOptions): NotificationReservation {
    return this.inbox.reserve(options);
  }

  /**
   * Tells the session that a tool result showed the model how `taskId` ended (`inbox.markTold`): its
   * queued notification is discarded (`result_read`) and one still being formatted is not admitted. The
   * turn loop calls this for every tool result's `taskEnds`; a surface that runs tools outside turns
   * (the MCP server) calls it itself.
   */
  taskEndTold(end: { readonly taskId: string; readonly attempt?: number | undefined }): void {
    this.inbox.markTold(end);
  }

  // ---------------------------------------------------------------- control

  /** Stops the running turn. Background tasks keep running: interrupting a turn is not stopping work. */
  interrupt(reason = 'interrupted'): boolean {
    return this.#turns.interrupt(reason);
  }

  /**
   * Holds idle draining (a "send now" promotion lease): queued notifications wait until every hold is
   * released. Returns the release function.
   */
  holdIdleDrain(): () => void {
    return this.#scheduler.hold();
  }

  /**
   * Rewinds the conversation to after message `toSeq` (0: the start). The branch generation increments:
   * late results of tasks started on the old branch are dropped, at enqueue and again before persisting.
   */
  rewind(toSeq: number): number {
    if (this.#turns.running) throw new SessionBusyError(this.id, 'rewind');
    if (this.#shutdown.begun) throw new SessionClosedError(this.id);
    const result = this.#store.rewind(this.id, toSeq);
    this.#branchGeneration = result.session.branchGeneration;
    this.#inbox.discardWhere(
      (notification) => notification.branchGeneration !== this.#branchGeneration,
      'branch_changed',
    );
    return this.#branchGeneration;
  }

  /** Resolves when no turn runs and nothing that would start one is queued. */
  whenIdle(): Promise<void> {
    return this.#drain.whenIdle();
  }

  // ---------------------------------------------------------------- shutdown (see SessionShutdown)

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
    return this.#shutdown.begin();
  }

  /** True when the caller runs inside this session's own running turn (a tool, or anything it awaits). */
  calledFromOwnTurn(): boolean {
    return this.#turns.calledFromOwnTurn();
  }

  /**
   * True when nothing would be lost by taking the session out of memory: no turn runs or is due, nothing
   * is queued, reserved or held, and it is not closing. (Whether its background work still runs is the
   * task service's to say; the session runtime checks that too before it unloads a session.)
   */
  get idle(): boolean {
    return (
      this.#state === 'idle' &&
      !this.#shutdown.begun &&
      !this.#turns.running &&
      !this.#drain.working &&
      !this.#scheduler.scheduled &&
      !this.#scheduler.held &&
      this.#queue.length === 0 &&
      this.#inbox.reservations === 0
    );
  }

  /** True once `unload()` was called. */
  get unloading(): boolean {
    return this.#unloading;
  }

  /**
   * Takes the session out of memory (the session runtime's residency): the steps of `close()`, but the
   * store keeps it active, so `SessionRuntime.resumeSession` (or `loadSession`) opens it again with its
   * conversation and ledger. This object is closed afterwards; use the reopened one. Idempotent.
   */
  unload(): Promise<void> {
    if (!this.#shutdown.begun) this.#unloading = true;
    return this.#shutdown.begin();
  }

  /**
   * Begins shutdown: from this call on no notification is admitted, then the sweeps of `close()` run.
   * Resolves when the session is closed (from inside the session's own turn: when every step but waiting
   * for that turn ran, see `close()`). Idempotent; `close()` is the same step.
   */
  beginShutdown(): Promise<void> {
    return this.#shutdown.begin();
  }
}

export type { QueuedCommand, SendOptions, TurnEndReason };
