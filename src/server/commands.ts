/**
 * The command endpoint: validates a command and answers with an ACK, or with a fault when nothing was
 * done — never a success for a stop that cancelled nothing or a move that moved nothing.
 *
 * - `cancelBackgroundWork { workId }`: stops one running background work (initiator `user`).
 * - `stopAllBackgroundWork { sessionId }`: stops every running background work of a session, each through
 *   the same stop (for `errand serve`: one runtime command per work).
 * - `moveToBackground { workId }`: moves a running foreground command or subagent to the background.
 */
import type { BackgroundWorksStore } from '../events/index.js';
import { ErrandError, validateSessionId } from '../tasks/index.js';
import type {
  DashboardBackend,
  MoveRejectionReason,
  StopBackgroundWorkResult,
  StopRejectionReason,
} from './dashboard-backend.js';
import { DashboardRequestError } from './http-response.js';

export const COMMAND_TYPES = ['cancelBackgroundWork', 'stopAllBackgroundWork', 'moveToBackground'] as const;
export type CommandType = (typeof COMMAND_TYPES)[number];

export interface CancelBackgroundWorkCommand {
  readonly type: 'cancelBackgroundWork';
  readonly workId: string;
}

export interface StopAllBackgroundWorkCommand {
  readonly type: 'stopAllBackgroundWork';
  readonly sessionId: string;
}

export interface MoveToBackgroundCommand {
  readonly type: 'moveToBackground';
  readonly workId: string;
}

export type DashboardCommand =
  | CancelBackgroundWorkCommand
  | StopAllBackgroundWorkCommand
  | MoveToBackgroundCommand;

const MAX_WORK_ID_LENGTH = 256;

export interface StopAllRejection {
  readonly workId: string;
  readonly reason: string;
}

export interface StopAllFailure {
  readonly workId: string;
  readonly message: string;
}

export interface CommandAck {
  readonly type: 'ack';
  readonly command: CommandType;
  readonly workId?: string;
  readonly sessionId?: string;
  readonly ok: boolean;
  /**
   * `fault.command.backgroundWorkCancelRejected.<reason>`, `fault.command.backgroundWorkCancelFailed`,
   * `fault.command.moveToBackgroundRejected.<reason>` or `fault.command.moveToBackgroundFailed`.
   */
  readonly fault?: string;
  readonly reason?: string;
  readonly message?: string;
  /** Stop all: the works a stop was requested for. */
  readonly stopped?: readonly string[];
  /** Stop all: the works that refused, with the reason. */
  readonly rejected?: readonly StopAllRejection[];
  /** Stop all: the works whose stop failed (they may keep running). */
  readonly failed?: readonly StopAllFailure[];
}

export interface CommandResult {
  readonly status: number;
  readonly ack: CommandAck;
}

function requireWorkId(workId: unknown): string {
  if (typeof workId !== 'string' || workId === '' || workId.length > MAX_WORK_ID_LENGTH) {
    throw new DashboardRequestError(
      400,
      'MISSING_WORK_ID',
      `Expected \`workId\` to be a non-empty string of at most ${MAX_WORK_ID_LENGTH} characters, got ${JSON.stringify(workId) ?? 'nothing'}`,
    );
  }
  return workId;
}

function requireSessionId(sessionId: unknown): string {
  try {
    return validateSessionId(sessionId, 'sessionId');
  } catch (error) {
    throw new DashboardRequestError(
      400,
      'MISSING_SESSION_ID',
      ErrandError.isInstance(error) ? error.message : 'Expected `sessionId` to be a session id',
    );
  }
}

export function parseCommand(body: unknown): DashboardCommand {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new DashboardRequestError(400, 'INVALID_COMMAND', 'Expected a JSON object with a `type`');
  }
  const { type, workId, sessionId } = body as Record<string, unknown>;
  switch (type) {
    case 'cancelBackgroundWork':
      return { type, workId: requireWorkId(workId) };
    case 'moveToBackground':
      return { type, workId: requireWorkId(workId) };
    case 'stopAllBackgroundWork':
      return { type, sessionId: requireSessionId(sessionId) };
    default:
      throw new DashboardRequestError(
        400,
        'UNKNOWN_COMMAND',
        `Expected \`type\` to be one of ${COMMAND_TYPES.map((name) => JSON.stringify(name)).join(', ')}`,
      );
  }
}

const REJECTION_MESSAGES: Record<StopRejectionReason, string> = {
  not_found: 'No background work with this id',
  not_running: 'The work is not running; nothing was cancelled',
  cancel_not_supported: 'This work cannot be cancelled',
};

const MOVE_REJECTION_MESSAGES: Record<MoveRejectionReason, string> = {
  not_found: 'No running foreground work with this id',
  not_running: 'The work is not running in the foreground any more; nothing was moved',
  not_supported: 'This dashboard cannot move work to the background',
};

