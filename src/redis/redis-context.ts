/**
 * One process's link to a deployment's Redis: the checked URL, the key names, a command connection with
 * the settle scripts loaded, and more connections on demand (a blocking read needs one of its own).
 */
import type { Logger } from '../tasks/index.js';
import { RedisKeys } from './redis-keys.js';
import { loadRedisModules, openRedis, type RedisClient, type RedisModules } from './redis-modules.js';
import {
  ADOPT_SCRIPT,
  CANCEL_SCRIPT,
  CLAIM_SCRIPT,
  DISPATCH_SCRIPT,
  FINISH_SCRIPT,
  LOST_SCRIPT,
  RESERVE_IDS_SCRIPT,
  TRIM_QUEUE_SCRIPT,
} from './redis-scripts.js';
import { parseRedisUrl, type RedisTarget } from './redis-url.js';

type ScriptResult = Promise<string | number>;

/** The scripts, as commands of the connection (`defineCommand`: sent once, then run by hash). */
export interface ErrandScripts {
  errandDispatch(job: string, queue: string, ...args: (string | number)[]): ScriptResult;
  errandTrimQueue(queue: string, group: string): Promise<string | null>;
  errandClaim(
    job: string,
    events: string,
    runtimeAlive: string,
    queue: string,
    ...args: (string | number)[]
  ): ScriptResult;
  errandFinish(job: string, events: string, ...args: (string | number | Buffer)[]): ScriptResult;
  errandCancel(job: string, events: string, ...args: (string | number)[]): ScriptResult;
  errandLost(job: string, events: string, workerAlive: string, ...args: (string | number)[]): ScriptResult;
  errandAdopt(job: string, events: string, runtime: string): Promise<Array<string | null>>;
  errandReserveIds(counter: string, ...args: (string | number)[]): ScriptResult;
}

export type ScriptedClient = RedisClient & ErrandScripts;

export class RedisContext {
  readonly modules: RedisModules;
  readonly target: RedisTarget;
  readonly keys: RedisKeys;
  readonly client: ScriptedClient;
  readonly logger: Logger;
  readonly #extra = new Set<RedisClient>();

  private constructor(modules: RedisModules, target: RedisTarget, prefix: string, logger: Logger) {
    this.modules = modules;
    this.target = target;
    this.keys = new RedisKeys(prefix);
    this.logger = logger;
    this.client = this.#open('commands') as ScriptedClient;
    this.client.defineCommand('errandDispatch', { numberOfKeys: 2, lua: DISPATCH_SCRIPT });
    this.client.defineCommand('errandClaim', { numberOfKeys: 4, lua: CLAIM_SCRIPT });
    this.client.defineCommand('errandTrimQueue', { numberOfKeys: 1, lua: TRIM_QUEUE_SCRIPT });
    this.client.defineCommand('errandFinish', { numberOfKeys: 2, lua: FINISH_SCRIPT });
    this.client.defineCommand('errandCancel', { numberOfKeys: 2, lua: CANCEL_SCRIPT });
    this.client.defineCommand('errandLost', { numberOfKeys: 3, lua: LOST_SCRIPT });
    this.client.defineCommand('errandAdopt', { numberOfKeys: 2, lua: ADOPT_SCRIPT });
    this.client.defineCommand('errandReserveIds', { numberOfKeys: 1, lua: RESERVE_IDS_SCRIPT });
  }

  /** Loads the client packages (`REDIS_PACKAGES_MISSING` without them) and connects. */
  static async open(url: string, prefix: string, logger: Logger): Promise<RedisContext> {
    const target = parseRedisUrl(url);
    const modules = await loadRedisModules();
    return new RedisContext(modules, target, prefix, logger);
  }

  /** Another connection (for a blocking read or a subscription), closed with the context. */
  connect(role: string): RedisClient {
    const client = this.#open(role);
    this.#extra.add(client);
    return client;
  }

  async close(): Promise<void> {
    const clients = [this.client, ...this.#extra];
    this.#extra.clear();
    await Promise.all(
      clients.map(async (client) => {
        try {
          await client.quit();
        } catch {
          client.disconnect();
        }
      }),
    );
  }

  #open(role: string): RedisClient {
    return openRedis(this.modules, this.target, {
      role,
      warn: (message, context) => this.logger.warn(message, context),
    });
  }
}
