/** What the executor reports about a command that has stopped, and how to say it in one line. */

import { describeBreach, type LimitBreach, type StopReason } from '../../process/index.js';

export { STOP_REASONS, type StopReason } from '../../process/index.js';

export interface ExitFacts {
  readonly reason: StopReason;
  /** The shell's exit code; null when it was ended by a signal or never started. */
  readonly exitCode: number | null;
  /** The signal that ended the shell, if any. */
  readonly signal: NodeJS.Signals | null;
  /** The shell's pid, which is also its process group and session id; null when it never started. */
  readonly pid: number | null;
  /** Bytes of output (stdout and stderr merged), all of which are in the output file. */
  readonly outputBytes: number;
  readonly outputFile: string | null;
  /** True when part of the process tree outlived SIGTERM and was sent SIGKILL. */
  readonly escalated: boolean;
  /** Processes of the tree that received a signal (on cancel, or left behind when the shell exited). */
  readonly signalledProcesses: number;
  /** Processes that were still alive when the executor gave up on them. */
  readonly survivors: readonly number[];
  readonly startedAt: number;
  readonly endedAt: number;
  /** Why the command could not start, or why its output file failed. */
  readonly error: string | null;
  /** The errno code behind `error` (`ENOENT`, `EACCES`, ...), when there is one. */
  readonly errorCode: string | null;
  /** The reason a caller gave when cancelling. */
  readonly cancelMessage: string | null;
  /** The deadline that expired, for `timed_out`. */
  readonly timeoutMs: number | null;
  /** The output file cap that was exceeded, for `output_limit`. */
  readonly outputLimitBytes: number | null;
  /** The resource limit that was exceeded, for `memory_limit`, `cpu_limit` and `pids_limit`. */
  readonly limitBreach?: LimitBreach | null;
  /**
   * Why the command's end could not be known, when it could not (a durable command whose exit status
   * was never written: its wrapper was killed); the task is then `lost`. Null (or absent) otherwise.
   */
  readonly lost?: string | null;
}

/** One line for a person or a model: "exit code 0", "killed by SIGSEGV", "timed out after 5000 ms". */
export function describeExit(facts: ExitFacts): string {
  if (facts.lost) return `was lost: ${facts.lost}`;
  switch (facts.reason) {
    case 'spawn_error':
      return `could not start: ${facts.error ?? 'unknown error'}`;
    case 'timed_out':
      return `timed out after ${facts.timeoutMs ?? '?'} ms and was killed${killedWith(facts)}`;
    case 'output_limit':
      return `was killed after exceeding the output limit of ${facts.outputLimitBytes ?? '?'} bytes${killedWith(facts)}`;
    case 'memory_limit':
    case 'cpu_limit':
    case 'pids_limit':
      return `was killed after ${limitWords(facts)}`;
    case 'cancelled':
      return `was cancelled${killedWith(facts)}`;
    case 'completed':
      if (facts.signal !== null) return `was killed by signal ${facts.signal}`;
      return `exit code ${facts.exitCode ?? '?'}`;
  }
}

/** `exceeding its memory limit of 64 MiB`, from the breach (or the reason alone in an old record). */
export function limitWords(facts: Pick<ExitFacts, 'reason' | 'limitBreach'>): string {
  if (facts.limitBreach) return describeBreach(facts.limitBreach);
  const what = { memory_limit: 'memory', cpu_limit: 'CPU time', pids_limit: 'process' } as const;
  return `exceeding its ${what[facts.reason as keyof typeof what] ?? 'resource'} limit`;
}

function killedWith(facts: ExitFacts): string {
  return facts.escalated ? ' (SIGKILL after SIGTERM was ignored)' : '';
}
