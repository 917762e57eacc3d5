/**
 * The line each session's next tool result carries about the store: that it started refusing writes
 * (endings are kept in memory and retried, new background work is refused), or that it takes them again —
 * once per change, and "works again" only to a session that heard it was failing.
 */
import type { StoreFailure } from './pending-store-writes.js';
import { describeStoreFailure } from './session-errors.js';

export class PersistenceNotes {
  /** Per session: the line its next tool result carries. */
  readonly #notes = new Map<string, string>();
  /** Sessions whose model heard the store is failing (they hear when it works again). */
  readonly #heardFailing = new Set<string>();
  readonly #sessionIds: () => Iterable<string>;

  /** `sessionIds`: the sessions open now, each told of a change. */
  constructor(sessionIds: () => Iterable<string>) {
    this.#sessionIds = sessionIds;
  }

  /** A session opened while the store is failing (`failure`) hears it with its first tool result. */
  opened(sessionId: string, failure: StoreFailure | undefined): void {
    if (failure !== undefined) this.#notes.set(sessionId, failingNote(failure));
  }

  /** The store started failing, or works again: each open session's next tool result says so, once. */
  changed(failure: StoreFailure | undefined): void {
    if (failure !== undefined) {
      for (const id of this.#sessionIds()) this.#notes.set(id, failingNote(failure));
      return;
    }
    for (const id of this.#sessionIds()) {
      if (this.#heardFailing.has(id)) this.#notes.set(id, RECOVERED_NOTE);
      else this.#notes.delete(id);
    }
    this.#heardFailing.clear();
  }

  /** The line for a session's next tool result, taken (undefined when there is nothing new to say). */
  take(sessionId: string): string | undefined {
    const note = this.#notes.get(sessionId);
    if (note === undefined) return undefined;
    this.#notes.delete(sessionId);
    if (note === RECOVERED_NOTE) this.#heardFailing.delete(sessionId);
    else this.#heardFailing.add(sessionId);
    return note;
  }

  forget(sessionId: string): void {
    this.#notes.delete(sessionId);
    this.#heardFailing.delete(sessionId);
  }
}

/** The line a tool result carries once the store started refusing writes. */
function failingNote(failure: StoreFailure): string {
  return `[errand: the session store cannot be written (${describeStoreFailure(failure.error)}): task endings are kept in memory and retried; new background work is refused until it can]`;
}

/** The line a tool result carries once the store takes writes again. */
const RECOVERED_NOTE =
  '[errand: the session store can be written again: endings kept meanwhile are recorded and told]';
