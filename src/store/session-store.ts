/**
 * The SessionStore contract: what the session runtime and the workflow engine persist, in eight parts
 * (sessions, messages, input ledger, task records, workflow journal, runtime commands, task sequences,
 * schedule definitions)
 * plus bounds and capabilities. Every provider (SQLite, in-memory, later durable ones) passes the same
 * conformance suite (`conformance/`).
 *
 * Synchronous on purpose: every change is one guarded, atomic step, and better-sqlite3 runs it without
 * yielding, so no other caller can interleave between the guard and the write. A promise-returning
 * signature would make every caller await and reopen those interleavings for no gain today; a remote
 * provider can sit behind its own async contract that mirrors this one.
 */
import type { SessionId, StopInitiator, TaskFacts, TaskStatus } from '../tasks/index.js';
import type { JsonObject, JsonValue } from './json.js';
import type { PruneOptions } from './options.js';
import type {
  DiscardReason,
  LedgerEntry,
  LedgerEntryKind,
  LedgerEntryState,
  LedgerPriority,
  MessageContent,
  MessageRecord,
  MessageRole,
  MessageSource,
  MessageVisibility,
  RuntimeCommand,
  RuntimeCommandType,
  SessionHolder,
  SessionRecord,
  SessionState,
  StoredSchedule,
  StoredTask,
  WorkflowRun,
  WorkflowRunStatus,
  WorkflowStep,
  WorkflowStepState,
} from './records.js';

// ---- sessions -------------------------------------------------------------------------------------

export interface NewSession {
  readonly id: SessionId | string;
  /** Must name an existing session. */
  readonly parentId?: SessionId | string;
  readonly cwd: string;
  readonly title?: string;
  /** Default 0. */
  readonly branchGeneration?: number;
  /** Default `{}`. */
  readonly metadata?: JsonObject;
}

export interface SessionPatch {
  /** `null` removes the title. */
  readonly title?: string | null;
  readonly state?: SessionState;
  /** May only grow: a rewound branch never comes back. */
  readonly branchGeneration?: number;
  /** Replaces the metadata. */
  readonly metadata?: JsonObject;
}

export interface SessionFilter {
  /** Only the direct children of this session. */
  readonly parentId?: SessionId | string;
  readonly state?: SessionState;
}

export interface SessionRecords {
  /** Throws `STORE_RECORD_EXISTS` for a taken id, `STORE_RECORD_NOT_FOUND` for an unknown parent. */
  createSession(input: NewSession): SessionRecord;
  getSession(id: SessionId | string): SessionRecord | undefined;
  /** Oldest first. */
  listSessions(filter?: SessionFilter): SessionRecord[];
  updateSession(id: SessionId | string, patch: SessionPatch): SessionRecord;
  /**
   * Makes `holder` the runtime that has the session open, in one write (two processes racing for one
   * session cannot both win). The current holder is replaced when it is `holder.runtime` itself or when
   * `isLive(current)` says it is gone; otherwise this throws `SESSION_IN_USE` naming it.
   */
  acquireSession(
    id: SessionId | string,
    holder: SessionHolder,
    isLive: (current: SessionHolder) => boolean,
  ): SessionRecord;
  /** Clears the holder if it is still `runtime` (a later holder is left alone). */
  releaseSession(id: SessionId | string, runtime: string): void;
}

// ---- conversation messages ------------------------------------------------------------------------

export interface NewMessage {
  readonly role: MessageRole;
  readonly content: MessageContent;
  /** Default `all`. */
  readonly visibility?: MessageVisibility;
  readonly source: MessageSource;
  /**
   * The branch generation the writer believes is current. If given and the session has moved on, the
   * append fails with `STORE_STALE_BRANCH`. The stored message always carries the session's generation.
   */
  readonly branchGeneration?: number;
}

export interface ListMessagesOptions {
  /** Include messages a rewind abandoned. Default false: the live branch only. */
  readonly includeAbandoned?: boolean;
  /** Only messages with a greater seq. */
  readonly afterSeq?: number;
  /**
   * Only messages with a smaller seq. With `limit`, the newest `limit` of them (still returned oldest
   * first): a viewer pages back from the end with the first seq of the page it holds.
   */
  readonly beforeSeq?: number;
  /** At most this many, from the oldest (from the newest with `beforeSeq`). */
  readonly limit?: number;
}

export interface RewindResult {
  readonly session: SessionRecord;
  /** The messages that left the live branch, oldest first. */
  readonly abandoned: readonly MessageRecord[];
}

