/**
 * The task records part of a store: what each task service wrote about its tasks, keyed by (session, id),
 * and the resume rule that marks the records of a dead runtime's live tasks `lost`.
 */
import { InvalidArgumentError, parseTaskId } from '../../tasks/index.js';
import { readTask } from '../read-records.js';
import type { TaskRow } from '../rows.js';
import { taskScope } from '../rows.js';
import type { TaskRecords } from '../session-store.js';
import type { StoreContext } from '../store-context.js';
import type { StoreTables } from '../store-tables.js';
import { LOST_TASK_ERROR } from '../transition-rules.js';
import {
  validateCount,
  validateDurability,
  validateName,
  validateObject,
  validateSessionKey,
  validateTaskIdList,
  validateTaskRecord,
  validateTaskStatuses,
} from '../validate-input.js';
import { byTaskStart, deleteEach } from './row-lists.js';
import { requireSessionExists } from './session-records.js';

/** The statuses of a task whose process may still run: never pruned, marked lost on resume. */
const LIVE_STATUSES = ['running', 'stopping'];

export function createTaskRecords(context: StoreContext): TaskRecords {
  return {
    upsertTask(record, options) {
      const checked = validateTaskRecord(record, 0, context.maxFieldBytes);
      const durability = validateDurability(options);
      const parsed = parseTaskId(checked.id);
      return context.write(
        'save a task record',
        ({ sessions, tasks, sequences }) => {
          // Stamped under the write lock, so stamps follow the order of commits (what `updatedSince` relies on).
          const row = { ...checked, updatedAt: context.now() };
          // The model's read cursor only moves forward, and only when asked to: a write keeps the higher one.
          // A later write of the same attempt (its process facts, its end) rewrites the stored row alone: the
          // row's session exists (deleting a session deletes its records) and its id raised the sequence.
          let readOffset = tasks.update(row);
          if (readOffset === undefined) {
            if (row.sessionId !== null) requireSessionExists(sessions, row.sessionId);
            // The highest id per kind stays in `task_sequences`, so a new runtime never reads the records for it.
            if (parsed !== undefined) sequences.raise(parsed.kind, parsed.sequence);
            readOffset = tasks.save(row);
          }
          return readTask(readOffset === row.readOffset ? row : { ...row, readOffset });
        },
        durability,
      );
    },

    saveTaskReadOffset(id, sessionId, offset) {
      const taskId = validateName('id', id);
      const scope = taskScope(sessionId === undefined ? null : validateSessionKey('sessionId', sessionId));
      const readOffset = validateCount('offset', offset);
      return context.write('save a task read offset', ({ tasks }) => {
        const time = context.now();
        const row = tasks.get(scope, taskId);
        if (row === undefined) return undefined;
        if (readOffset <= row.readOffset) return readTask(row);
        const saved = { ...row, readOffset, updatedAt: time };
        tasks.put(saved, row);
        return readTask(saved);
      });
    },

    taskRecordDeletions() {
      return context.read('count deleted task records', ({ tasks }) => tasks.deletions());
    },

    getTask(id, sessionId) {
      const taskId = validateName('id', id);
      const scope = taskScope(sessionId === undefined ? null : validateSessionKey('sessionId', sessionId));
      return context.readOne('read a task record', ({ tasks }) => tasks.get(scope, taskId), readTask);
    },

    listTasks(filter = {}) {
      validateObject('filter', filter);
      const scope =
        filter.sessionId === undefined
          ? undefined
          : taskScope(filter.sessionId === null ? null : validateSessionKey('sessionId', filter.sessionId));
      const statuses = filter.statuses === undefined ? undefined : validateTaskStatuses(filter.statuses);
      const since =
        filter.updatedSince === undefined ? 0 : validateCount('updatedSince', filter.updatedSince);
      if (filter.reported !== undefined && typeof filter.reported !== 'boolean') {
        throw new InvalidArgumentError('reported', 'a boolean', filter.reported);
      }
      return context.read('list task records', ({ tasks }) =>
        tasks.select(scope, statuses, since, filter.reported).sort(byTaskStart).map(readTask),
      );
    },

    markLiveAsLost(options = {}) {
      validateObject('options', options);
      const sessionId =
        options.sessionId === undefined ? undefined : validateSessionKey('sessionId', options.sessionId);
      const keep = validateTaskIdList('keepTaskIds', options.keepTaskIds);
      const error =
        options.error === undefined ? LOST_TASK_ERROR : validateName('error', options.error, 4096);
      return context.write('mark live tasks lost', ({ tasks }) => {
        const time = context.now();
        const live = tasks
          .select(sessionId === undefined ? undefined : taskScope(sessionId), LIVE_STATUSES, 0)
          .filter((row) => !keep.has(row.id))
          .sort(byTaskStart);
        const lost = live.map(
          (row): TaskRow => ({
            ...row,
            status: 'lost',
            error,
            endedAt: row.endedAt ?? time,
            updatedAt: time,
          }),
        );
        lost.forEach((row, index) => {
          tasks.put(row, live[index]);
        });
        return lost.map(readTask);
      });
    },

    markTold(sessionId, taskIds) {
      const scope = taskScope(validateSessionKey('sessionId', sessionId));
      const ids = validateTaskIdList('taskIds', taskIds);
      return context.write('mark task endings told', ({ tasks }) => {
        const time = context.now();
        const told: TaskRow[] = [];
        for (const id of ids) {
          const row = tasks.get(scope, id);
          if (row === undefined || LIVE_STATUSES.includes(row.status) || row.reported !== 0) continue;
          const next: TaskRow = { ...row, reported: 1, updatedAt: time };
          tasks.put(next, row);
          told.push(next);
        }
        return told.map(readTask);
      });
    },
  };
}

/** Terminal records written before `cutoff` go; live ones stay whatever their age. */
export function pruneFinishedTasks(tables: StoreTables, cutoff: number): number {
  const old = tables.tasks.selectUpdatedBefore(cutoff).filter((row) => !LIVE_STATUSES.includes(row.status));
  return deleteEach(old, (row) => tables.tasks.delete(row.scope, row.id));
}
