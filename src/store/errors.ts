/**
 * The session store's errors. Each has a stable code; malformed arguments use the contract's
 * `INVALID_ARGUMENT` instead of a store-specific code.
 */
import { describeValue, ErrandError } from '../tasks/index.js';

/** The database was written by a newer Errand; this code does not understand its schema. */
export class StoreSchemaTooNewError extends ErrandError {
  constructor(file: string, databaseVersion: number, supportedVersion: number) {
    super(
      'STORE_SCHEMA_TOO_NEW',
      'system',
      `The session store ${JSON.stringify(file)} has schema version ${databaseVersion}, newer than ${supportedVersion}, the newest this version of Errand understands; upgrade Errand or point ERRAND_HOME elsewhere`,
      { context: { file, databaseVersion, supportedVersion } },
    );
  }
}

/** The applied migrations do not match this code's migration list (a foreign or edited database). */
export class StoreSchemaMismatchError extends ErrandError {
  constructor(file: string, version: number, appliedName: string, expectedName: string) {
    super(
      'STORE_SCHEMA_MISMATCH',
      'system',
      `The session store ${JSON.stringify(file)} applied migration ${version} as ${JSON.stringify(appliedName)}, but this version of Errand knows it as ${JSON.stringify(expectedName)}`,
      { context: { file, version, appliedName, expectedName } },
    );
  }
}

/** The database file could not be opened or prepared (not a database, unreadable, no WAL support). */
export class StoreOpenError extends ErrandError {
  constructor(file: string, reason: string, cause?: unknown) {
    super('STORE_OPEN_FAILED', 'system', `Cannot open the session store ${JSON.stringify(file)}: ${reason}`, {
      cause,
      context: { file },
    });
  }
}

/** Another connection held the write lock for longer than the busy timeout. */
export class StoreBusyError extends ErrandError {
  constructor(operation: string, busyTimeoutMs: number, cause: unknown) {
    super(
      'STORE_BUSY',
      'system',
      `The session store stayed locked by another connection for more than ${busyTimeoutMs} ms during ${operation}`,
      { cause, context: { operation, busyTimeoutMs } },
    );
  }
}

/** Why the store could not be written: what a person has to fix. */
export type StoreUnavailableReason = 'disk_full' | 'read_only' | 'io_error' | 'cannot_open';

const UNAVAILABLE_WORDS: Readonly<Record<StoreUnavailableReason, string>> = {
  disk_full: 'the disk is full',
  read_only: 'the file or its directory is read-only',
  io_error: 'the disk reported an I/O error',
  cannot_open: 'the database file cannot be opened',
};

/**
 * The file system refused a write (disk full, read-only, an I/O error). Nothing of the failed operation
 * was written; what was written before is intact. It may succeed later, once space or access is back.
 */
export class StoreUnavailableError extends ErrandError {
  readonly reason: StoreUnavailableReason;

  constructor(operation: string, reason: StoreUnavailableReason, sqliteCode: string, cause: unknown) {
    super(
      'STORE_UNAVAILABLE',
      'system',
      `The session store cannot be written (${UNAVAILABLE_WORDS[reason]}, ${sqliteCode}) during ${operation}; nothing of it was written`,
      { cause, context: { operation, reason, sqliteCode } },
    );
    this.reason = reason;
  }
}

export class StoreClosedError extends ErrandError {
  constructor(operation: string) {
    super('STORE_CLOSED', 'caller', `Cannot ${operation}: the session store is closed`, {
      context: { operation },
    });
  }
}

/** A text or JSON field is larger than `maxFieldBytes`. */
export class StoreRecordTooLargeError extends ErrandError {
  constructor(field: string, bytes: number, limit: number) {
    super(
      'STORE_RECORD_TOO_LARGE',
      'caller',
      `Expected \`${field}\` to be at most ${limit} bytes (maxFieldBytes), got ${bytes} bytes`,
      { context: { field, value: bytes, bytes, limit } },
    );
  }
}

export interface CorruptLocation {
  readonly table: string;
  readonly key: string;
  readonly column: string;
}

/** A stored row cannot be read back: bad JSON, an unknown enum word, a record from a newer schema. */
export class StoreRecordCorruptError extends ErrandError {
  constructor(location: CorruptLocation, problem: string, cause?: unknown) {
    super(
      'STORE_RECORD_CORRUPT',
      'system',
      `The session store's ${location.table} row ${location.key} has an unreadable \`${location.column}\`: ${problem}`,
      { cause, context: { ...location } },
    );
  }
}

/** The record a call refers to does not exist. */
export class StoreRecordNotFoundError extends ErrandError {
  constructor(record: string, key: string | number) {
    super('STORE_RECORD_NOT_FOUND', 'caller', `No ${record} ${JSON.stringify(key)} in the session store`, {
      context: { record, key },
    });
  }
}

/** Another runtime, still alive, has the session open. */
export class SessionInUseError extends ErrandError {
  constructor(sessionId: string, holder: { readonly runtime: string; readonly pid: number }) {
    super(
      'SESSION_IN_USE',
      'caller',
      `Session ${JSON.stringify(sessionId)} is open in another runtime (process ${holder.pid}); close it there first`,
      { context: { sessionId, holderPid: holder.pid, holderRuntime: holder.runtime } },
    );
  }
}

/** A record with this key already exists (a session or workflow run created twice). */
export class StoreRecordExistsError extends ErrandError {
  constructor(record: string, key: string) {
    super(
      'STORE_RECORD_EXISTS',
      'caller',
      `A ${record} ${JSON.stringify(key)} already exists in the session store`,
      {
        context: { record, key },
      },
    );
  }
}

/** A state change the record's rules forbid (a generation going backwards, a finished run restarting). */
export class StoreInvalidTransitionError extends ErrandError {
  constructor(record: string, key: string, field: string, from: unknown, to: unknown) {
    super(
      'STORE_INVALID_TRANSITION',
      'caller',
      `Cannot change \`${field}\` of ${record} ${JSON.stringify(key)} from ${describeValue(from)} to ${describeValue(to)}`,
      { context: { record, key, field, value: to, from, to } },
    );
  }
}

/** A message was stamped with a branch generation that is no longer the session's current one. */
export class StoreStaleBranchError extends ErrandError {
  constructor(sessionId: string, expected: number, current: number) {
    super(
      'STORE_STALE_BRANCH',
      'caller',
      `Cannot append to session ${JSON.stringify(sessionId)} on branch generation ${expected}: the session moved on to generation ${current}`,
      { context: { sessionId, field: 'branchGeneration', value: expected, expected, current } },
    );
  }
}

/**
 * A schedule definition that cannot be kept or armed: no prompt, not exactly one trigger, or (on a resume)
 * one this runtime's limits refuse. Names the field and the value.
 */
export class ScheduleDefinitionInvalidError extends ErrandError {
  constructor(scheduleId: string, field: string, expected: string, value: unknown) {
    super(
      'SCHEDULE_DEFINITION_INVALID',
      'caller',
      `Schedule ${JSON.stringify(scheduleId)}: expected \`${field}\` to be ${expected}, got ${describeValue(value)}`,
      { context: { scheduleId, field, value, expected } },
    );
  }
}
