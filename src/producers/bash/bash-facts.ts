/**
 * The facts a `bash` task publishes in its `detail`: the command and where it runs at start, the process
 * and its output while it runs, every exit fact once it has stopped. Records on disk keep these keys.
 */
import type { LimitBreach, LimitFacts, StopReason } from '../../process/index.js';
import type { TaskFacts, TaskSnapshot } from '../../tasks/index.js';

export interface BashFacts extends TaskFacts {
  /** The command, at most its first 4096 characters. */
  readonly command?: string;
  /** The working directory it runs in. */
  readonly cwd?: string;
  /** The shell's process group (its pid: the shell leads its own group); null when it never started. */
  readonly pgid?: number | null;
  /** Why it stopped, as the executor says it; `lost` when the executor no longer knew the process. */
  readonly reason?: StopReason | 'lost';
  /** True when part of the process tree outlived SIGTERM and was sent SIGKILL. */
  readonly escalated?: boolean;
  /** The strongest signal the executor sent the tree: `SIGKILL`, `SIGTERM`, or null when it sent none. */
  readonly killSignal?: 'SIGKILL' | 'SIGTERM' | null;
  /** Processes of the tree that received a signal. */
  readonly signalledProcesses?: number;
  /** Processes still alive when the executor gave up on them. */
  readonly survivors?: readonly number[];
  /** From spawn to stop, by the executor's clock. */
  readonly durationMs?: number;
  /** Why the command could not start, or why its output file failed. */
  readonly error?: string | null;
  /** The errno code behind `error` (`ENOENT`, `EACCES`, ...). */
  readonly errorCode?: string | null;
  /** The reason a caller gave when cancelling. */
  readonly cancelMessage?: string | null;
  /** The deadline that expired, for `timed_out`. */
  readonly timeoutMs?: number | null;
  /** The output file cap that was exceeded, for `output_limit`. */
  readonly outputLimitBytes?: number | null;
  /** The resource limits it runs under and how they are enforced (`cgroup-v1`, ...); absent without limits. */
  readonly limits?: LimitFacts;
  /** The resource limit it went past, for `memory_limit`, `cpu_limit` and `pids_limit`. */
  readonly limitBreach?: LimitBreach;
  /** The worker that runs (or ran) a remote command (`errand worker --name`); absent for local ones. */
  readonly worker?: string | null;
  /** A remote command's job key in Redis: what a resumed runtime re-attaches a durable one by. */
  readonly remoteJob?: string | null;
  /** Where the worker spills a remote command's whole output, on the worker's machine. */
  readonly workerOutputFile?: string | null;
}

/** A bash task's facts, typed; undefined for a task of another kind. */
export function bashFacts(snapshot: TaskSnapshot): BashFacts | undefined {
  return snapshot.kind === 'bash' ? (snapshot.detail as BashFacts) : undefined;
}
