/** The options of the Redis task provider (`createErrandRuntime({ redis })`, `createRedisTaskService`). */
import { InvalidArgumentError } from '../tasks/index.js';
import { defineOptions, type OptionsInput, option, type ResolvedOptions } from '../tasks/options.js';
import { REDIS_NAME_PATTERN } from './redis-keys.js';
import { parseRedisUrl } from './redis-url.js';

const name = (what: string, fallback: string) =>
  option.custom<string>(
    `${what} (letters, digits, _ . -; 1 to 64 characters)`,
    (value) => typeof value === 'string' && REDIS_NAME_PATTERN.test(value),
    { default: fallback },
  );

export const redisProviderOptions = defineOptions(
  'createErrandRuntime',
  {
    /**
     * `redis://[user:password@]host:port[/db]`, `rediss://…` (TLS), or
     * `redis+sentinel://[user:password@]host[:port][,host[:port]…]/<master name>[/<db>]`: the primary of a
     * Sentinel-monitored group, found through its sentinels and followed across a failover (a malformed
     * one: `REDIS_SENTINEL_URL_INVALID`). Never logged: messages show it redacted.
     */
    url: option.required(
      option.custom<string>('a redis://, rediss:// or redis+sentinel:// URL', (value, path) => {
        // Throws itself, naming the URL only in its redacted form.
        parseRedisUrl(value, path);
        return true;
      }),
    ),
    /** The deployment's key prefix: runtimes and workers of one deployment share it. Default `errand`. */
    prefix: name('a key prefix', 'errand'),
    /** The label whose workers run this runtime's background commands (`errand worker --labels`). Default `default`. */
    label: name('a label', 'default'),
    /** How often the runtime beats its heartbeat and checks its remote jobs, in ms. Default 1000. */
    heartbeatMs: option.integer({ min: 10, max: 60_000, default: 1000 }),
    /**
     * How long a heartbeat (the runtime's, and the one it reads of each worker) lives without a beat, in ms;
     * a worker silent this long has its running jobs settled `lost`. Default 5000; above `heartbeatMs`.
     */
    heartbeatTtlMs: option.integer({ min: 20, max: 600_000, default: 5000 }),
    /** The most output bytes a job's stream keeps in Redis (its newest; the worker's file keeps all). Default 1 MiB. */
    maxStreamBytes: option.integer({ min: 4096, max: 512 * 1024 * 1024, default: 1024 * 1024 }),
    /** How many task ids one reservation takes from Redis. Default 20. */
    idBlockSize: option.integer({ min: 1, max: 100_000, default: 20 }),
    /** How long a settled job's record stays in Redis when its runtime does not delete it first, in ms. Default 3600000. */
    settledRetentionMs: option.integer({ min: 1000, default: 3_600_000 }),
  },
  { check: checkHeartbeat },
);

export type RedisProviderOptions = OptionsInput<typeof redisProviderOptions.rules>;
export type ResolvedRedisProviderOptions = ResolvedOptions<typeof redisProviderOptions.rules>;

/** A heartbeat's time to live must outlast its interval (the provider's and the worker's check). */
export function checkHeartbeat(
  resolved: { readonly heartbeatMs: number; readonly heartbeatTtlMs: number },
  path: (key: 'heartbeatTtlMs') => string,
): void {
  if (resolved.heartbeatTtlMs <= resolved.heartbeatMs) {
    throw new InvalidArgumentError(
      path('heartbeatTtlMs'),
      `more than heartbeatMs (${resolved.heartbeatMs})`,
      resolved.heartbeatTtlMs,
    );
  }
}
