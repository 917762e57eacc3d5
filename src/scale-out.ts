/**
 * `errand/redis`: scale-out through Redis. The Redis task provider, the worker, their options. Importing
 * this entry does not load `ioredis`: it is imported when a provider or worker starts.
 * `createErrandRuntime({ redis })` (`errand/host`) assembles the provider with remote bash commands.
 */
export { type RedisProviderOptions, redisProviderOptions } from './redis/redis-options.js';
export type { SentinelConnection } from './redis/redis-sentinel-url.js';
export {
  createRedisTaskService,
  RedisTaskService,
  type RedisTaskServiceOptions,
} from './redis/redis-task-service.js';
export { parseRedisUrl, type RedisTarget, redactRedisUrl } from './redis/redis-url.js';
export { ErrandWorker, startErrandWorker, WorkerNameInUseError } from './worker/errand-worker.js';
export { type ErrandWorkerOptions, errandWorkerOptions } from './worker/worker-options.js';
