/** The errors a session answers its callers with, and how its warnings describe a failure. */
import { ErrandError } from '../tasks/index.js';

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

/** An error's message for a warning; an AggregateError (several cleanups failed) names each one. */
export function describeError(error: unknown): string {
  if (error instanceof AggregateError) {
    return [error.message, ...error.errors.map((inner: unknown) => describeError(inner))].join('; ');
  }
  return error instanceof Error ? error.message : String(error);
}