export interface MessageLog {
  /** Appends with the next seq and the session's current branch generation. */
  appendMessage(sessionId: SessionId | string, message: NewMessage): MessageRecord;
  /** Oldest first. */
  listMessages(sessionId: SessionId | string, options?: ListMessagesOptions): MessageRecord[];
  /**
   * Abandons every live message after `toSeq` (0 abandons them all) and increments the session's branch
   * generation, in one step. Queued notifications of the old generation can no longer be delivered.
   */
  rewind(sessionId: SessionId | string, toSeq: number): RewindResult;
}

// ---- input ledger ---------------------------------------------------------------------------------

export interface NewLedgerEntry {
  readonly sessionId: SessionId | string;
  readonly kind: LedgerEntryKind;
  readonly idempotencyKey: string;
  /** Default `next`. */
  readonly priority?: LedgerPriority;
  readonly lane?: string;
  /** Default: the session's current generation. For a notification, the task's generation. */
  readonly branchGeneration?: number;
  readonly taskId?: string;
  readonly text: string;
}

export interface AdmitResult {
  readonly entry: LedgerEntry;
  /** False when the idempotency key was already admitted: `entry` is the first admission, unchanged. */
  readonly admitted: boolean;
}

export interface ListLedgerOptions {
  readonly states?: readonly LedgerEntryState[];
}

export interface DiscardResult {
  /** Entries this call moved from queued to discarded. */
  readonly discarded: readonly LedgerEntry[];
  /** Entries that were already delivered or discarded, unchanged. */
  readonly unchanged: readonly LedgerEntry[];
}

export interface DiscardQueuedOptions {
  /** Entries of these tasks stay queued (a durable task still owns them). */
  readonly keepTaskIds?: readonly string[];
}

export type DeliveryResult =
  | {
      readonly ok: true;
      readonly message: MessageRecord;
      /** The entries, now delivered with `message.seq`, in the order given. */
      readonly entries: readonly LedgerEntry[];
    }
  | {
      readonly ok: false;
      /**
       * `LEDGER_ENTRY_NOT_QUEUED`: some entry was already delivered or discarded.
       * `LEDGER_ENTRY_STALE_BRANCH`: some notification belongs to an older branch generation.
       * Nothing was written.
       */
      readonly code: 'LEDGER_ENTRY_NOT_QUEUED' | 'LEDGER_ENTRY_STALE_BRANCH';
      /** The entries that blocked the delivery. */
      readonly conflicts: readonly LedgerEntry[];
    };

export interface InputLedger {
  /** Inserts a queued entry, or returns the existing one if the session already admitted the key. */
  admit(entry: NewLedgerEntry): AdmitResult;
  getLedgerEntry(id: number): LedgerEntry | undefined;
  /** Every entry of the session in admission order, optionally only some states. */
  listLedger(sessionId: SessionId | string, options?: ListLedgerOptions): LedgerEntry[];
  /** Queued entries in queue order: by priority (`now`, `next`, `later`), then admission order. */
  listQueued(sessionId: SessionId | string, options?: ListQueuedOptions): LedgerEntry[];
  /** Discards the entries that are still queued; the others are reported unchanged. */
  markDiscarded(ids: readonly number[], reason: DiscardReason): DiscardResult;
  /** Discards every queued entry of the session (on resume: `session_resumed`). Returns them. */
  discardQueued(
    sessionId: SessionId | string,
    reason: DiscardReason,
    options?: DiscardQueuedOptions,
  ): LedgerEntry[];
  /**
   * In one transaction: appends `message` and marks the entries delivered with its seq — only if every
   * entry is still queued and no notification among them is from an older branch generation. Otherwise
   * nothing is written and the blocking entries are reported. Throws for unknown entries or entries of
   * another session.
   */
  commitDelivery(
    sessionId: SessionId | string,
    ledgerIds: readonly number[],
    message: NewMessage,
  ): DeliveryResult;
}

// ---- task records ---------------------------------------------------------------------------------

/** A task's persisted facts; `taskRecordFromSnapshot` builds one from a registry snapshot. */
export interface TaskRecordInput {
  readonly id: string;
  readonly sessionId?: SessionId | string;
  readonly kind: string;
  readonly label: string;
  readonly status: TaskStatus;
  /** The producer's facts. Default `{}`. Must be JSON. */
  readonly detail?: TaskFacts;
  readonly isBackgrounded: boolean;
  readonly branchGeneration: number;
  readonly stopInitiator?: StopInitiator;
  readonly startedAt: number;
  readonly endedAt?: number;
  readonly reported: boolean;
  readonly error?: string;
  readonly resultText?: string;
  readonly outputFile?: string;
  /** Default: none. */
  readonly process?: TaskProcessInput;
  readonly statusFile?: string;
  /** Default false. */
  readonly durable?: boolean;
  /**
   * The model's read cursor, in bytes. Absent: the stored record's cursor is kept (0 for a new record);
   * a cursor only moves forward (`saveTaskReadOffset`), and a smaller value here is ignored.
   */
  readonly readOffset?: number;
  /** The task span's W3C traceparent, so a later delivery (after a resume too) links to it. */
  readonly traceparent?: string;
}

