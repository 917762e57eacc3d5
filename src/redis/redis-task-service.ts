/**
 * The Redis task provider: the in-process registry fronting work that runs elsewhere. Who owns what:
 *
 * - the registry (this process) owns ids' use, owners and authorization, claims, waiters, cursors and
 *   the change feed — the guarantees the conformance suite checks hold exactly as in-process, because
 *   they are decided in one place, by the runtime whose sessions the tasks belong to;
 * - Redis owns what must be shared: the id counters (blocks, so ids are unique across every runtime of a
 *   deployment), and — through the remote bash commands (`remote-commands.ts`) — each remote job's
 *   state, its cancel request, its output stream and its one settlement.
 *
 * `start` first makes sure an id block of the task's kind is at hand (one Redis round trip when the
 * spare block was used up), then registers synchronously like the in-process provider.
 */
import { createTaskService, type TaskServiceOptions } from '../registry/index.js';
import {
  type BackgroundListing,
  type BackgroundWaitResult,
  backgroundListingOf,
  type Caller,
  type ControllerScope,
  consoleLogger,
  type Disposer,
  isValidTaskKind,
  type KillOptions,
  type Logger,
  type OnTaskDoneOptions,
  type OnTasksChangedOptions,
  type OpenCursorOptions,
  type OutputCursor,
  type ReleaseClaimOptions,
  type StopInitiator,
  type TaskChangeListener,
  type TaskDoneListener,
  type TaskFacts,
  type TaskKind,
  type TaskReadResult,
  type TaskService,
  type TaskSnapshot,
  type TaskSpec,
} from '../tasks/index.js';
import { RedisContext } from './redis-context.js';
import { RedisIdBlocks } from './redis-id-blocks.js';
import { type RedisProviderOptions, redisProviderOptions } from './redis-options.js';

export interface RedisTaskServiceOptions extends Omit<TaskServiceOptions, 'sequenceBlocks'> {
  readonly redis: RedisProviderOptions;
}

export class RedisTaskService implements TaskService {
  readonly #inner: TaskService;
  readonly #ids: RedisIdBlocks;
  readonly #onDispose: () => Promise<void>;
  #disposal: Promise<void> | undefined;
  #disposing = false;

  constructor(inner: TaskService, ids: RedisIdBlocks, onDispose: () => Promise<void>) {
    this.#inner = inner;
    this.#ids = ids;
    this.#onDispose = onDispose;
  }

  start(spec: TaskSpec): Promise<TaskSnapshot>;
  start<F extends TaskFacts>(spec: TaskSpec<NoInfer<F>>): Promise<TaskSnapshot<F>>;
  start(spec: TaskSpec): Promise<TaskSnapshot> {
    const kind = (spec as { kind?: unknown } | null)?.kind;
    // A spec the registry refuses anyway costs no reservation; a resume keeps its id.
    if (!this.#disposing && isValidTaskKind(kind) && spec.resumeId === undefined) {
      return this.#startWithId(spec, kind);
    }
    const started = this.#inner.start(spec);
    // Refused during disposal: the caller reads the refusal whenever it awaits, as with the in-process
    // provider, even though closing the connection makes the disposal outlast this tick.
    if (this.#disposing) started.catch(() => {});
    return started;
  }

  async #startWithId(spec: TaskSpec, kind: TaskKind): Promise<TaskSnapshot> {
    await this.#ids.ensure(kind);
    // The registration's synchronous part takes the number (or refuses before needing one).
    const started = this.#inner.start(spec);
    this.#ids.settle(kind);
    return started;
  }

  get(id: string, caller?: Caller): TaskSnapshot {
    return this.#inner.get(id, caller);
  }

  list(caller?: Caller): TaskSnapshot[] {
    return this.#inner.list(caller);
  }

  listBackground(caller: Caller, max: number): BackgroundListing {
    return this.#inner.listBackground?.(caller, max) ?? backgroundListingOf(this.#inner.list(caller), max);
  }

  read(id: string, caller?: Caller): Promise<TaskReadResult> {
    return this.#inner.read(id, caller);
  }