/** The reason without the `background_task_` prefix a runtime may use. */
export function normalizeStopReason(reason: string): string {
  return reason.startsWith('background_task_') ? reason.slice('background_task_'.length) : reason;
}

/** What the server hands a command besides the command itself. */
export interface CommandContext {
  readonly backend: DashboardBackend;
  /** The server's projection: which works of a session run now (what Stop all stops). */
  readonly works: BackgroundWorksStore;
}

/** A stop's rejection, as an ACK. */
function rejectedStop(base: CommandAck, result: StopBackgroundWorkResult & { ok: false }): CommandResult {
  const reason = normalizeStopReason(String(result.reason));
  return {
    status: reason === 'not_found' ? 404 : 409,
    ack: {
      ...base,
      ok: false,
      fault: `fault.command.backgroundWorkCancelRejected.${reason}`,
      reason,
      message: REJECTION_MESSAGES[reason as StopRejectionReason] ?? 'Nothing was cancelled',
    },
  };
}

function describeFailure(error: unknown): string {
  // Errand's own errors are written to be shown (a holder that did not answer in time, say).
  return ErrandError.isInstance(error) ? error.message : 'The stop failed; the work may still be running';
}

async function stopAll(
  command: StopAllBackgroundWorkCommand,
  context: CommandContext,
): Promise<CommandResult> {
  const base: CommandAck = { type: 'ack', command: command.type, sessionId: command.sessionId, ok: false };
  const running = context.works.sessionWorks(command.sessionId).filter((work) => work.state === 'running');
  if (running.length === 0) {
    return {
      status: 409,
      ack: {
        ...base,
        fault: 'fault.command.backgroundWorkCancelRejected.not_running',
        reason: 'not_running',
        message: 'No background work of this session is running; nothing was cancelled',
        stopped: [],
        rejected: [],
        failed: [],
      },
    };
  }
  const outcomes = await Promise.all(
    running.map(async (work) => {
      try {
        return { workId: work.workId, result: await context.backend.stopBackgroundWork(work.workId) };
      } catch (error) {
        return { workId: work.workId, error };
      }
    }),
  );
  const stopped: string[] = [];
  const rejected: StopAllRejection[] = [];
  const failed: StopAllFailure[] = [];
  for (const outcome of outcomes) {
    if ('error' in outcome) failed.push({ workId: outcome.workId, message: describeFailure(outcome.error) });
    else if (outcome.result.ok) stopped.push(outcome.workId);
    else
      rejected.push({ workId: outcome.workId, reason: normalizeStopReason(String(outcome.result.reason)) });
  }
  const lists = { stopped, rejected, failed };
  if (failed.length > 0) {
    return {
      status: 500,
      ack: {
        ...base,
        ...lists,
        fault: 'fault.command.backgroundWorkCancelFailed',
        message: `${failed.length} of ${running.length} stops failed; that work may still be running`,
      },
    };
  }
  if (stopped.length === 0) {
    const reason = rejected[0]?.reason ?? 'not_running';
    return {
      status: 409,
      ack: {
        ...base,
        ...lists,
        fault: `fault.command.backgroundWorkCancelRejected.${reason}`,
        reason,
        message: 'None of the running work could be cancelled',
      },
    };
  }
  return { status: 200, ack: { ...base, ...lists, ok: true } };
}

async function moveToBackground(
  command: MoveToBackgroundCommand,
  context: CommandContext,
): Promise<CommandResult> {
  const base: CommandAck = { type: 'ack', command: command.type, workId: command.workId, ok: false };
  const result = context.backend.moveToBackground
    ? await context.backend.moveToBackground(command.workId)
    : ({ ok: false, reason: 'not_supported' } as const);
  if (result.ok) return { status: 200, ack: { ...base, ok: true, workId: result.workId } };
  return {
    status: result.reason === 'not_found' ? 404 : 409,
    ack: {
      ...base,
      fault: `fault.command.moveToBackgroundRejected.${result.reason}`,
      reason: result.reason,
      message: MOVE_REJECTION_MESSAGES[result.reason] ?? 'Nothing was moved',
    },
  };
}

/** Runs a command. Throws when the runtime failed to act (the caller answers 500). */
export async function executeCommand(
  command: DashboardCommand,
  context: CommandContext,
): Promise<CommandResult> {
  switch (command.type) {
    case 'stopAllBackgroundWork':
      return stopAll(command, context);
    case 'moveToBackground':
      return moveToBackground(command, context);
    case 'cancelBackgroundWork': {
      const base: CommandAck = { type: 'ack', command: command.type, workId: command.workId, ok: false };
      const result = await context.backend.stopBackgroundWork(command.workId);
      if (result.ok === true) return { status: 200, ack: { ...base, ok: true } };
      return rejectedStop(base, result);
    }
  }
}

/** The fault of a command whose runtime failed to act. */
export function failureFault(command: DashboardCommand): string {
  return command.type === 'moveToBackground'
    ? 'fault.command.moveToBackgroundFailed'
    : 'fault.command.backgroundWorkCancelFailed';
}