/** `TaskProcessFacts` as given to the store: a pid or a tag is required. */
export interface TaskProcessInput {
  readonly pid?: number;
  readonly startTime?: number;
  readonly bootId?: string;
  readonly pgid?: number;
  readonly tag?: string;
}

export interface TaskFilter {
  /** A session's tasks; `null` for ownerless tasks; absent for all. */
  readonly sessionId?: SessionId | string | null;
  readonly statuses?: readonly TaskStatus[];
  /** Only records written at or after this time (epoch ms): what changed since an earlier read. */
  readonly updatedSince?: number;
  /** Only records told (`true`) or not yet told (`false`); absent: both. An index finds the untold ones. */
  readonly reported?: boolean;
}

export interface MarkLostOptions {
  /** Only this session's tasks. Absent: every live task in the store, ownerless ones included. */
  readonly sessionId?: SessionId | string;
  /** Tasks that survive a restart (durable tasks being re-attached) stay as they are. */
  readonly keepTaskIds?: readonly string[];
  /** The diagnosis written to `error`. */
  readonly error?: string;
}

export interface TaskRecords {
  /**
   * Inserts or replaces the task's record, keyed by (sessionId, id): task ids are unique per task service,
   * not across restarts, so the same id in another session is another record. `options.durability`
   * (default `immediate`, see `StoreDurability`) is this write's own; inside `transaction` it is the outer
   * call's, as for every nested write (a nested `immediate` makes the whole write immediate).
   */
  upsertTask(record: TaskRecordInput, options?: TransactionOptions): StoredTask;
  getTask(id: string, sessionId?: SessionId | string): StoredTask | undefined;
  /** Oldest start first. */
  listTasks(filter?: TaskFilter): StoredTask[];
  /**
   * How many task records were ever deleted (pruned, or with their session). A reader that keeps the
   * records it read and then reads only what changed (`updatedSince`) reads them all again when this moved.
   */
  taskRecordDeletions(): number;
  /** Marks running and stopping records `lost` (their process is gone) and returns them. */
  markLiveAsLost(options?: MarkLostOptions): StoredTask[];
  /**
   * Marks the finished records of these tasks of the session as told (`reported`): the model saw their
   * endings, or must never be told them. Records that are live, already told or unknown are left as they
   * are. Returns the records it changed.
   */
  markTold(sessionId: SessionId | string, taskIds: readonly string[]): StoredTask[];
  /**
   * Moves the model's read cursor of a task forward to `offset` bytes (a smaller one changes nothing) and
   * returns the record, or undefined when there is none.
   */
  saveTaskReadOffset(
    id: string,
    sessionId: SessionId | string | undefined,
    offset: number,
  ): StoredTask | undefined;
}

// ---- workflow journals ----------------------------------------------------------------------------

export interface NewWorkflowRun {
  readonly runId: string;
  readonly sessionId: SessionId | string;
  readonly taskId: string;
  readonly scriptPath: string;
  readonly scriptHash: string;
  /** Default `null`. */
  readonly input?: JsonValue;
}

export interface WorkflowRunPatch {
  /**
   * `running` again only from `failed` or `killed` (a resumed run keeps its id); `completed` and
   * `superseded` are final. Use `supersedeRun` to supersede.
   */
  readonly status?: Exclude<WorkflowRunStatus, 'superseded'>;
  readonly stopInitiator?: StopInitiator | null;
  readonly result?: JsonValue;
  readonly error?: string | null;
}

export interface RunFilter {
  readonly sessionId?: SessionId | string;
  readonly taskId?: string;
  readonly statuses?: readonly WorkflowRunStatus[];
}

export interface NewWorkflowStep {
  readonly name: string;
  readonly state: WorkflowStepState;
  readonly result?: JsonValue;
  readonly error?: string;
  readonly startedAt: number;
  readonly endedAt: number;
}

export interface RecordStepResult {
  readonly step: WorkflowStep;
  /**
   * False when a `done` step of this name was already recorded: `step` is the stored one, unchanged, and
   * a replayed run must use its result. A `failed` step is replaced by a new attempt (same seq).
   */
  readonly recorded: boolean;
}

