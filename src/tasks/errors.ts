/**
 * Errand's error classes. Every error carries a stable `code` and context; callers recognise errors by
 * code (or `ErrandError.isInstance`), never by message text or `instanceof` across package copies.
 */

import type { ErrandErrorCode } from './error-codes.js';

const marker = Symbol.for('errand.error');

/** Who is at fault: the caller's input, a producer breaking its contract, or the runtime itself. */
export type ErrorFault = 'caller' | 'producer' | 'system';

export interface ErrorContext {
  readonly taskId?: string;
  readonly field?: string;
  readonly value?: unknown;
  readonly [key: string]: unknown;
}

export interface ErrandErrorOptions {
  readonly cause?: unknown;
  readonly context?: ErrorContext;
}

export class ErrandError extends Error {
  readonly [marker] = true;
  readonly code: ErrandErrorCode;
  readonly fault: ErrorFault;
  readonly context: ErrorContext;

  constructor(code: ErrandErrorCode, fault: ErrorFault, message: string, options: ErrandErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.fault = fault;
    this.context = options.context ?? {};
  }

  /** Unlike instanceof, this works across realms and duplicated package copies. */
  static isInstance(error: unknown): error is ErrandError {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[marker] === true;
  }

  /** Whether `error` is an `ErrandError` with `code` (checked against the closed `ErrandErrorCode`). */
  static hasCode(error: unknown, code: ErrandErrorCode): error is ErrandError {
    return ErrandError.isInstance(error) && error.code === code;
  }
}

/** Renders a value for an error message: `-1 (number)`, `"x" (string)`. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') {
    const shown = value.length > 80 ? `${value.slice(0, 77)}...` : value;
    return `${JSON.stringify(shown)} (string)`;
  }
  if (value === null) return 'null';
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (typeof value === 'object') return 'an object';
  return `${String(value)} (${typeof value})`;
}

/**
 * An error as one line for a warning, a diagnosis or a record: an `ErrandError` with its stable code first
 * (`TASK_NOT_FOUND: No task ...`), another error's code when its message does not already carry it
 * (SQLite's `SQLITE_FULL`), and every error of an `AggregateError` (several cleanups failed).
 */
export function describeError(error: unknown): string {
  if (error instanceof AggregateError) {
    return [describeOneError(error), ...error.errors.map((inner: unknown) => describeError(inner))].join(
      '; ',
    );
  }
  return describeOneError(error);
}

function describeOneError(error: unknown): string {
  if (ErrandError.isInstance(error)) return `${error.code}: ${error.message}`;
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && code !== '' && !error.message.includes(code)
    ? `${error.message} (${code})`
    : error.message;
}

export class TaskNotFoundError extends ErrandError {
  constructor(taskId: string) {
    super('TASK_NOT_FOUND', 'caller', `No task with id ${JSON.stringify(taskId)}`, { context: { taskId } });
  }
}

export class InvalidTaskSpecError extends ErrandError {
  constructor(field: string, expected: string, value: unknown) {
    super(
      'INVALID_TASK_SPEC',
      'caller',
      `Expected \`${field}\` to be ${expected}, got ${describeValue(value)}`,
      {
        context: { field, value },
      },
    );
  }
}

export class InvalidArgumentError extends ErrandError {
  constructor(field: string, expected: string, value: unknown, context: ErrorContext = {}) {
    super(
      'INVALID_ARGUMENT',
      'caller',
      `Expected \`${field}\` to be ${expected}, got ${describeValue(value)}`,
      {
        context: { ...context, field, value },
      },
    );
  }
}

export class InvalidTimeoutError extends ErrandError {
  constructor(field: string, value: unknown, maximum: number) {
    super(
      'INVALID_TIMEOUT',
      'caller',
      `Expected \`${field}\` to be a positive finite number of milliseconds no greater than ${maximum}, got ${describeValue(value)}`,
      { context: { field, value } },
    );
  }
}

export class NoControllerError extends ErrandError {
  /** `sessionId`: the owner no controller serves; absent for ownerless work. */
  constructor(kind: string, sessionId?: string) {
    const whom =
      sessionId === undefined
        ? 'no service-wide task controller is attached (ownerless work needs one)'
        : `no task controller serves session ${JSON.stringify(sessionId)}`;
    super(
      'NO_CONTROLLER',
      'system',
      `Cannot start a ${JSON.stringify(kind)} task: ${whom}, so nothing could collect or stop it`,
      { context: sessionId === undefined ? { kind } : { kind, sessionId } },
    );
  }
}

