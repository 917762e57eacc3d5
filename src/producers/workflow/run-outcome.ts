/**
 * How an ended execution becomes the task's outcome and the stored run's final state. A superseded run
 * keeps the `superseded` state the amendment gave it and carries `supersededBy` in its detail, which
 * keeps its end from being notified.
 */

import type { SessionStore } from '../../store/index.js';
import { describeError, type Logger, type StopInitiator, type TaskOutcome } from '../../tasks/index.js';
import type { ExecutionOutcome } from './workflow-execution.js';
import type { WorkflowFacts } from './workflow-facts.js';

export function workflowTaskOutcome(
  outcome: ExecutionOutcome,
  supersededBy: string | undefined,
): TaskOutcome<WorkflowFacts> {
  const detail: WorkflowFacts = {
    stepsDone: outcome.stepsDone,
    stepsReplayed: outcome.stepsReplayed,
    reason: outcome.status === 'killed' ? 'cancelled' : outcome.status,
    ...(outcome.abandoned ? { abandoned: true } : {}),
    ...(supersededBy === undefined ? {} : { supersededBy }),
  };
  switch (outcome.status) {
    case 'completed':
      return {
        status: 'completed',
        output: outcome.resultText ?? '',
        resultText: outcome.resultText ?? '',
        detail,
      };
    case 'killed':
      return { status: 'killed', detail };
    case 'failed':
      return { status: 'failed', error: outcome.error ?? 'The workflow failed', detail };
  }
}

/** Writes how the run ended to the store; a failure is logged (the task still settles). */
export function recordRunEnd(
  store: SessionStore,
  runId: string,
  outcome: ExecutionOutcome,
  initiator: StopInitiator | undefined,
  logger: Logger,
): void {
  try {
    if (outcome.status === 'completed') {
      store.updateRun(runId, { status: 'completed', result: outcome.result ?? null, error: null });
    } else if (outcome.status === 'failed') {
      store.updateRun(runId, { status: 'failed', error: outcome.error ?? 'failed' });
    } else {
      store.updateRun(runId, { status: 'killed', stopInitiator: initiator ?? null, error: null });
    }
  } catch (error) {
    logger.warn(`workflow run ${runId}: recording how it ended failed`, {
      taskId: runId,
      error: describeError(error),
    });
  }
}
