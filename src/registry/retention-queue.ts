/**
 * A FIFO of finished task records with O(1) amortized add, forget and evict-oldest. (A Set's first
 * element costs O(deleted entries) to reach after many deletions, which made retention the hot spot.)
 */
export interface Retainable {
  retained: boolean;
  /**
   * The index of the item's current slot. An item forgotten and added again (a task resumed, then
   * ended) has two slots; only this one counts, so it is iterated once and evicted by its last end.
   */
  retainedAt: number;
}

export class RetentionQueue<Item extends Retainable> {
  #items: Item[] = [];
  #head = 0;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  add(item: Item): void {
    if (item.retained) return;
    item.retained = true;
    item.retainedAt = this.#items.length;
    this.#items.push(item);
    this.#size += 1;
  }

  /** Forgets an item wherever it is; its slot is skipped later. */
  delete(item: Item): void {
    if (!item.retained) return;
    item.retained = false;
    this.#size -= 1;
    // Bound the skipped slots: compact once they outnumber the live ones.
    if (this.#items.length - this.#head > 2 * this.#size + 64) this.#compact();
  }

  /** Removes and returns the oldest item. */
  shift(): Item | undefined {
    while (this.#head < this.#items.length) {
      const item = this.#items[this.#head]!;
      this.#head += 1;
      if (item.retained && item.retainedAt === this.#head - 1) {
        item.retained = false;
        this.#size -= 1;
        if (this.#head > 1024 && this.#head * 2 > this.#items.length) this.#compact();
        return item;
      }
    }
    return undefined;
  }

  *[Symbol.iterator](): IterableIterator<Item> {
    for (let index = this.#head; index < this.#items.length; index += 1) {
      const item = this.#items[index]!;
      if (item.retained && item.retainedAt === index) yield item;
    }
  }

  #compact(): void {
    const items: Item[] = [];
    for (let index = this.#head; index < this.#items.length; index += 1) {
      const item = this.#items[index]!;
      if (!item.retained || item.retainedAt !== index) continue;
      item.retainedAt = items.length;
      items.push(item);
    }
    this.#items = items;
    this.#head = 0;
  }
}