export class AdmissionLimitError extends ErrandError {
  /**
   * `option` names the limit that was hit (`maxLiveTasksPerOwner`, `maxLiveOwnerlessTasks`,
   * `maxLiveTasks`), so the message says which setting to raise.
   */
  constructor(scope: string, limit: number, option?: string) {
    super(
      'ADMISSION_LIMIT',
      'caller',
      `Cannot start another task: ${scope} already has ${limit} live tasks (the limit${option === undefined ? '' : `, \`${option}\``}); stop or collect one first`,
      { context: { scope, limit, ...(option === undefined ? {} : { option }) } },
    );
  }
}

export class CancelNotSupportedError extends ErrandError {
  constructor(taskId: string, kind: string) {
    super('CANCEL_NOT_SUPPORTED', 'caller', `Task ${taskId} (${kind}) cannot be cancelled`, {
      context: { taskId, kind },
    });
  }
}

export class CancelFailedError extends ErrandError {
  constructor(taskId: string, cause: unknown) {
    super('CANCEL_FAILED', 'producer', `Cancelling task ${taskId} failed; the task keeps running`, {
      cause,
      context: { taskId },
    });
  }
}

export class OwnerDisposedError extends ErrandError {
  constructor(sessionId: string) {
    super('OWNER_DISPOSED', 'caller', `The owner of session ${JSON.stringify(sessionId)} is disposed`, {
      context: { sessionId },
    });
  }
}

export class ServiceDisposedError extends ErrandError {
  constructor() {
    super('SERVICE_DISPOSED', 'caller', 'The task service is disposed');
  }
}

export class WaitAbortedError extends ErrandError {
  constructor(taskId: string, reason: unknown) {
    super('WAIT_ABORTED', 'caller', `Waiting for task ${taskId} was aborted`, {
      cause: reason,
      context: { taskId },
    });
  }
}

export class TaskNotResumableError extends ErrandError {
  constructor(taskId: string, status: string) {
    super(
      'TASK_NOT_RESUMABLE',
      'caller',
      `Task ${taskId} is ${status}; only a finished task can be resumed`,
      {
        context: { taskId, status },
      },
    );
  }
}

export class ProducerContractError extends ErrandError {
  constructor(message: string, options: ErrandErrorOptions = {}) {
    super('PRODUCER_CONTRACT', 'producer', message, options);
  }
}

export class TaskNotRunningError extends ErrandError {
  constructor(taskId: string, status: string) {
    super('TASK_NOT_RUNNING', 'caller', `Task ${taskId} is ${status}, not running`, {
      context: { taskId, status },
    });
  }
}

export class MessagesNotSupportedError extends ErrandError {
  constructor(taskId: string, kind: string) {
    super('MESSAGES_NOT_SUPPORTED', 'caller', `Task ${taskId} (${kind}) does not accept messages`, {
      context: { taskId, kind },
    });
  }
}

/** Why a cursor no longer reads: closed by its holder, idle too long, or its task is gone or restarted. */
export type CursorCloseReason = 'closed' | 'expired' | 'task_forgotten' | 'task_resumed' | 'service_disposed';

const CURSOR_CLOSE_REASONS: Record<CursorCloseReason, string> = {
  closed: 'it was closed',
  expired: 'it was idle longer than `cursorIdleMs`',
  task_forgotten: 'its task was forgotten',
  task_resumed: 'its task was re-registered (resumed): its output starts over',
  service_disposed: 'the task service was disposed',
};

export class CursorClosedError extends ErrandError {
  constructor(cursorId: string, taskId: string, reason: CursorCloseReason) {
    super(
      'CURSOR_CLOSED',
      'caller',
      `Output cursor ${cursorId} of task ${taskId} is closed: ${CURSOR_CLOSE_REASONS[reason]}; open a new one`,
      { context: { cursorId, taskId, reason } },
    );
  }
}

export class CursorLimitError extends ErrandError {
  /** `scope`: `task bash-3` or `the task service`; `option`: the limit's option name. */
  constructor(taskId: string, scope: string, limit: number, option: string) {
    super(
      'CURSOR_LIMIT',
      'caller',
      `Cannot open another output cursor on task ${taskId}: ${scope} already has ${limit} open cursors (\`${option}\`); close one first`,
      { context: { taskId, scope, limit, option } },
    );
  }
}

/**
 * An options object carries a key its options type does not have: a typo or an old name, which would
 * otherwise silently do nothing. The message names the key and suggests the closest known one, or lists them.
 */
export class UnknownOptionError extends ErrandError {
  constructor(
    where: string,
    key: string,
    value: unknown,
    known: readonly string[],
    suggestion: string | undefined,
    others: readonly string[] = [],
  ) {
    const quote = (name: string) => `\`${name}\``;
    const hint =
      suggestion === undefined
        ? known.length === 0
          ? '; it takes no options'
          : `; known options: ${known.map(quote).join(', ')}`
        : ` (did you mean ${quote(suggestion)}?)`;
    const more = others.length === 0 ? '' : `; also unknown: ${others.map(quote).join(', ')}`;
    super('UNKNOWN_OPTION', 'caller', `Unknown option ${quote(key)} for ${where}${hint}${more}`, {
      context: { field: key, value, where, suggestion, known, others },
    });
  }
}
