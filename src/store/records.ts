/**
 * The records the session store keeps: sessions, conversation messages, the input ledger, task records and
 * workflow journals. Every record carries the `schemaVersion` it was written with.
 */
import type { SessionId, StopInitiator, TaskFacts, TaskStatus } from '../tasks/index.js';
import type { JsonObject, JsonValue } from './json.js';

/** The version of every record shape this code writes. Rows of a newer version are refused on read. */
export const RECORD_SCHEMA_VERSION = 1;
export type RecordSchemaVersion = typeof RECORD_SCHEMA_VERSION;

export type SessionState = 'active' | 'closed';
export const SESSION_STATES: readonly SessionState[] = ['active', 'closed'];

export interface SessionRecord {
  readonly schemaVersion: RecordSchemaVersion;
  readonly id: SessionId;
  /** The session that started this one (a subagent's parent). It may have been pruned since. */
  readonly parentId: SessionId | undefined;
  readonly cwd: string;
  readonly title: string | undefined;
  /** Incremented by every rewind; late results stamped with an older generation are not delivered. */
  readonly branchGeneration: number;
  readonly state: SessionState;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly metadata: JsonObject;
  /** The runtime that has the session open now, if any (see `SessionStore.acquireSession`). */
  readonly holder: SessionHolder | undefined;
}

/**
 * Who has a session open: a runtime instance in a process. A second runtime may not open the session while
 * its holder lives; a holder whose process died (or whose runtime is gone) is stale and is replaced.
 */
export interface SessionHolder {
  /** The runtime instance: unique per runtime, never reused. */
  readonly runtime: string;
  readonly pid: number;
  /** The process's start time as the OS reports it (Linux: /proc/<pid>/stat field 22), to tell a reused pid. */
  readonly processStart?: string | undefined;
  /** Epoch milliseconds. */
  readonly acquiredAt: number;
}

export type MessageRole = 'system' | 'user' | 'assistant' | 'tool';
export const MESSAGE_ROLES: readonly MessageRole[] = ['system', 'user', 'assistant', 'tool'];

/** `model-only` messages are sent to the model but not shown as the person's own words. */
export type MessageVisibility = 'all' | 'model-only';
export const MESSAGE_VISIBILITIES: readonly MessageVisibility[] = ['all', 'model-only'];

/** Where a message came from. The union stays open for harness-specific sources. */
export type MessageSource =
  | 'user'
  | 'assistant'
  | 'tool'
  | 'system'
  | 'background_task'
  | 'task_notification_steer'
  | (string & {});

export interface ToolCallContent {
  readonly id: string;
  readonly name: string;
  readonly input: JsonValue;
}

export interface ToolResultContent {
  readonly toolCallId: string;
  readonly output: JsonValue;
  readonly isError?: boolean;
}

/** A message body: text and/or tool calls and/or tool results (at least one of them). */
export interface MessageContent {
  readonly text?: string;
  readonly toolCalls?: readonly ToolCallContent[];
  readonly toolResults?: readonly ToolResultContent[];
}

export interface MessageRecord {
  readonly schemaVersion: RecordSchemaVersion;
  readonly sessionId: SessionId;
  /** 1, 2, 3, ... per session, assigned by the store; never reused, not even after a rewind. */
  readonly seq: number;
  readonly role: MessageRole;
  readonly content: MessageContent;
  readonly visibility: MessageVisibility;
  readonly source: MessageSource;
  readonly branchGeneration: number;
  readonly createdAt: number;
  /** True once a rewind cut the message off the live branch; kept for audit. */
  readonly abandoned: boolean;
}

export type LedgerEntryKind = 'notification' | 'user_input';
export const LEDGER_ENTRY_KINDS: readonly LedgerEntryKind[] = ['notification', 'user_input'];

/** `queued` is the only state an entry leaves; `delivered` and `discarded` are final. */
export type LedgerEntryState = 'queued' | 'delivered' | 'discarded';
export const LEDGER_ENTRY_STATES: readonly LedgerEntryState[] = ['queued', 'delivered', 'discarded'];

export type LedgerPriority = 'now' | 'next' | 'later';
/** In queue order: `now` before `next` before `later`. */
export const LEDGER_PRIORITIES: readonly LedgerPriority[] = ['now', 'next', 'later'];

