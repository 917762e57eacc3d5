/**
 * Maps a pty program's exit facts to a task outcome, like the bash producer: a stop (cancelled, timed
 * out, output limit) is killed, a spawn error or a non-zero exit is failed. The raw facts go to `detail`.
 */
import { describeBreach } from '../../process/index.js';
import type { TaskOutcome } from '../../tasks/index.js';
import type { PtyFacts } from './pty-facts.js';
import type { PtyExit } from './pty-process.js';

/** Maps exit facts to the registry: stops → killed, spawn errors and non-zero exits → failed. */
export function outcomeOf(exit: PtyExit): TaskOutcome<PtyFacts> {
  const detail: PtyFacts = {
    reason: exit.reason,
    exitCode: exit.exitCode,
    signal: exit.signal,
    stopSignals: [...exit.stopSignals],
    leftoverProcesses: exit.leftoverProcesses,
    outputBytes: exit.outputBytes,
    ...(exit.survivors.length > 0 ? { survivors: [...exit.survivors] } : {}),
    ...(exit.limitBreach ? { limitBreach: { ...exit.limitBreach } } : {}),
  };
  switch (exit.reason) {
    case 'spawn_error':
      return { status: 'failed', detail, error: exit.error ?? 'The program could not be started' };
    case 'cancelled':
    case 'timed_out':
    case 'output_limit':
      return { status: 'killed', detail };
    case 'memory_limit':
    case 'cpu_limit':
    case 'pids_limit':
      return {
        status: 'killed',
        detail,
        error: `The program was killed after ${exit.limitBreach ? describeBreach(exit.limitBreach) : `exceeding a limit (${exit.reason})`}`,
      };
    case 'completed':
      if (exit.exitCode === 0) return { status: 'completed', detail };
      return {
        status: 'failed',
        detail,
        error: exit.signal === null ? `exited with code ${exit.exitCode}` : `ended by ${exit.signal}`,
      };
  }
}
