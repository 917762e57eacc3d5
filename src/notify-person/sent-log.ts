/**
 * What was sent: the newest notices and, per sink, what became of each (queued, delivered after two
 * attempts, rate-limited, failed with HTTP 500, ...). Bounded; the dashboard's "Sent notifications" panel
 * and `GET /api/notices` read it. It holds no secret: a webhook is named by its origin only, and errors by
 * their code or HTTP status, never by a message that could carry a URL's credentials.
 */
import type { PersonNotice } from './person-notice.js';

export type SinkName = 'webhook' | 'desktop' | 'browser';

export type SentState =
  | 'queued'
  | 'sending'
  | 'retrying'
  | 'delivered'
  | 'failed'
  | 'dropped'
  | 'rate-limited'
  | 'filtered';

export interface SentAttempt {
  readonly sink: SinkName;
  /** Where it went: the webhook's origin, `notify-send`, or `browser`. */
  readonly target: string;
  readonly state: SentState;
  readonly attempts: number;
  /** The last answer's HTTP status (webhook), when there was one. */
  readonly httpStatus: number | null;
  /** Why the last attempt failed: an error code (`ECONNREFUSED`, `TIMEOUT`, `QUEUE_FULL`, ...). */
  readonly error: string | null;
  readonly updatedAt: number;
}

export interface SentRecord {
  readonly notice: PersonNotice;
  readonly sinks: readonly SentAttempt[];
}

export type SentListener = (record: SentRecord) => void;

export class SentLog {
  readonly #capacity: number;
  readonly #records = new Map<string, { notice: PersonNotice; sinks: Map<SinkName, SentAttempt> }>();
  readonly #listeners = new Set<SentListener>();

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  /** Records `attempt` for `notice` (replacing the sink's earlier state). */
  record(notice: PersonNotice, attempt: SentAttempt): void {
    let entry = this.#records.get(notice.id);
    if (entry === undefined) {
      entry = { notice, sinks: new Map() };
      this.#records.set(notice.id, entry);
      while (this.#records.size > this.#capacity) {
        const oldest = this.#records.keys().next().value;
        if (oldest === undefined) break;
        this.#records.delete(oldest);
      }
    }
    entry.sinks.set(attempt.sink, attempt);
    const snapshot = toRecord(entry);
    for (const listener of this.#listeners) {
      try {
        listener(snapshot);
      } catch {
        // A viewer's failure never reaches a sink.
      }
    }
  }

  /** Newest first. */
  list(limit = this.#capacity): SentRecord[] {
    return [...this.#records.values()].reverse().slice(0, limit).map(toRecord);
  }

  subscribe(listener: SentListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}

function toRecord(entry: { notice: PersonNotice; sinks: Map<SinkName, SentAttempt> }): SentRecord {
  return { notice: entry.notice, sinks: [...entry.sinks.values()] };
}
