/**
 * Remote jobs as a dashboard over a data directory sees them (`errand serve --redis`): a job's output
 * read from its Redis stream, its state from its record, and a Stop that records the cancel on the job
 * through the cancel script (its worker kills the tree; a job no worker took yet is settled there and
 * then). It follows no events stream: it reads records when asked. Implements the server's
 * `RemoteWorkAccess` port.
 */
import type { Clock } from '../tasks/clock.js';
import type { TaskOutputChunk } from '../tasks/index.js';
import type { RedisContext } from './redis-context.js';
import { readStreamRange, unrunFacts } from './remote-commands.js';

type JobState = 'queued' | 'running' | 'ended' | 'killed' | 'lost' | 'gone';

/** A job's state as its record tells it, with the exit code and reason of one that ended. */
export interface KnownJob {
  readonly state: JobState;
  readonly exitCode?: number | null;
  readonly reason?: string | null;
  readonly error?: string | null;
}

const JOB_STATES: ReadonlySet<string> = new Set(['queued', 'running', 'ended', 'killed', 'lost']);
/** Job states remembered at most (the oldest is forgotten first). */
const MAX_KNOWN_STATES = 10_000;

export interface RedisWorkAccess {
  openOutput(job: string): Promise<RedisJobOutput | undefined>;
  knownState(job: string): KnownJob | undefined;
  cancel(job: string, reason: string): Promise<'requested' | 'settled' | 'ended' | 'gone'>;
}

export interface RedisJobOutput {
  readonly end: number;
  readonly retainedFrom: number;
  readonly location: string | undefined;
  read(offset: number, maxBytes: number): Promise<TaskOutputChunk>;
  onGrow(listener: () => void): () => void;
  refresh(): Promise<void>;
}

export interface RedisWorkAccessOptions {
  /** How long the cancel script keeps a job it settles (the deployment's `settledRetentionMs`). */
  readonly settledRetentionMs: number;
  readonly clock: Clock;
}

export function createRedisWorkAccess(
  context: RedisContext,
  options: RedisWorkAccessOptions,
): RedisWorkAccess {
  const { client, keys } = context;
  const known = new Map<string, KnownJob>();
  const reading = new Set<string>();
  const remember = (job: string, facts: KnownJob) => {
    known.delete(job);
    known.set(job, facts);
    if (known.size > MAX_KNOWN_STATES) known.delete(known.keys().next().value!);
  };
  const readState = async (job: string): Promise<JobState> => {
    const [state, facts] = await client.hmget(keys.job(job), 'state', 'facts');
    const shown: JobState = state !== null && JOB_STATES.has(state) ? (state as JobState) : 'gone';
    remember(job, { state: shown, ...exitOf(facts) });
    return shown;
  };
  return {
    async openOutput(job) {
      let end = 0;
      let retainedFrom = 0;
      let worker: string | undefined;
      const refresh = async () => {
        try {
          const [state, recordedEnd, from, recordedWorker] = await client.hmget(
            keys.job(job),
            'state',
            'end',
            'retainedFrom',
            'worker',
          );
          if (state === 'queued' || state === 'running') remember(job, { state });
          end = Math.max(end, Number(recordedEnd ?? 0));
          retainedFrom = Math.min(end, Math.max(retainedFrom, Number(from ?? 0)));
          worker = recordedWorker ?? worker;
        } catch {
          // Redis is away: the last values stand.
        }
      };
      if ((await readState(job).catch(() => 'gone' as const)) === 'gone') return undefined;
      await refresh();
      return {
        get end() {
          return end;
        },
        get retainedFrom() {
          return retainedFrom;
        },
        get location() {
          return worker === undefined ? undefined : `worker ${worker}`;
        },
        read: (offset, maxBytes) =>
          readStreamRange(context.client, context.keys.output(job), offset, Math.min(maxBytes, end - offset)),
        onGrow: () => () => {},
        refresh,
      };
    },
    knownState(job) {
      if (!reading.has(job)) {
        reading.add(job);
        void readState(job)
          .catch(() => undefined)
          .finally(() => reading.delete(job));
      }
      return known.get(job);
    },
    async cancel(job, reason) {
      const runtime = await client.hget(keys.job(job), 'runtime');
      if (runtime === null) return 'gone';
      const now = options.clock.now();
      const result = await client.errandCancel(
        keys.job(job),
        keys.runtimeEvents(runtime),
        reason,
        JSON.stringify(unrunFacts(now, now, { reason: 'cancelled', cancelMessage: reason })),
        options.settledRetentionMs,
        job,
        keys.cancelChannel,
      );
      void readState(job).catch(() => undefined);
      return result === 'requested' || result === 'settled' || result === 'ended' ? result : 'gone';
    },
  };
}

/** The exit code, reason and error a settled job's facts hold. */
function exitOf(facts: string | null): Omit<KnownJob, 'state'> {
  if (facts === null) return {};
  try {
    const parsed = JSON.parse(facts) as Record<string, unknown>;
    return {
      exitCode: typeof parsed.exitCode === 'number' ? parsed.exitCode : null,
      reason: typeof parsed.reason === 'string' ? parsed.reason : null,
      error:
        typeof parsed.lost === 'string'
          ? parsed.lost
          : typeof parsed.error === 'string'
            ? parsed.error
            : typeof parsed.cancelMessage === 'string'
              ? parsed.cancelMessage
              : null,
    };
  } catch {
    return {};
  }
}