  kill(id: string, caller?: Caller, reason?: string, options?: KillOptions): Promise<TaskSnapshot> {
    return this.#inner.kill(id, caller, reason, options);
  }

  openCursor(id: string, caller?: Caller, options?: OpenCursorOptions): Promise<OutputCursor> {
    return this.#inner.openCursor(id, caller, options);
  }

  wait(id: string, timeoutMs: number, caller?: Caller, signal?: AbortSignal): Promise<TaskSnapshot> {
    return this.#inner.wait(id, timeoutMs, caller, signal);
  }

  onTaskDone(listener: TaskDoneListener, options?: OnTaskDoneOptions): Disposer {
    return this.#inner.onTaskDone(listener, options);
  }

  onTasksChanged(listener: TaskChangeListener, options?: OnTasksChangedOptions): Disposer {
    return this.#inner.onTasksChanged(listener, options);
  }

  attachController(name: string, scope?: ControllerScope): Disposer {
    return this.#inner.attachController(name, scope);
  }

  claim(id: string, caller?: Caller): boolean {
    return this.#inner.claim(id, caller);
  }

  releaseClaim(id: string, caller?: Caller, options?: ReleaseClaimOptions): void {
    this.#inner.releaseClaim(id, caller, options);
  }

  requestBackground(id: string, caller?: Caller): TaskSnapshot {
    return this.#inner.requestBackground(id, caller);
  }

  waitForBackground(id: string, caller?: Caller, signal?: AbortSignal): Promise<BackgroundWaitResult> {
    return this.#inner.waitForBackground(id, caller, signal);
  }

  setStopInitiator(id: string, initiator: StopInitiator, caller?: Caller): TaskSnapshot {
    return this.#inner.setStopInitiator(id, initiator, caller);
  }

  sendMessage(id: string, message: string, caller?: Caller): TaskSnapshot {
    return this.#inner.sendMessage(id, message, caller);
  }

  dispose(): Promise<void> {
    // Set before the registry's disposal runs: a start its listeners make meanwhile goes straight to the
    // registry, which refuses it at once, as the in-process provider does.
    this.#disposing = true;
    this.#disposal ??= (async () => {
      try {
        await this.#inner.dispose();
      } finally {
        await this.#onDispose();
      }
    })();
    return this.#disposal;
  }
}

/**
 * The task service of a runtime on `context`: ids reserved in Redis (continuing above `initialSequences`),
 * everything else as the in-process provider. Disposing it leaves `context` open (its owner closes it).
 */
export function redisTaskServiceOn(
  context: RedisContext,
  blockSize: number,
  options: Omit<TaskServiceOptions, 'sequenceBlocks'> = {},
  floorOf: (kind: string) => number = floorsOf(options.initialSequences),
): RedisTaskService {
  const ids = new RedisIdBlocks(context, blockSize, floorOf);
  const inner = createTaskService({ ...options, sequenceBlocks: ids });
  return new RedisTaskService(inner, ids, async () => {});
}

/**
 * A Redis task provider on its own connection (closed when it is disposed). Throws `INVALID_ARGUMENT`
 * for bad `redis` options (the URL shown redacted) and `REDIS_PACKAGES_MISSING` without the client packages.
 */
export async function createRedisTaskService(options: RedisTaskServiceOptions): Promise<RedisTaskService> {
  const { redis, ...taskOptions } = options;
  const resolved = redisProviderOptions.resolve(redis, { where: 'createRedisTaskService', path: 'redis' });
  const logger: Logger = (taskOptions.logger as Logger | undefined) ?? consoleLogger;
  const context = await RedisContext.open(resolved.url, resolved.prefix, logger);
  const ids = new RedisIdBlocks(context, resolved.idBlockSize, floorsOf(taskOptions.initialSequences));
  const inner = createTaskService({ ...taskOptions, sequenceBlocks: ids });
  return new RedisTaskService(inner, ids, () => context.close());
}

/** Reserved ids continue above `initialSequences` (none: from 1). */
function floorsOf(initial: Readonly<Partial<Record<string, number>>> | undefined): (kind: string) => number {
  return (kind) => initial?.[kind] ?? 0;
}
