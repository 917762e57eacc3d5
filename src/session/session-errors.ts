/** The errors a session and its runtime answer their callers with, and how a store failure reads. */
import { describeError, ErrandError } from '../tasks/index.js';

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

/**
 * New background work is refused: the store cannot record the endings of work already running (disk full,
 * read-only, an I/O error), and work started now could end with nobody ever told.
 */
export class PersistenceFailingError extends ErrandError {
  constructor(kind: string, cause: string, pending: number) {
    super(
      'PERSISTENCE_FAILING',
      'system',
      `Background ${kind} work is refused: the session store cannot be written (${cause}); ${pending} write(s) of running work are kept in memory and retried. Start it again once the store can be written, or run it in the foreground.`,
      { context: { kind, cause, pending } },
    );
  }
}

/** What a store failure says to a person or a model: the store's own words, without its call chain. */
export function describeStoreFailure(error: unknown): string {
  if (ErrandError.isInstance(error) && error.code === 'STORE_UNAVAILABLE') {
    const reason = (error.context as { reason?: unknown }).reason;
    const code = (error.context as { sqliteCode?: unknown }).sqliteCode;
    const words: Record<string, string> = {
      disk_full: 'the disk is full',
      read_only: 'it is read-only',
      io_error: 'an I/O error',
      cannot_open: 'its file cannot be opened',
    };
    return `${words[String(reason)] ?? String(reason)}, ${String(code)}`;
  }
  return describeError(error);
}

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
