/**
 * Maps a stopped command's exit facts to a task outcome. Port words map as the contract says
 * (cancelled, timed_out, output_limit and the resource limits → killed; spawn_error → failed); a command that ended on its own
 * is completed only with exit code 0. The raw facts go to `detail` uninterpreted.
 */
import { mapPortStatus, type TaskOutcome, type TerminalTaskStatus } from '../../tasks/index.js';
import type { BashFacts } from './bash-facts.js';
import { describeExit, type ExitFacts } from './exit-facts.js';

export function bashTaskStatus(facts: ExitFacts): TerminalTaskStatus {
  if (facts.lost) return 'lost';
  if (facts.reason === 'completed') return facts.exitCode === 0 ? 'completed' : 'failed';
  return mapPortStatus(facts.reason);
}

/** The detail a stopped command publishes: every exit fact, JSON-ready. */
export function exitDetail(facts: ExitFacts): BashFacts {
  const killed = facts.reason !== 'completed' && facts.reason !== 'spawn_error';
  return {
    reason: facts.reason,
    exitCode: facts.exitCode,
    signal: facts.signal,
    outputBytes: facts.outputBytes,
    outputFile: facts.outputFile,
    escalated: facts.escalated,
    killSignal: facts.escalated ? 'SIGKILL' : killed || facts.signalledProcesses > 0 ? 'SIGTERM' : null,
    signalledProcesses: facts.signalledProcesses,
    survivors: [...facts.survivors],
    durationMs: facts.endedAt - facts.startedAt,
    error: facts.error,
    errorCode: facts.errorCode,
    cancelMessage: facts.cancelMessage,
    timeoutMs: facts.timeoutMs,
    outputLimitBytes: facts.outputLimitBytes,
    ...(facts.limitBreach ? { limitBreach: { ...facts.limitBreach } } : {}),
  };
}

export function bashOutcome(facts: ExitFacts): TaskOutcome<BashFacts> {
  const status = bashTaskStatus(facts);
  const detail = exitDetail(facts);
  if (status === 'completed') return { status, detail };
  return { status, detail, error: `The command ${describeExit(facts)}` };
}
