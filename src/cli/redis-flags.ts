/** The `--redis` flags `errand mcp`, `errand chat` and `errand worker` share. */
import { parseRedisUrl } from '../redis/redis-url.js';
import { ErrandError } from '../tasks/errors.js';
import { type FlagSpecs, UsageError } from './args.js';

export const REDIS_FLAGS: FlagSpecs = {
  redis: {
    type: 'string',
    placeholder: '<url>',
    description:
      'run background commands on errand workers through this Redis (redis://, rediss://, or redis+sentinel://host:port,host:port/<master> to follow a Sentinel failover; credentials allowed, never printed)',
  },
  'redis-prefix': {
    type: 'string',
    placeholder: '<prefix>',
    description: "the deployment's key prefix in Redis (needs --redis; default errand)",
  },
};

/** The runtime's `redis` option from the flags, or undefined; a bad URL is a usage error naming it redacted. */
export function redisOption(
  values: Readonly<Record<string, unknown>>,
): { url: string; prefix?: string } | undefined {
  if (values['redis-prefix'] !== undefined && values.redis === undefined) {
    throw new UsageError('`--redis-prefix` is a Redis setting: add `--redis <url>`');
  }
  if (typeof values.redis !== 'string') return undefined;
  try {
    parseRedisUrl(values.redis, '--redis');
  } catch (error) {
    throw new UsageError(
      ErrandError.isInstance(error) ? error.message : 'Expected `--redis` to be a Redis URL',
    );
  }
  return {
    url: values.redis,
    ...(typeof values['redis-prefix'] === 'string' ? { prefix: values['redis-prefix'] } : {}),
  };
}
