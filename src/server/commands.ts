/**
 * The command endpoint: validates a command and answers with an ACK, or with a fault when nothing
 * was done — never a success for a stop that cancelled nothing.
 */
import type { DashboardBackend, StopRejectionReason } from './dashboard-backend.js';
import { DashboardRequestError } from './http-response.js';

export const COMMAND_TYPES = ['cancelBackgroundWork'] as const;
export type CommandType = (typeof COMMAND_TYPES)[number];

export interface CancelBackgroundWorkCommand {
  readonly type: 'cancelBackgroundWork';
  readonly workId: string;
}

export type DashboardCommand = CancelBackgroundWorkCommand;

const MAX_WORK_ID_LENGTH = 256;

export interface CommandAck {
  readonly type: 'ack';
  readonly command: CommandType;
  readonly workId: string;
  readonly ok: boolean;
  /** `fault.command.backgroundWorkCancelRejected.<reason>` or `fault.command.backgroundWorkCancelFailed`. */
  readonly fault?: string;
  readonly reason?: string;
  readonly message?: string;
}

export interface CommandResult {
  readonly status: number;
  readonly ack: CommandAck;
}

export function parseCommand(body: unknown): DashboardCommand {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new DashboardRequestError(400, 'INVALID_COMMAND', 'Expected a JSON object with a `type`');
  }
  const { type, workId } = body as Record<string, unknown>;
  if (typeof type !== 'string' || !(COMMAND_TYPES as readonly string[]).includes(type)) {
    throw new DashboardRequestError(
      400,
      'UNKNOWN_COMMAND',
      `Expected \`type\` to be one of ${COMMAND_TYPES.map((name) => JSON.stringify(name)).join(', ')}`,
    );
  }
  if (typeof workId !== 'string' || workId === '' || workId.length > MAX_WORK_ID_LENGTH) {
    throw new DashboardRequestError(
      400,
      'MISSING_WORK_ID',
      `Expected \`workId\` to be a non-empty string of at most ${MAX_WORK_ID_LENGTH} characters`,
    );
  }
  return { type: 'cancelBackgroundWork', workId };
}

const REJECTION_MESSAGES: Record<StopRejectionReason, string> = {
  not_found: 'No background work with this id',
  not_running: 'The work is not running; nothing was cancelled',
  cancel_not_supported: 'This work cannot be cancelled',
};

/** The reason without the `background_task_` prefix a runtime may use. */
export function normalizeStopReason(reason: string): string {
  return reason.startsWith('background_task_') ? reason.slice('background_task_'.length) : reason;
}

export async function executeCommand(
  command: DashboardCommand,
  backend: DashboardBackend,
): Promise<CommandResult> {
  const base = { type: 'ack', command: command.type, workId: command.workId } as const;
  const result = await backend.stopBackgroundWork(command.workId);
  if (result.ok === true) return { status: 200, ack: { ...base, ok: true } };
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
