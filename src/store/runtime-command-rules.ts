/**
 * The rules of runtime commands: validation of what a caller hands the store, the one transition
 * (pending → acknowledged | rejected | expired, once), and reading a row back.
 */
import { asSessionId, InvalidArgumentError } from '../tasks/index.js';
import { StoreRecordCorruptError } from './errors.js';
import {
  RECORD_SCHEMA_VERSION,
  RUNTIME_COMMAND_STATES,
  RUNTIME_COMMAND_TYPES,
  type RuntimeCommand,
} from './records.js';
import type { CommandRow } from './rows.js';
import type { CommandAnswer, NewRuntimeCommand } from './session-store.js';
import { validateName, validateObject, validateOneOf, validateSessionKey } from './validate-input.js';

/** Pending commands one `listPendingCommands` call returns when no limit is given. */
export const DEFAULT_PENDING_COMMAND_LIMIT = 32;
/** The most one `listPendingCommands` call may ask for. */
export const MAX_PENDING_COMMAND_LIMIT = 1000;

export function validateNewCommand(input: NewRuntimeCommand, time: number): Omit<CommandRow, 'id'> {
  validateObject('command', input);
  return {
    sessionId: validateSessionKey('sessionId', input.sessionId),
    schemaVersion: RECORD_SCHEMA_VERSION,
    runtime: validateName('runtime', input.runtime),
    type: validateOneOf('type', input.type, RUNTIME_COMMAND_TYPES),
    workId: validateName('workId', input.workId),
    state: 'pending',
    reason: null,
    createdAt: time,
    answeredAt: null,
  };
}

export function validateCommandId(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new InvalidArgumentError(field, 'a positive integer command id', value);
  }
  return value;
}

export function validateCommandLimit(value: unknown): number {
  if (value === undefined) return DEFAULT_PENDING_COMMAND_LIMIT;
  if (
    typeof value !== 'number' ||
    !Number.isSafeInteger(value) ||
    value < 1 ||
    value > MAX_PENDING_COMMAND_LIMIT
  ) {
    throw new InvalidArgumentError('limit', `an integer from 1 to ${MAX_PENDING_COMMAND_LIMIT}`, value);
  }
  return value;
}

export interface NormalizedAnswer {
  readonly state: 'acknowledged' | 'rejected' | 'expired';
  readonly reason: string | null;
}

export function validateCommandAnswer(answer: CommandAnswer): NormalizedAnswer {
  validateObject('answer', answer);
  const state = validateOneOf('answer.state', answer.state, ['acknowledged', 'rejected', 'expired'] as const);
  if (state === 'rejected') {
    return { state, reason: validateName('answer.reason', (answer as { reason?: unknown }).reason, 256) };
  }
  return { state, reason: null };
}

/** The row after the answer, or undefined when the command was already answered (answers are final). */
export function applyAnswer(row: CommandRow, answer: NormalizedAnswer, time: number): CommandRow | undefined {
  if (row.state !== 'pending') return undefined;
  return { ...row, state: answer.state, reason: answer.reason, answeredAt: time };
}

export function readCommand(row: CommandRow): RuntimeCommand {
  const fail = (column: string, problem: string): never => {
    throw new StoreRecordCorruptError({ table: 'commands', key: String(row.id), column }, problem);
  };
  if (
    !Number.isSafeInteger(row.schemaVersion) ||
    row.schemaVersion < 1 ||
    row.schemaVersion > RECORD_SCHEMA_VERSION
  ) {
    fail(
      'schemaVersion',
      `record schema version ${String(row.schemaVersion)} is not one this version of Errand reads`,
    );
  }
  if (!(RUNTIME_COMMAND_TYPES as readonly string[]).includes(row.type)) {
    fail('type', `${JSON.stringify(row.type)} is not one of ${RUNTIME_COMMAND_TYPES.join(', ')}`);
  }
  if (!(RUNTIME_COMMAND_STATES as readonly string[]).includes(row.state)) {
    fail('state', `${JSON.stringify(row.state)} is not one of ${RUNTIME_COMMAND_STATES.join(', ')}`);
  }
  return {
    schemaVersion: RECORD_SCHEMA_VERSION,
    id: row.id,
    sessionId: asSessionId(row.sessionId),
    runtime: row.runtime,
    type: row.type as RuntimeCommand['type'],
    workId: row.workId,
    state: row.state as RuntimeCommand['state'],
    reason: row.reason ?? undefined,
    createdAt: row.createdAt,
    answeredAt: row.answeredAt ?? undefined,
  };
}
