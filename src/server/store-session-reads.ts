/**
 * What one poll of the store-backed dashboard learns about sessions — each session's live holder, branch
 * generation and queued notifications — read once per session per poll however many of its tasks ask.
 */
import { queuedNotificationTaskIds } from '../events/index.js';
import type { SessionHolder, SessionStore } from '../store/index.js';

/** What one read of the store learns about sessions: each session's holder, generation and queue, once. */
export class StoreSessionReads {
  readonly #store: Pick<SessionStore, 'getSession' | 'listQueued'>;
  readonly #holderLive: (holder: SessionHolder) => boolean;
  readonly #records = new Map<string, { holder: SessionHolder | undefined; generation: number }>();
  readonly #queued = new Map<string, ReadonlySet<string>>();

  constructor(
    store: Pick<SessionStore, 'getSession' | 'listQueued'>,
    holderLive: (holder: SessionHolder) => boolean,
  ) {
    this.#store = store;
    this.#holderLive = holderLive;
  }

  /** The session's holder if its runtime still runs. */
  liveHolder(sessionId: string): SessionHolder | undefined {
    return this.#record(sessionId).holder;
  }

  generation(sessionId: string): number {
    return this.#record(sessionId).generation;
  }

  queuedTaskIds(sessionId: string): ReadonlySet<string> {
    let ids = this.#queued.get(sessionId);
    if (ids === undefined) {
      ids = queuedNotificationTaskIds(this.#store, sessionId);
      this.#queued.set(sessionId, ids);
    }
    return ids;
  }

  #record(sessionId: string): { holder: SessionHolder | undefined; generation: number } {
    let record = this.#records.get(sessionId);
    if (record === undefined) {
      const session = this.#store.getSession(sessionId);
      const holder = session?.holder;
      record = {
        holder: holder !== undefined && this.#holderLive(holder) ? holder : undefined,
        generation: session?.branchGeneration ?? 0,
      };
      this.#records.set(sessionId, record);
    }
    return record;
  }
}
