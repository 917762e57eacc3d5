/**
 * The rules of schedule definitions: what a caller may hand the store (checked before any write), the one
 * guarded change (a schedule's fired count only grows; a firing in progress is always the next one), and
 * reading a row back.
 */
import { asSessionId, InvalidArgumentError } from '../tasks/index.js';
import {
  ScheduleDefinitionInvalidError,
  StoreInvalidTransitionError,
  StoreRecordCorruptError,
} from './errors.js';
import { parseJsonObjectColumn, serializeJsonObject } from './json.js';
import { RECORD_SCHEMA_VERSION, type StoredSchedule } from './records.js';
import type { ScheduleRow } from './rows.js';
import type { ScheduleInput } from './session-store.js';
import {
  validateCount,
  validateName,
  validateObject,
  validateSessionKey,
  validateText,
} from './validate-input.js';

/** A schedule's id: its task's id, `schedule-N`. */
const SCHEDULE_ID = /^schedule-[1-9][0-9]{0,15}$/;
/** The fields of a definition of which exactly one says when it fires. */
export const SCHEDULE_TRIGGERS = ['at', 'in_ms', 'every_ms', 'cron', 'idle_ms'] as const;
/** The longest note kept for the model (what it was not told yet of missed or interrupted firings). */
const MAX_NOTE_BYTES = 4096;

export function validateScheduleId(field: string, value: unknown): string {
  if (typeof value !== 'string' || !SCHEDULE_ID.test(value)) {
    throw new InvalidArgumentError(field, 'a schedule task id like "schedule-1"', value);
  }
  return value;
}

function optionalTime(field: string, value: unknown): number | null {
  if (value === undefined) return null;
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw new InvalidArgumentError(field, 'an integer number of epoch milliseconds', value);
  }
  return value;
}

/** Checks the definition's shape: a non-empty prompt, exactly one trigger. How it plans is the producer's. */
function validateDefinition(id: string, definition: unknown, maxFieldBytes: number): string {
  validateObject('definition', definition);
  const fields = definition as Record<string, unknown>;
  if (typeof fields.prompt !== 'string' || fields.prompt.trim() === '') {
    throw new ScheduleDefinitionInvalidError(id, 'definition.prompt', 'a non-empty string', fields.prompt);
  }
  const triggers = SCHEDULE_TRIGGERS.filter((key) => fields[key] !== undefined && fields[key] !== null);
  if (triggers.length !== 1) {
    throw new ScheduleDefinitionInvalidError(
      id,
      `definition.${SCHEDULE_TRIGGERS.join(' | ')}`,
      'exactly one of them',
      triggers.join(', ') || 'none',
    );
  }
  return serializeJsonObject('definition', definition, maxFieldBytes);
}

/** The row `saveSchedule` writes over `previous` (the stored one, if any). */
export function validateSchedule(
  input: ScheduleInput,
  previous: ScheduleRow | undefined,
  time: number,
  maxFieldBytes: number,
): ScheduleRow {
  validateObject('schedule', input);
  const sessionId = validateSessionKey('sessionId', input.sessionId);
  const id = validateScheduleId('id', input.id);
  const definition = validateDefinition(id, input.definition, maxFieldBytes);
  const fired = validateCount('fired', input.fired);
  if (previous !== undefined && fired < previous.fired) {
    throw new StoreInvalidTransitionError('schedule', id, 'fired', previous.fired, fired);
  }
  let firing: number | null = null;
  if (input.firing !== undefined) {
    firing = validateCount('firing', input.firing);
    if (firing !== fired + 1)
      throw new InvalidArgumentError('firing', `fired + 1 (${fired + 1})`, input.firing);
  }
  const note = input.note === undefined ? null : validateText('note', input.note, MAX_NOTE_BYTES);
  return {
    sessionId,
    id,
    schemaVersion: RECORD_SCHEMA_VERSION,
    definition,
    fired,
    lastDueAt: optionalTime('lastDueAt', input.lastDueAt),
    nextAt: optionalTime('nextAt', input.nextAt),
    firing,
    note: note === '' ? null : note,
    createdAt: optionalTime('createdAt', input.createdAt) ?? previous?.createdAt ?? time,
    updatedAt: time,
  };
}

export function validateScheduleKey(sessionId: unknown, id: unknown): { sessionId: string; id: string } {
  return { sessionId: validateSessionKey('sessionId', sessionId), id: validateName('id', id) };
}

export function readSchedule(row: ScheduleRow): StoredSchedule {
  const location = { table: 'schedules', key: `${row.sessionId}/${row.id}` };
  const fail = (column: string, problem: string): never => {
    throw new StoreRecordCorruptError({ ...location, column }, problem);
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
  if (!Number.isSafeInteger(row.fired) || row.fired < 0) fail('fired', `${String(row.fired)} is not a count`);
  if (row.firing !== null && row.firing !== row.fired + 1) {
    fail('firing', `${String(row.firing)} is not the next firing after ${row.fired}`);
  }
  return {
    schemaVersion: RECORD_SCHEMA_VERSION,
    sessionId: asSessionId(row.sessionId),
    id: row.id,
    definition: parseJsonObjectColumn({ ...location, column: 'definition' }, row.definition),
    fired: row.fired,
    lastDueAt: row.lastDueAt ?? undefined,
    nextAt: row.nextAt ?? undefined,
    firing: row.firing ?? undefined,
    note: row.note ?? undefined,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}
