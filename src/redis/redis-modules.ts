/**
 * The Redis client package, loaded only when Redis is configured: `ioredis` is an optional dependency,
 * so an Errand that never scales out never loads (or needs) it. A configured `redis` without it fails
 * with `REDIS_PACKAGES_MISSING`, naming the package. (The queue is Errand's own: `redis-scripts.ts`.)
 */
import type * as IORedis from 'ioredis';
import { ErrandError } from '../tasks/index.js';
import type { RedisTarget } from './redis-url.js';
import { scrubSecrets } from './redis-url.js';

export type RedisClient = IORedis.Redis;

export interface RedisModules {
  readonly Redis: typeof IORedis.Redis;
}

export class RedisPackagesMissingError extends ErrandError {
  constructor(cause: unknown) {
    super(
      'REDIS_PACKAGES_MISSING',
      'system',
      'Redis is configured but its client package is missing: install it with `npm install ioredis@6.0.0`',
      { cause, context: { packages: ['ioredis'] } },
    );
  }
}

let loading: Promise<RedisModules> | undefined;

/** Loads `ioredis` once. Throws `REDIS_PACKAGES_MISSING` when it cannot be imported. */
export function loadRedisModules(): Promise<RedisModules> {
  loading ??= (async () => {
    try {
      const ioredis = await import('ioredis');
      return { Redis: ioredis.Redis };
    } catch (error) {
      loading = undefined;
      throw new RedisPackagesMissingError(error);
    }
  })();
  return loading;
}

/** What a connection is for, as warnings name it. */
export interface ConnectionSettings {
  readonly role: string;
  /** Warned about connection errors, with credentials scrubbed. */
  readonly warn: (message: string, context?: Record<string, unknown>) => void;
}

/**
 * Opens a client on `target` that retries forever (commands wait for the reconnect: what BullMQ's
 * blocking connections require) and reports connection errors once per outage, scrubbed.
 */
export function openRedis(
  modules: RedisModules,
  target: RedisTarget,
  settings: ConnectionSettings,
): RedisClient {
  const settingsOfClient = {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    // Reconnect quickly first, then at most every second.
    retryStrategy: (times: number) => Math.min(50 * times, 1000),
    lazyConnect: false,
  };
  const client = target.sentinel
    ? new modules.Redis({ ...sentinelOptions(target), ...settingsOfClient })
    : new modules.Redis(target.url, settingsOfClient);
  let reported = false;
  client.on('error', (error: Error) => {
    if (reported) return;
    reported = true;
    settings.warn(
      `Redis connection (${settings.role}) to ${target.redacted} failed: ${scrubSecrets(error.message, target)}; retrying`,
    );
  });
  client.on('ready', () => {
    reported = false;
  });
  return client;
}

/**
 * ioredis's options for a `redis+sentinel://` target: the sentinels and the group (asked for the
 * primary at every connect, so a connection the dead primary closed reconnects to the promoted one),
 * and a reconnect on `READONLY` (a primary demoted to a replica under a connection: the command is sent
 * again to the new primary). Not ioredis's `failoverDetector`: a switch it hears while the client is
 * connecting again (the old primary dead, the sentinels not yet agreed) ends the client for good
 * ("Connection is closed." on every command after), which the failover test caught.
 */
export function sentinelOptions(target: RedisTarget): Record<string, unknown> {
  const sentinel = target.sentinel!;
  return {
    sentinels: sentinel.sentinels.map((entry) => ({ ...entry })),
    name: sentinel.name,
    ...(sentinel.username !== undefined ? { username: sentinel.username } : {}),
    ...(sentinel.password !== undefined ? { password: sentinel.password } : {}),
    ...(sentinel.db !== undefined ? { db: sentinel.db } : {}),
    sentinelRetryStrategy: (times: number) => Math.min(50 * times, 1000),
    reconnectOnError: (error: Error) => (error.message.startsWith('READONLY') ? 2 : false),
  };
}
