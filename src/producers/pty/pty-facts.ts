/**
 * The facts a `pty` task publishes in its `detail`: the program, its terminal and output file at start,
 * its pid and size while it runs, how it ended once it has stopped. Records on disk keep these keys.
 */
import type { LimitBreach, LimitFacts } from '../../process/index.js';
import type { TaskFacts, TaskSnapshot } from '../../tasks/index.js';
import type { PtyExitReason } from './pty-process.js';

export interface PtyFacts extends TaskFacts {
  /** The program run (an interactive shell when none was given). */
  readonly command?: string;
  /** The working directory it runs in. */
  readonly cwd?: string;
  /** The terminal's size, updated by every resize. */
  readonly cols?: number;
  readonly rows?: number;
  /** Why the program ended. */
  readonly reason?: PtyExitReason;
  /** Signals sent to stop it, in order (`SIGINT`, then `SIGHUP` and `SIGTERM`, then `SIGKILL`). */
  readonly stopSignals?: readonly string[];
  /** Processes still running after the program ended on its own, which were then stopped. */
  readonly leftoverProcesses?: number;
  /** Pids that outlived SIGKILL; absent when there were none. */
  readonly survivors?: readonly number[];
  /** The reason a caller gave when stopping it. */
  readonly cancelMessage?: string;
  /** The resource limits it runs under and how they are enforced; absent without limits. */
  readonly limits?: LimitFacts;
  /** The resource limit it went past, for `memory_limit`, `cpu_limit` and `pids_limit`. */
  readonly limitBreach?: LimitBreach;
}

/** A pty task's facts, typed; undefined for a task of another kind. */
export function ptyFacts(snapshot: TaskSnapshot): PtyFacts | undefined {
  return snapshot.kind === 'pty' ? (snapshot.detail as PtyFacts) : undefined;
}
