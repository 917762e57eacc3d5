/**
 * Errand's persistence: sessions, conversation messages, the input ledger, task records, workflow
 * journals, runtime commands and task sequences behind one `SessionStore` contract, implemented once
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
export * from './records.js';
export type * from './session-store.js';
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
