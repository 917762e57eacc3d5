/**
 * What the store-backed dashboard needs of work that runs on workers (a task record naming a
 * `remoteJob`): its output, read where it lives (a Redis stream; the output file is on the worker's
 * machine), its job's state, and a Stop that reaches the worker when no runtime holds the work. The Redis
 * provider implements it (`createRedisWorkAccess`); the dashboard knows only this port.
 */
import type { TaskOutputStream } from '../tasks/index.js';

/** A job's output stream whose `end` and `retainedFrom` are as of the last `refresh()`. */
export interface RefreshedOutputStream extends TaskOutputStream {
  /** Reads the stream's end and retained start again. Never throws: an unreachable Redis keeps the last. */
  refresh(): Promise<void>;
}

/** The state of a remote job as its record tells it: `queued`, `running`, a terminal state, or gone. */
export type RemoteJobState = 'queued' | 'running' | 'ended' | 'killed' | 'lost' | 'gone';

export interface KnownRemoteJob {
  readonly state: RemoteJobState;
  readonly exitCode?: number | null;
  readonly reason?: string | null;
  readonly error?: string | null;
}

/** What a Stop through the job's record did. */
export type RemoteCancelResult = 'requested' | 'settled' | 'ended' | 'gone';

export interface RemoteWorkAccess {
  /** The job's output stream, refreshed once; undefined when Redis holds no record of the job. */
  openOutput(job: string): Promise<RefreshedOutputStream | undefined>;
  /**
   * The job's state as last read (with the exit code, reason and error of one that ended), and a new
   * read started for next time (the dashboard's poll is synchronous); undefined until a read answered.
   */
  knownState(job: string): KnownRemoteJob | undefined;
  /** Records a cancel on the job (its worker kills the tree), or settles a job no worker took yet. */
  cancel(job: string, reason: string): Promise<RemoteCancelResult>;
}

/** The job key a task record names, when its work runs on a worker. */
export function remoteJobOf(detail: object): string | undefined {
  const job = (detail as { readonly remoteJob?: unknown }).remoteJob;
  return typeof job === 'string' && job !== '' ? job : undefined;
}
