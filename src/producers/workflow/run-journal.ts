/**
 * Opens the journal of a run that is being registered. Every store write that can fail — creating the
 * run, marking a resumed one running again, superseding an amended one — happens here, inside the
 * task's `run()`, so a failure registers nothing. Carrying finished steps over to an amendment cannot
 * fail the registration: a step that does not copy only runs again.
 */

import type { JsonValue, SessionStore } from '../../store/index.js';
import { describeError, type Logger } from '../../tasks/index.js';
import { type StepJournal, storeJournal } from './journal.js';

/** How a run comes to be: a new run, a resumed one (same id), or an amendment superseding `previous`. */
export type LaunchMode =
  | { readonly kind: 'new' }
  | { readonly kind: 'resume'; readonly runId: string }
  | { readonly kind: 'amend'; readonly previous: string; readonly keepFinishedSteps: boolean };

export interface RunFacts {
  readonly runId: string;
  readonly sessionId: string;
  readonly scriptPath: string;
  readonly scriptHash: string;
  readonly input: JsonValue;
}

export interface OpenedJournal {
  readonly journal: StepJournal;
  /** Finished steps copied from the superseded run. */
  readonly carriedSteps: number;
}

export function openRunJournal(
  store: SessionStore,
  mode: LaunchMode,
  facts: RunFacts,
  logger: Logger,
): OpenedJournal {
  const record = { ...facts, taskId: facts.runId };
  let carriedSteps = 0;
  switch (mode.kind) {
    case 'new':
      store.createRun(record);
      break;
    case 'resume':
      store.updateRun(facts.runId, { status: 'running', stopInitiator: null, error: null });
      break;
    case 'amend':
      store.supersedeRun(mode.previous, record);
      if (mode.keepFinishedSteps) carriedSteps = carrySteps(store, mode.previous, facts.runId, logger);
      break;
  }
  return { journal: storeJournal(store, facts.runId), carriedSteps };
}

function carrySteps(store: SessionStore, from: string, to: string, logger: Logger): number {
  let carried = 0;
  for (const step of store.getSteps(from)) {
    if (step.state !== 'done') continue;
    try {
      store.recordStep(to, {
        name: step.name,
        state: 'done',
        ...(step.result === undefined ? {} : { result: step.result }),
        startedAt: step.startedAt,
        endedAt: step.endedAt,
      });
      carried += 1;
    } catch (error) {
      logger.warn(`workflow run ${to}: carrying step ${step.name} over from ${from} failed`, {
        taskId: to,
        error: describeError(error),
      });
    }
  }
  return carried;
}