export interface SupersedeResult {
  readonly superseded: WorkflowRun;
  readonly replacement: WorkflowRun;
}

export interface WorkflowJournal {
  createRun(input: NewWorkflowRun): WorkflowRun;
  getRun(runId: string): WorkflowRun | undefined;
  /** Oldest first. */
  listRuns(filter?: RunFilter): WorkflowRun[];
  updateRun(runId: string, patch: WorkflowRunPatch): WorkflowRun;
  /** In one step: creates the replacement run and marks the old one superseded by it. */
  supersedeRun(runId: string, replacement: NewWorkflowRun): SupersedeResult;
  recordStep(runId: string, step: NewWorkflowStep): RecordStepResult;
  getStep(runId: string, name: string): WorkflowStep | undefined;
  /** In seq order. */
  getSteps(runId: string): WorkflowStep[];
}

// ---- runtime commands ---------------------------------------------------------------------------

export interface NewRuntimeCommand {
  /** Must name an existing session. */
  readonly sessionId: SessionId | string;
  /** The runtime instance addressed: the session's holder. */
  readonly runtime: string;
  readonly type: RuntimeCommandType;
  /** The task the command is about. */
  readonly workId: string;
}

/** How a command leaves `pending`: the addressed runtime answers, or the asker gives up (`expired`). */
export type CommandAnswer =
  | { readonly state: 'acknowledged' }
  | { readonly state: 'rejected'; readonly reason: string }
  | { readonly state: 'expired' };

export interface AnswerCommandResult {
  /** The command as stored after the call. */
  readonly command: RuntimeCommand;
  /** False when it was already answered: `command` is unchanged (the first answer stands). */
  readonly answered: boolean;
}

export interface RuntimeCommands {
  /** Inserts a pending command. Throws `STORE_RECORD_NOT_FOUND` for an unknown session. */
  submitCommand(input: NewRuntimeCommand): RuntimeCommand;
  getCommand(id: number): RuntimeCommand | undefined;
  /**
   * The pending commands addressed to `runtime`, oldest first, at most `limit` (default 32, at most
   * 1000). Reading does not change them: the runtime answers each with `answerCommand`.
   */
  listPendingCommands(runtime: string, limit?: number): RuntimeCommand[];
  /** Moves a pending command to its answer, once; a later answer leaves the first one standing. */
  answerCommand(id: number, answer: CommandAnswer): AnswerCommandResult;
  /** Expires every pending command created before `createdBefore` (epoch ms) and returns them. */
  expireCommands(createdBefore: number): RuntimeCommand[];
}

// ---- schedule definitions -----------------------------------------------------------------------

/** A live schedule's row as a caller writes it (`saveSchedule`). */
export interface ScheduleInput {
  /** Must name an existing session. */
  readonly sessionId: SessionId | string;
  /** The schedule's task id, `schedule-N`. */
  readonly id: string;
  /** A JSON object with a non-empty `prompt` and exactly one of `at`, `in_ms`, `every_ms`, `cron`, `idle_ms`. */
  readonly definition: JsonObject;
  /** Never below the stored count. */
  readonly fired: number;
  readonly lastDueAt?: number | undefined;
  readonly nextAt?: number | undefined;
  /** Set only as `fired + 1`: the firing whose automated turn starts now. */
  readonly firing?: number | undefined;
  readonly note?: string | undefined;
  /** Default: kept from the stored row, else now. */
  readonly createdAt?: number | undefined;
}

/**
 * Schedule definitions: the live schedules of each session, so a restart resumes them. Written by the
 * schedule producer at the start, before and after each firing; removed when the schedule ends.
 */
export interface ScheduleDefinitions {
  /**
   * Inserts or replaces the schedule's row. `STORE_RECORD_NOT_FOUND` for an unknown session,
   * `SCHEDULE_DEFINITION_INVALID` for a definition without a prompt or with not exactly one trigger,
   * `STORE_INVALID_TRANSITION` when `fired` would go back; `INVALID_ARGUMENT` names any other bad field.
   */
  saveSchedule(input: ScheduleInput, options?: { readonly durability?: StoreDurability }): StoredSchedule;
  getSchedule(sessionId: string, id: string): StoredSchedule | undefined;
  /** Live schedules of one session (every session when `sessionId` is undefined), oldest first. */
  listSchedules(sessionId?: string): StoredSchedule[];
  /** Removes the row; false when there was none. */
  removeSchedule(sessionId: string, id: string): boolean;
}

