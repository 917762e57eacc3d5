/**
 * A subagent run's result as the registry's outcome: completed → the child's final text as both the
 * final output and `resultText`; cancelled → killed; anything else → failed with its diagnosis. Usage,
 * the end reason and the child session travel in `detail` (the subagent notification reads them).
 */
import type { TaskOutcome } from '../../tasks/index.js';
import type { ChildRunResult } from './child-run.js';
import type { SubagentFacts } from './subagent-facts.js';

/** Maps a child run's result to the task outcome the registry settles with. */
export function subagentOutcome(result: ChildRunResult): TaskOutcome<SubagentFacts> {
  const detail: SubagentFacts = {
    usage: { ...result.usage },
    reason: result.reason,
    childSessionId: result.childSessionId ?? null,
  };
  switch (result.status) {
    case 'completed':
      return { status: 'completed', output: result.text, resultText: result.text, detail };
    case 'killed':
      return {
        status: 'killed',
        ...(result.text === '' ? {} : { output: result.text }),
        detail: result.stopReason === undefined ? detail : { ...detail, stopReason: result.stopReason },
      };
    case 'failed':
      return {
        status: 'failed',
        error: result.error ?? 'The subagent failed',
        ...(result.text === '' ? {} : { output: result.text }),
        detail,
      };
  }
}
