/**
 * Task ids from Redis: every runtime of a deployment reserves blocks of numbers from one counter per
 * kind (`INCRBY`, guarded by a floor), so no two runtimes sharing a Redis hand out the same id. The
 * registry asks for numbers synchronously (`SequenceBlocks.reserve`); Redis answers asynchronously, so
 * before each start `ensure` makes sure the local pool holds a number for it and for every other start
 * in flight (refilling it with one `INCRBY` of at least `idBlockSize`), and `reserve` hands out one. Unused numbers of a disposed runtime are skipped, never reused: ids stay unique, not dense.
 */
import type { SequenceBlock, SequenceBlocks } from '../registry/index.js';
import { ErrandError, type TaskKind } from '../tasks/index.js';
import type { RedisContext } from './redis-context.js';

export class RedisIdBlocks implements SequenceBlocks {
  readonly #context: RedisContext;
  readonly #blockSize: number;
  readonly #floorOf: (kind: string) => number;
  /** Numbers reserved in Redis and not handed out yet, per kind, oldest first. */
  readonly #pool = new Map<string, SequenceBlock[]>();
  /** Starts between `ensure` and `settle`, per kind: each may take one number. */
  readonly #demand = new Map<string, number>();
  readonly #refills = new Map<string, Promise<void>>();

  constructor(context: RedisContext, blockSize: number, floorOf: (kind: string) => number = () => 0) {
    this.#context = context;
    this.#blockSize = blockSize;
    this.#floorOf = floorOf;
  }

  /**
   * Resolves once a number of `kind` is at hand for this start and every other one in flight (each
   * start between `ensure` and `settle` counts). Call `settle` right after the start's synchronous part.
   */
  async ensure(kind: TaskKind): Promise<void> {
    this.#demand.set(kind, (this.#demand.get(kind) ?? 0) + 1);
    try {
      while (this.#available(kind) < (this.#demand.get(kind) ?? 0)) {
        let refill = this.#refills.get(kind);
        if (refill === undefined) {
          refill = this.#fetch(kind).finally(() => this.#refills.delete(kind));
          this.#refills.set(kind, refill);
        }
        await refill;
      }
    } catch (error) {
      this.settle(kind);
      throw error;
    }
  }

  /** The start that `ensure` prepared for has taken its number (or did not need one). */
  settle(kind: TaskKind): void {
    const demand = (this.#demand.get(kind) ?? 1) - 1;
    if (demand <= 0) this.#demand.delete(kind);
    else this.#demand.set(kind, demand);
  }

  /** One number at a time, so the pool always knows what is left. */
  reserve(kind: TaskKind, after: number): SequenceBlock {
    const pool = this.#pool.get(kind) ?? [];
    while (pool.length > 0 && pool[0]!.last <= after) pool.shift();
    const block = pool[0];
    if (block === undefined) {
      throw new ErrandError(
        'TASK_IDS_UNAVAILABLE',
        'system',
        `No task ids of kind ${kind} were reserved from Redis in time`,
        {
          context: { kind },
        },
      );
    }
    const next = Math.max(block.first, after + 1);
    if (next === block.last) pool.shift();
    else pool[0] = { first: next + 1, last: block.last };
    return { first: next, last: next };
  }

  #available(kind: TaskKind): number {
    let count = 0;
    for (const block of this.#pool.get(kind) ?? []) count += block.last - block.first + 1;
    return count;
  }

  async #fetch(kind: TaskKind): Promise<void> {
    const floor = this.#floorOf(kind);
    const size = Math.max(this.#blockSize, (this.#demand.get(kind) ?? 0) - this.#available(kind));
    const last = Number(
      await this.#context.client.errandReserveIds(this.#context.keys.ids(kind), size, floor),
    );
    const pool = this.#pool.get(kind) ?? [];
    pool.push({ first: last - size + 1, last });
    this.#pool.set(kind, pool);
  }
}
