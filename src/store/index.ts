/**
 * Errand's persistence: sessions, conversation messages, the input ledger, task records, workflow
 * journals, runtime commands, task sequences and schedule definitions behind one `SessionStore` contract, implemented once
 * (`parts/`) over two backends: a SQLite file and maps in this process.
 */
export {
  DATABASE_FILE_MODE,
  DATABASE_FILE_NAME,
  DataDirectoryError,
  DIRECTORY_MODE,
  ensurePrivateDirectory,
  type HomeEnvironment,
  resolveErrandHome,
} from './data-directory.js';
export {
  ScheduleDefinitionInvalidError,
  StoreBusyError,
  StoreClosedError,
  StoreInvalidTransitionError,
  StoreOpenError,
  StoreRecordCorruptError,
  StoreRecordExistsError,
  StoreRecordNotFoundError,
  StoreRecordTooLargeError,
  StoreSchemaMismatchError,
  StoreSchemaTooNewError,
  StoreStaleBranchError,
  StoreUnavailableError,
  type StoreUnavailableReason,
} from './errors.js';
export { type JsonObject, type JsonPrimitive, type JsonValue, jsonCopy } from './json.js';
export { createMemorySessionStore, type MemorySessionStore } from './memory-session-store.js';
export { LATEST_SCHEMA_VERSION, type MigrationOutcome } from './migrations.js';
export { type SessionStoreOptions, STORE_DEFAULTS, STORE_RETENTION_DEFAULTS } from './options.js';
export {
  type DiscardReason,
  LEDGER_ENTRY_KINDS,
  LEDGER_ENTRY_STATES,
  LEDGER_PRIORITIES,
  type LedgerEntry,
  type LedgerEntryKind,
  type LedgerEntryState,
  type LedgerPriority,
  MESSAGE_ROLES,
  MESSAGE_VISIBILITIES,
  type MessageContent,
  type MessageRecord,
  type MessageRole,
  type MessageSource,
  type MessageVisibility,
  RECORD_SCHEMA_VERSION,
  type RecordSchemaVersion,
  RUNTIME_COMMAND_STATES,
  RUNTIME_COMMAND_TYPES,
  type RuntimeCommand,
  type RuntimeCommandState,
  type RuntimeCommandType,
  SESSION_STATES,
  type SessionHolder,
  type SessionRecord,
  type SessionState,
  type StoredSchedule,
  type StoredTask,
  type ToolCallContent,
  type ToolResultContent,
  WORKFLOW_RUN_STATUSES,
  WORKFLOW_STEP_STATES,
  type WorkflowRun,
  type WorkflowRunStatus,
  type WorkflowStep,
  type WorkflowStepState,
} from './records.js';
export { SCHEDULE_TRIGGERS } from './schedule-rules.js';
export type {
  AdmitResult,
  AnswerCommandResult,
  CommandAnswer,
  DeliveryResult,
  DiscardQueuedOptions,
  DiscardResult,
  InputLedger,
  ListLedgerOptions,
  ListMessagesOptions,
  ListQueuedOptions,
  MarkLostOptions,
  MessageLog,
  NewLedgerEntry,
  NewMessage,
  NewRuntimeCommand,
  NewSession,
  NewWorkflowRun,
  NewWorkflowStep,
  PruneOptions,
  PruneResult,
  RecordStepResult,
  RewindResult,
  RunFilter,
  RuntimeCommands,
  ScheduleDefinitions,
  ScheduleInput,
  SessionFilter,
  SessionPatch,
  SessionRecords,
  SessionStore,
  StoreCapabilities,
  StoreDurability,
  SupersedeResult,
  TaskFilter,
  TaskRecordInput,
  TaskRecords,
  TaskSequenceBlock,
  TaskSequences,
  TransactionOptions,
  WorkflowJournal,
  WorkflowRunPatch,
} from './session-store.js';
export {
  resolveDatabaseFile,
  SQLITE_STORE_DEFAULTS,
  type SqliteSessionStoreOptions,
  type SynchronousMode,
} from './sqlite-database.js';
export { openSqliteSessionStore, type SqliteSessionStore } from './sqlite-session-store.js';
export { taskRecordFromSnapshot } from './task-record-from-snapshot.js';
export { taskRecordInput } from './task-record-input.js';
export { taskSnapshotFromRecord } from './task-snapshot-from-record.js';
export { LOST_TASK_ERROR } from './transition-rules.js';
