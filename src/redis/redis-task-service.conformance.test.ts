/** The Redis task provider against the same TaskService conformance suite as the in-process one. */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { findRedisServer, startTestRedis, type TestRedis } from '../../test/support/redis-server.js';
import { describeTaskServiceConformance } from '../testing/index.js';
import { createRedisTaskService } from './redis-task-service.js';

const redisServer = findRedisServer();

describe.skipIf(redisServer === undefined)('the Redis task provider', () => {
  let redis: TestRedis;
  let deployment = 0;
  beforeAll(async () => {
    redis = await startTestRedis(redisServer!);
  });
  afterAll(async () => {
    await redis?.stop();
  });
  // Each case gets a deployment of its own (a fresh prefix): ids start at 1, as the suite expects.
  describeTaskServiceConformance(
    { describe, it },
    async (setup) => ({
      tasks: await createRedisTaskService({
        ...setup,
        redis: { url: redis.url, prefix: `conformance${++deployment}` },
      }),
    }),
    { name: 'RedisTaskService conformance' },
  );
});