// ---- task id sequences ----------------------------------------------------------------------------

/** Sequence numbers of one task kind reserved for one task service, both ends included. */
export interface TaskSequenceBlock {
  readonly first: number;
  readonly last: number;
}

/**
 * Task id sequences shared by every task service on this store (processes on one data directory), so
 * no two hand out the same id: each reserves blocks of numbers.
 */
export interface TaskSequences {
  /**
   * Reserves `count` numbers of `kind` above both `after` and every number reserved before, in one write
   * (two processes reserving at once get different blocks).
   */
  reserveTaskSequences(kind: string, after: number, count: number): TaskSequenceBlock;
  /**
   * Gives back the unused end of `block` (after `lastUsed`) if no later block was reserved since, so the
   * next service continues right after the last id used.
   */
  releaseTaskSequences(kind: string, block: TaskSequenceBlock, lastUsed: number): void;
  /** The highest number of `kind` reserved or saved in a task record so far (0 for none); one indexed read. */
  lastTaskSequence(kind: string): number;
}

// ---- bounds ---------------------------------------------------------------------------------------

/** What `prune` removes (declared in `options.ts` with its defaults, `STORE_RETENTION_DEFAULTS`). */
export type { PruneOptions };

export interface PruneResult {
  readonly sessions: number;
  readonly messages: number;
  readonly ledgerEntries: number;
  readonly tasks: number;
  readonly workflowRuns: number;
  readonly commands: number;
  /** Schedule rows whose task record ended or is gone (the producer removes its own row as it ends). */
  readonly schedules: number;
}

// ---- capabilities ---------------------------------------------------------------------------------

/**
 * What a store can do beyond the contract, declared by the store itself so callers ask it instead of
 * testing which class it is. A store built on another (a wrapper, a proxy) declares the inner one's.
 */
export interface StoreCapabilities {
  /**
   * Other processes can open this store and see what this one writes (a SQLite file): they can resume its
   * sessions once their holder is gone and address commands to a runtime (`errand serve`'s Stop), so a
   * runtime on it polls for those commands. False for a store in this process's memory.
   */
  readonly sharedAcrossProcesses: boolean;
  /** What is written outlives this process: a later process can resume the sessions. */
  readonly persistent: boolean;
}

/**
 * When a write is durable. `immediate`: on return it survives a killed process and a power loss. `deferred`:
 * on return it survives a killed process; it survives a power loss once a later `immediate` write commits
 * (the write-ahead log is synced in order, so that sync covers every write before it).
 */
export type StoreDurability = 'immediate' | 'deferred';

export interface ListQueuedOptions {
  /** Only entries admitted after this one (a larger id): what is new since an earlier read. Default 0. */
  readonly afterId?: number;
}

/** How `SessionStore.transaction` commits. */
export interface TransactionOptions {
  readonly durability?: StoreDurability;
}

export interface SessionStore
  extends SessionRecords,
    MessageLog,
    InputLedger,
    TaskRecords,
    WorkflowJournal,
    RuntimeCommands,
    TaskSequences,
    ScheduleDefinitions {
  readonly capabilities: StoreCapabilities;
  /**
   * Runs `body` — calls on this store — as one write: every change it makes is kept, or none is (a throw
   * out of `body`, or a failed commit, undoes them all). A call inside it that throws and is caught undoes
   * only its own changes. `body` is synchronous: it must not wait for anything. Nested calls join the
   * outer write.
   *
   * `durability: 'deferred'` (default `'immediate'`) is for records nobody was shown yet (a task's start or
   * ending record, a notification's admission): on return the write survives a killed process, and it
   * survives a power loss once a later immediate write commits — a delivery, a stored tool result. A
   * store without the distinction (the memory store) treats both alike.
   */
  transaction<T>(body: () => T, options?: TransactionOptions): T;
  /**
   * Resolves once every write committed before the call survives a power loss — deferred ones included —
   * without blocking the event loop meanwhile: on SQLite (`synchronous: 'full'`) one sync of the log in the
   * thread pool, shared by every caller waiting then. Commit with `durability: 'deferred'` and await this
   * before acting on what was written: the same guarantee as an immediate write, the disk's wait off the
   * loop. Resolves at once when nothing is waiting for the disk; rejects with `STORE_CLOSED` once closed.
   */
  whenDurable(): Promise<void>;
  /** Deletes old settled data so the store stays bounded. Active sessions and their live branch stay. */
  prune(options?: PruneOptions): PruneResult;
  /** Releases the store; later calls throw `STORE_CLOSED`. Idempotent. */
  close(): void;
}
