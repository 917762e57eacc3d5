/**
 * Task ids from Redis: every runtime of a deployment reserves blocks of numbers from one counter per
 * kind (`INCRBY`, guarded by a floor), so no two runtimes sharing a Redis hand out the same id. The
 * registry asks for blocks synchronously (`SequenceBlocks.reserve`); Redis answers asynchronously, so a
 * spare block per kind is fetched before each start that might need it (`ensure`), and `reserve` hands
 * it over. Unused numbers of a disposed runtime are skipped, never reused: ids stay unique, not dense.
 */
import type { SequenceBlock, SequenceBlocks } from '../registry/index.js';
import { ErrandError, type TaskKind } from '../tasks/index.js';
import type { RedisContext } from './redis-context.js';

export class RedisIdBlocks implements SequenceBlocks {
  readonly #context: RedisContext;
  readonly #blockSize: number;
  readonly #floors: Readonly<Record<string, number | undefined>>;
  readonly #spare = new Map<string, SequenceBlock>();
  readonly #refills = new Map<string, Promise<void>>();

  constructor(
    context: RedisContext,
    blockSize: number,
    floors: Readonly<Record<string, number | undefined>> = {},
  ) {
    this.#context = context;
    this.#blockSize = blockSize;
    this.#floors = floors;
  }

  /** Resolves once a spare block of `kind` is at hand, so the next `reserve` of it succeeds. */
  async ensure(kind: TaskKind): Promise<void> {
    while (!this.#spare.has(kind)) {
      let refill = this.#refills.get(kind);
      if (refill === undefined) {
        refill = this.#fetch(kind).finally(() => this.#refills.delete(kind));
        this.#refills.set(kind, refill);
      }
      await refill;
    }
  }

  reserve(kind: TaskKind, after: number): SequenceBlock {
    const block = this.#spare.get(kind);
    this.#spare.delete(kind);
    if (block === undefined || block.last <= after) {
      throw new ErrandError(
        'TASK_IDS_UNAVAILABLE',
        'system',
        `No task ids of kind ${kind} were reserved from Redis in time`,
        {
          context: { kind },
        },
      );
    }
    return block.first > after ? block : { first: after + 1, last: block.last };
  }

  async #fetch(kind: TaskKind): Promise<void> {
    const floor = this.#floors[kind] ?? 0;
    const last = Number(
      await this.#context.client.errandReserveIds(this.#context.keys.ids(kind), this.#blockSize, floor),
    );
    this.#spare.set(kind, { first: last - this.#blockSize + 1, last });
  }
}