/** Why an entry was discarded. The union stays open; these are the reasons Errand itself uses. */
export type DiscardReason =
  | 'session_resumed'
  | 'branch_changed'
  | 'superseded'
  | 'shutdown'
  | 'sealed'
  // A tool result told the model the ending first. The stored (and event) name of that fact is kept;
  // the word for it is *told* (see the glossary in src/session/README.md).
  | 'result_read'
  | (string & {});

export interface LedgerEntry {
  readonly schemaVersion: RecordSchemaVersion;
  /** Assigned by the store, increasing in admission order (FIFO within a priority). */
  readonly id: number;
  readonly sessionId: SessionId;
  readonly kind: LedgerEntryKind;
  /** Unique per session: admitting the same key twice returns the first entry. */
  readonly idempotencyKey: string;
  readonly state: LedgerEntryState;
  /** Set exactly when the entry is discarded. */
  readonly reason: string | undefined;
  readonly priority: LedgerPriority;
  /** A delivery lane chosen by the notification policy (for example a quiet lane). */
  readonly lane: string | undefined;
  /** For notifications: the task's branch generation. Delivery refuses a stale one. */
  readonly branchGeneration: number;
  readonly taskId: string | undefined;
  readonly text: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** Set exactly when the entry is delivered: the message that carried it. */
  readonly deliveredInMessageSeq: number | undefined;
}

export interface StoredTask {
  readonly schemaVersion: RecordSchemaVersion;
  readonly id: string;
  /** The owning session; absent for an ownerless task. */
  readonly sessionId: SessionId | undefined;
  readonly kind: string;
  readonly label: string;
  readonly status: TaskStatus;
  /**
   * The producer's facts, stored as the JSON the task published: a record written by another version or
   * another producer can hold any value, so read one with `taskFact`.
   */
  readonly detail: TaskFacts;
  readonly isBackgrounded: boolean;
  readonly branchGeneration: number;
  readonly stopInitiator: StopInitiator | undefined;
  readonly startedAt: number;
  readonly endedAt: number | undefined;
  /**
   * The ending was *told* to the model (a delivery or a stored tool result), or is never to be. The stored
   * column keeps its first name, `reported` (see the glossary in src/session/README.md).
   */
  readonly reported: boolean;
  readonly error: string | undefined;
  readonly resultText: string | undefined;
  readonly outputFile: string | undefined;
  /** The task span's W3C traceparent, when the task was traced. */
  readonly traceparent: string | undefined;
  readonly updatedAt: number;
  /** How to recognise the task's process after the fact; absent for tasks without one. */
  readonly process: TaskProcessFacts | undefined;
  /** Where the exit status is written by something that outlives the runtime (durable commands). */
  readonly statusFile: string | undefined;
  /** True for a task that keeps running when its runtime dies and is re-attached on resume. */
  readonly durable: boolean;
  /** Bytes of the task's output the model has read (its `task_output` cursor); 0 before the first read. */
  readonly readOffset: number;
}

/**
 * What identifies a task's process tree once the runtime that started it is gone. A pid alone can name
 * another process by then; the pid with its start time, in the same boot, cannot. A record written
 * before the root's pid was known holds the tree's tag (and boot) only: the tag alone recognises it.
 */
export interface TaskProcessFacts {
  /** The tree's root; undefined until its spawn was answered (then `tag` is set). */
  readonly pid: number | undefined;
  /** The root's start time in clock ticks after boot (`/proc/<pid>/stat` field 22), when known. */
  readonly startTime: number | undefined;
  /** `/proc/sys/kernel/random/boot_id` of the boot the root started in, when known. */
  readonly bootId: string | undefined;
  /** The root's process group (the root leads it in Errand's launches), when known. */
  readonly pgid: number | undefined;
  /** The environment tag every process of the tree carries, `NAME=value`, when it has one. */
  readonly tag: string | undefined;
}

export type WorkflowRunStatus = 'running' | 'completed' | 'failed' | 'killed' | 'superseded';
export const WORKFLOW_RUN_STATUSES: readonly WorkflowRunStatus[] = [
  'running',
  'completed',
  'failed',
  'killed',
  'superseded',
];

