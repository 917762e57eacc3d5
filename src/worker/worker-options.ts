/** The options of `errand worker` (`startErrandWorker`). */
import { homedir } from 'node:os';
import { join } from 'node:path';
import { REDIS_NAME_PATTERN } from '../redis/redis-keys.js';
import { checkHeartbeat, redisProviderOptions } from '../redis/redis-options.js';
import { consoleLogger } from '../tasks/index.js';
import { defineOptions, type OptionsInput, option, type ResolvedOptions } from '../tasks/options.js';

const isName = (value: unknown) => typeof value === 'string' && REDIS_NAME_PATTERN.test(value);

export const errandWorkerOptions = defineOptions(
  'startErrandWorker',
  {
    url: redisProviderOptions.rules.url,
    prefix: redisProviderOptions.rules.prefix,
    /** The worker's name, unique among the live workers of a deployment. Default `<hostname>-<pid>`. */
    name: option.custom<string>('a worker name (letters, digits, _ . -; 1 to 64 characters)', isName, {
      fallback: () => `worker-${process.pid}`,
    }),
    /** The labels whose queues it takes jobs from. Default: none, the `default` queue only. */
    labels: option.list(
      option.custom<string>('a label (letters, digits, _ . -; 1 to 64 characters)', isName),
      { default: [] },
    ),
    /** How many commands it runs at once, per label. Default 8. */
    concurrency: option.integer({ min: 1, max: 1024, default: 8 }),
    /** Its data directory: the output spill files live in it. Default `$ERRAND_HOME/worker`, else `~/.errand/worker`. */
    home: option.string({
      withoutNul: true,
      fallback: () => join(process.env.ERRAND_HOME ?? join(homedir(), '.errand'), 'worker'),
    }),
    /** How often it beats its heartbeat and checks cancels and runtimes, in ms. Default 1000. */
    heartbeatMs: redisProviderOptions.rules.heartbeatMs,
    /** How long its heartbeat lives without a beat, in ms: past it, its running jobs are settled lost. Default 5000. */
    heartbeatTtlMs: redisProviderOptions.rules.heartbeatTtlMs,
    /** The most output bytes a job's stream keeps in Redis (the newest). Default 1 MiB. */
    maxStreamBytes: redisProviderOptions.rules.maxStreamBytes,
    /** The output file cap of one command (past it the command is killed, `output_limit`). Default 1 GiB. */
    maxOutputFileBytes: option.integer({ min: 1, default: 1024 * 1024 * 1024 }),
    /** How long output may wait before it is streamed, coalescing small writes, in ms. Default 10. */
    outputFlushMs: option.integer({ min: 0, max: 10_000, default: 10 }),
    /** How many finished commands' spill files it keeps. Default 64. */
    keepOutputFiles: option.integer({ min: 0, default: 64 }),
    /** How long a settled job's record stays in Redis unless its runtime deletes it first, in ms. Default 3600000. */
    settledRetentionMs: redisProviderOptions.rules.settledRetentionMs,
    /** On SIGTERM, how long running commands may still finish before they are cancelled, in ms. Default 30000. */
    drainTimeoutMs: option.integer({ min: 0, default: 30_000 }),
    /** The lifeline sidecar that stops every command's tree when the worker dies (Linux). Default true. */
    lifeline: option.boolean({ default: true }),
    logger: option.logger({ default: consoleLogger }),
  },
  { check: checkHeartbeat },
);

export type ErrandWorkerOptions = OptionsInput<typeof errandWorkerOptions.rules>;
export type ResolvedWorkerOptions = ResolvedOptions<typeof errandWorkerOptions.rules>;
