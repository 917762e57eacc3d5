/**
 * The workflow journal part of a store: a workflow run and the steps it recorded, so a resumed run replays
 * finished steps from their stored results instead of running them again.
 */
import { StoreRecordExistsError, StoreRecordNotFoundError } from '../errors.js';
import { readRun, readStep } from '../read-records.js';
import type { RunRow, StepRow } from '../rows.js';
import type { WorkflowJournal } from '../session-store.js';
import type { StoreContext } from '../store-context.js';
import type { RunTable, StoreTables } from '../store-tables.js';
import { applyRunPatch, supersedeRunRow } from '../transition-rules.js';
import {
  validateName,
  validateNewRun,
  validateNewStep,
  validateObject,
  validateRunPatch,
  validateRunStatuses,
  validateSessionKey,
} from '../validate-input.js';
import { compare, deleteEach } from './row-lists.js';
import { requireSession } from './session-records.js';

function requireRun(runs: RunTable, runId: string): RunRow {
  const row = runs.get(runId);
  if (!row) throw new StoreRecordNotFoundError('workflow run', runId);
  return row;
}

/** Inserts a new run in the caller's write and returns it: its session must exist, its id must be free. */
function insertRun(tables: StoreTables, row: RunRow): RunRow {
  requireSession(tables.sessions, row.sessionId);
  if (tables.runs.get(row.runId)) throw new StoreRecordExistsError('workflow run', row.runId);
  tables.runs.put(row);
  return row;
}

export function createWorkflowJournal(context: StoreContext): WorkflowJournal {
  return {
    createRun(input) {
      const row = validateNewRun(input, context.now(), context.maxFieldBytes);
      return context.write('create a workflow run', (tables) => readRun(insertRun(tables, row)));
    },

    getRun(runId) {
      const key = validateName('runId', runId);
      return context.readOne('read a workflow run', ({ runs }) => runs.get(key), readRun);
    },

    listRuns(filter = {}) {
      validateObject('filter', filter);
      const sessionId =
        filter.sessionId === undefined ? null : validateSessionKey('sessionId', filter.sessionId);
      const taskId = filter.taskId === undefined ? null : validateName('taskId', filter.taskId);
      const statuses = filter.statuses === undefined ? undefined : validateRunStatuses(filter.statuses);
      return context.read('list workflow runs', ({ runs }) =>
        runs
          .select(sessionId, taskId, statuses)
          .sort((a, b) => compare(a.createdAt, b.createdAt) || compare(a.runId, b.runId))
          .map(readRun),
      );
    },

    updateRun(runId, patch) {
      const key = validateName('runId', runId);
      const normalized = validateRunPatch(patch, context.maxFieldBytes);
      const time = context.now();
      return context.write('update a workflow run', ({ runs }) => {
        const stored = requireRun(runs, key);
        const next = applyRunPatch(stored, normalized, time);
        runs.put(next, stored);
        return readRun(next);
      });
    },

    supersedeRun(runId, replacement) {
      const key = validateName('runId', runId);
      const time = context.now();
      const row = validateNewRun(replacement, time, context.maxFieldBytes);
      return context.write('supersede a workflow run', (tables) => {
        const old = requireRun(tables.runs, key);
        insertRun(tables, row);
        const superseded = supersedeRunRow(old, row.runId, time);
        tables.runs.put(superseded, old);
        return { superseded: readRun(superseded), replacement: readRun(row) };
      });
    },

    recordStep(runId, step) {
      const key = validateName('runId', runId);
      const normalized = validateNewStep(key, step, context.maxFieldBytes);
      return context.write('record a workflow step', ({ runs, steps }) => {
        requireRun(runs, key);
        const existing = steps.get(key, normalized.name);
        if (existing?.state === 'done') return { step: readStep(existing), recorded: false };
        // A failed step is replaced by its new attempt under the same seq.
        const row: StepRow = { ...normalized, seq: existing?.seq ?? steps.lastSeq(key) + 1 };
        steps.put(row);
        return { step: readStep(row), recorded: true };
      });
    },

    getStep(runId, name) {
      const key = validateName('runId', runId);
      const stepName = validateName('name', name);
      return context.readOne('read a workflow step', ({ steps }) => steps.get(key, stepName), readStep);
    },

    getSteps(runId) {
      const key = validateName('runId', runId);
      return context.read('list workflow steps', ({ steps }) => steps.select(key).map(readStep));
    },
  };
}

/** Runs that are no longer running and were last changed before `cutoff` go, with their steps. */
export function pruneFinishedRuns(tables: StoreTables, cutoff: number): number {
  const old = tables.runs.selectUpdatedBefore(cutoff).filter((row) => row.status !== 'running');
  return deleteEach(old, (row) => tables.runs.delete(row.runId));
}