export interface WorkflowRun {
  readonly schemaVersion: RecordSchemaVersion;
  readonly runId: string;
  readonly sessionId: SessionId;
  readonly taskId: string;
  readonly scriptPath: string;
  readonly scriptHash: string;
  readonly status: WorkflowRunStatus;
  /** Set exactly when the run is superseded: the run that replaced it. */
  readonly supersededBy: string | undefined;
  readonly stopInitiator: StopInitiator | undefined;
  readonly input: JsonValue;
  readonly result: JsonValue | undefined;
  readonly error: string | undefined;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export type WorkflowStepState = 'done' | 'failed';
export const WORKFLOW_STEP_STATES: readonly WorkflowStepState[] = ['done', 'failed'];

export interface WorkflowStep {
  readonly schemaVersion: RecordSchemaVersion;
  readonly runId: string;
  /** Unique within a run: the key a replayed run looks its result up by. */
  readonly name: string;
  /** 1, 2, 3, ... per run, in the order steps were first recorded. */
  readonly seq: number;
  readonly state: WorkflowStepState;
  readonly result: JsonValue | undefined;
  readonly error: string | undefined;
  readonly startedAt: number;
  readonly endedAt: number;
}

/**
 * What a person may ask the runtime that holds a session to do: stop a background work, or move a running
 * foreground command (or subagent) to the background.
 */
export type RuntimeCommandType = 'cancel_background_work' | 'move_to_background';
export const RUNTIME_COMMAND_TYPES: readonly RuntimeCommandType[] = [
  'cancel_background_work',
  'move_to_background',
];

/**
 * `pending` until the addressed runtime answers (`acknowledged` or `rejected`) or the asker gives up
 * (`expired`); every state but `pending` is final.
 */
export type RuntimeCommandState = 'pending' | 'acknowledged' | 'rejected' | 'expired';
export const RUNTIME_COMMAND_STATES: readonly RuntimeCommandState[] = [
  'pending',
  'acknowledged',
  'rejected',
  'expired',
];

/**
 * A person's command addressed to the runtime that holds a session (a dashboard in another process stops a
 * background work through it). The holder polls for its pending commands and answers each once.
 */
export interface RuntimeCommand {
  readonly schemaVersion: RecordSchemaVersion;
  /** Assigned by the store, increasing in submission order. */
  readonly id: number;
  readonly sessionId: SessionId;
  /** The runtime instance addressed (the session's holder when the command was submitted). */
  readonly runtime: string;
  readonly type: RuntimeCommandType;
  /** The task the command is about. */
  readonly workId: string;
  readonly state: RuntimeCommandState;
  /** Why it was rejected (`not_found`, `not_running`, `cancel_not_supported`, ...); set exactly then. */
  readonly reason: string | undefined;
  readonly createdAt: number;
  /** When it left `pending`. */
  readonly answeredAt: number | undefined;
}

/**
 * A live schedule as the store keeps it (`schedules`, migration 13): its definition as given and where it
 * stands, so a runtime that opens its session again re-arms it with the same id, count and next due time.
 * The row goes when the schedule ends; the ending is its task record's.
 */
export interface StoredSchedule {
  readonly schemaVersion: RecordSchemaVersion;
  readonly sessionId: SessionId;
  /** The schedule's task id (`schedule-N`). */
  readonly id: string;
  /** The definition as it was given (the schedule producer's `ScheduleDefinition`). */
  readonly definition: JsonObject;
  /** Firings that ran (or were skipped by the missed-firing policy). Only grows. */
  readonly fired: number;
  /** When the last firing was due, epoch ms. */
  readonly lastDueAt: number | undefined;
  /** When the next firing is due, epoch ms; undefined for an idle-time schedule. */
  readonly nextAt: number | undefined;
  /**
   * The number of the firing whose automated turn started and has not ended (always `fired + 1`); set
   * before the turn starts, cleared with its outcome. A runtime that died mid-firing leaves it set: the
   * next one tells the model that firing was interrupted and never runs it again.
   */
  readonly firing: number | undefined;
  /** What the model has not been told yet of firings missed or interrupted while no runtime ran it. */
  readonly note: string | undefined;
  readonly createdAt: number;
  readonly updatedAt: number;
}
