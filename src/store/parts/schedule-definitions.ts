/**
 * The schedule definitions part of a store: the live schedules of each session (definition, fired count,
 * due times, a firing in progress, what the model was not told yet), so a restart resumes them. A row goes
 * when its schedule ends; `prune` removes any whose task record ended or is gone.
 */
import { readSchedule, validateSchedule, validateScheduleKey } from '../schedule-rules.js';
import type { ScheduleDefinitions } from '../session-store.js';
import type { StoreContext } from '../store-context.js';
import type { StoreTables } from '../store-tables.js';
import { validateDurability, validateSessionKey } from '../validate-input.js';
import { compare, deleteEach } from './row-lists.js';
import { requireSessionExists } from './session-records.js';

export function createScheduleDefinitions(context: StoreContext): ScheduleDefinitions {
  return {
    saveSchedule(input, options) {
      const durability = validateDurability(options);
      const time = context.now();
      return context.write(
        'save a schedule',
        ({ sessions, schedules }) => {
          const previous =
            typeof input?.sessionId === 'string' && typeof input.id === 'string'
              ? schedules.get(input.sessionId, input.id)
              : undefined;
          const row = validateSchedule(input, previous, time, context.maxFieldBytes);
          if (previous === undefined) requireSessionExists(sessions, row.sessionId);
          schedules.put(row, previous);
          return readSchedule(row);
        },
        durability,
      );
    },

    getSchedule(sessionId, id) {
      const key = validateScheduleKey(sessionId, id);
      return context.readOne(
        'read a schedule',
        ({ schedules }) => schedules.get(key.sessionId, key.id),
        readSchedule,
      );
    },

    listSchedules(sessionId) {
      const scope = sessionId === undefined ? undefined : validateSessionKey('sessionId', sessionId);
      return context.read('list schedules', ({ schedules }) =>
        schedules
          .select(scope)
          .sort(
            (a, b) =>
              compare(a.createdAt, b.createdAt) || compare(a.sessionId, b.sessionId) || compare(a.id, b.id),
          )
          .map(readSchedule),
      );
    },

    removeSchedule(sessionId, id) {
      const key = validateScheduleKey(sessionId, id);
      return context.write('remove a schedule', ({ schedules }) => {
        if (schedules.get(key.sessionId, key.id) === undefined) return false;
        schedules.delete(key.sessionId, key.id);
        return true;
      });
    },
  };
}

/**
 * Rows whose schedule is over: its task record ended (completed, killed, failed, lost) or is gone. The
 * producer removes its own row as the schedule ends; this catches a row a failed write or a crash left.
 */
export function pruneEndedSchedules(tables: StoreTables): number {
  const over = tables.schedules.select(undefined).filter((row) => {
    const task = tables.tasks.get(row.sessionId, row.id);
    return task === undefined || (task.status !== 'running' && task.status !== 'stopping');
  });
  return deleteEach(over, (row) => tables.schedules.delete(row.sessionId, row.id));
}
