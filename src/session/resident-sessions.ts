/**
 * The sessions a runtime has open in memory, each with its delivery policy and admission scope, and what
 * happens when one closes: it is detached from its policy and the runtime's events, its parts forget it,
 * and its holder is cleared in the store so another runtime may resume it.
 */
import type { DeliveryPolicy } from '../notifications/index.js';
import { describeError, type Logger } from '../tasks/index.js';
import type { Session } from './session.js';

/** An open session and what the runtime keeps beside it. */
export interface ResidentSession {
  readonly session: Session;
  readonly policy: DeliveryPolicy;
  /** Its admission scope: this runtime's instance and the opening's number (see `SessionRuntime`). */
  readonly scope: string;
  /** Stops its event forwarding and disposes of its policy. */
  readonly detach: () => void;
}

export interface ResidentSessionsContext {
  /** Clears this runtime's holder of the session in the store. */
  releaseHolder(sessionId: string): void;
  /** The session was forgotten here: the runtime's other parts drop what they kept for it. */
  forgotten(sessionId: string): void;
  readonly logger: Logger;
}

export class ResidentSessions {
  readonly #context: ResidentSessionsContext;
  readonly #entries = new Map<string, ResidentSession>();
  readonly #allClosedWaiters: Array<() => void> = [];

  constructor(context: ResidentSessionsContext) {
    this.#context = context;
  }

  get size(): number {
    return this.#entries.size;
  }

  has(sessionId: string): boolean {
    return this.#entries.has(sessionId);
  }

  get(sessionId: string): ResidentSession | undefined {
    return this.#entries.get(sessionId);
  }

  sessions(): Session[] {
    return [...this.#entries.values()].map((entry) => entry.session);
  }

  ids(): Iterable<string> {
    return this.#entries.keys();
  }

  add(entry: ResidentSession): void {
    this.#entries.set(entry.session.id, entry);
  }

  /** The session closed: it is no longer resident here, and its holder is cleared. */
  forget(sessionId: string): void {
    const entry = this.#entries.get(sessionId);
    if (!entry) return;
    entry.detach();
    this.#entries.delete(sessionId);
    this.#context.forgotten(sessionId);
    if (this.#entries.size === 0) for (const wake of this.#allClosedWaiters.splice(0)) wake();
    try {
      this.#context.releaseHolder(sessionId);
    } catch (error) {
      // Left behind, the holder is stale once this runtime is disposed: a later resume replaces it.
      this.#context.logger.warn(`session ${sessionId}: clearing its holder failed`, {
        error: describeError(error),
      });
    }
  }

  /** Resolves once no session is resident. */
  whenAllClosed(): Promise<void> {
    if (this.#entries.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#allClosedWaiters.push(resolve));
  }
}
