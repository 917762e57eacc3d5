/**
 * The journal a run's steps are recorded in: the session store's workflow journal for durable runs
 * (a resumed run, even in another process, finds its finished steps there), or memory for legacy runs.
 */
import type { JsonValue, SessionStore } from '../../store/index.js';
import { WorkflowResultNotJsonError } from './errors.js';

export interface JournalEntry {
  readonly state: 'done' | 'failed';
  readonly result: JsonValue | undefined;
  readonly error: string | undefined;
}

export interface JournalWrite {
  readonly name: string;
  readonly state: 'done' | 'failed';
  readonly result?: JsonValue;
  readonly error?: string;
  readonly startedAt: number;
  readonly endedAt: number;
}

export interface StepJournal {
  get(name: string): JournalEntry | undefined;
  /**
   * Records a step. A `done` step already recorded is kept: the stored entry is returned and the
   * caller must use its result.
   */
  record(write: JournalWrite): JournalEntry;
  /** Names of the finished steps, in the order they were first recorded. */
  doneSteps(): string[];
}

export function storeJournal(store: SessionStore, runId: string): StepJournal {
  const entryOf = (step: {
    state: 'done' | 'failed';
    result: JsonValue | undefined;
    error: string | undefined;
  }) => ({
    state: step.state,
    result: step.result,
    error: step.error,
  });
  return {
    get(name) {
      const step = store.getStep(runId, name);
      return step === undefined ? undefined : entryOf(step);
    },
    record(write) {
      return entryOf(store.recordStep(runId, write).step);
    },
    doneSteps() {
      return store
        .getSteps(runId)
        .filter((step) => step.state === 'done')
        .map((step) => step.name);
    },
  };
}

export function memoryJournal(): StepJournal {
  const entries = new Map<string, JournalEntry>();
  return {
    get: (name) => entries.get(name),
    record(write) {
      const existing = entries.get(write.name);
      if (existing?.state === 'done') return existing;
      const entry: JournalEntry = { state: write.state, result: write.result, error: write.error };
      entries.set(write.name, entry);
      return entry;
    },
    doneSteps: () => [...entries].filter(([, entry]) => entry.state === 'done').map(([name]) => name),
  };
}

/** The JSON form of a value (what the journal stores and a replay returns); undefined becomes null. */
export function toJson(value: unknown, where: string): JsonValue {
  if (value === undefined) return null;
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    throw new WorkflowResultNotJsonError(where, value, error);
  }
  if (text === undefined) throw new WorkflowResultNotJsonError(where, value);
  return JSON.parse(text) as JsonValue;
}
