/** A bounded ring of the newest events, so a reconnecting viewer replays what it missed. */

export type ReplayResult<Event> =
  | { readonly kind: 'events'; readonly events: readonly Event[] }
  | {
      readonly kind: 'reset';
      /** `too_far_behind`: the ring no longer holds the next event; `unknown_id`: an id this feed never issued. */
      readonly reason: 'too_far_behind' | 'unknown_id';
    };

export class EventRing<Event extends { readonly id: number }> {
  readonly #capacity: number;
  readonly #slots: (Event | undefined)[];
  #count = 0;
  #next = 0;
  #latestId = 0;

  constructor(capacity: number) {
    this.#capacity = capacity;
    this.#slots = new Array(capacity);
  }

  get latestId(): number {
    return this.#latestId;
  }

  get size(): number {
    return this.#count;
  }

  /** Ids must increase by one; the ring holds the newest `capacity` of them. */
  push(event: Event): void {
    this.#slots[this.#next] = event;
    this.#next = (this.#next + 1) % this.#capacity;
    if (this.#count < this.#capacity) this.#count += 1;
    this.#latestId = event.id;
  }

  /** The events after `lastId`, or a reset when they cannot all be replayed. */
  since(lastId: number): ReplayResult<Event> {
    if (!Number.isSafeInteger(lastId) || lastId < 0 || lastId > this.#latestId) {
      return { kind: 'reset', reason: 'unknown_id' };
    }
    const missing = this.#latestId - lastId;
    if (missing === 0) return { kind: 'events', events: [] };
    if (missing > this.#count) return { kind: 'reset', reason: 'too_far_behind' };
    const events: Event[] = [];
    const start = (this.#next - missing + this.#capacity) % this.#capacity;
    for (let offset = 0; offset < missing; offset += 1) {
      events.push(this.#slots[(start + offset) % this.#capacity] as Event);
    }
    return { kind: 'events', events };
  }
}
