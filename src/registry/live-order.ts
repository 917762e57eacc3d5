/**
 * A session's live tasks in the order `list` gives them (registration order), as a doubly linked list
 * kept as tasks start and end, so that a bounded listing walks from the newest and stops after as many
 * as it shows: `task_list` costs the same with 100 or 100k live tasks. A task started again (a resume)
 * goes back to its place, found from the newest end (a resumed task is usually among the newest).
 */
export interface LiveOrdered {
  /** The registration order: increasing, never reused. */
  readonly listOrder: number;
  livePrevious: this | undefined;
  liveNext: this | undefined;
  inLiveOrder: boolean;
}

export class LiveOrder<Item extends LiveOrdered> {
  #newest: Item | undefined;
  #oldest: Item | undefined;

  add(item: Item): void {
    if (item.inLiveOrder) return;
    item.inLiveOrder = true;
    let before = this.#newest;
    while (before !== undefined && before.listOrder > item.listOrder) before = before.livePrevious;
    item.livePrevious = before;
    item.liveNext = before === undefined ? this.#oldest : before.liveNext;
    if (before === undefined) this.#oldest = item;
    else before.liveNext = item;
    if (item.liveNext === undefined) this.#newest = item;
    else item.liveNext.livePrevious = item;
  }

  delete(item: Item): void {
    if (!item.inLiveOrder) return;
    item.inLiveOrder = false;
    if (item.livePrevious === undefined) this.#oldest = item.liveNext;
    else item.livePrevious.liveNext = item.liveNext;
    if (item.liveNext === undefined) this.#newest = item.livePrevious;
    else item.liveNext.livePrevious = item.livePrevious;
    item.livePrevious = undefined;
    item.liveNext = undefined;
  }

  /** From the newest to the oldest; stop early to pay only for what was read. */
  *newestFirst(): IterableIterator<Item> {
    for (let item = this.#newest; item !== undefined; item = item.livePrevious) yield item;
  }
}
