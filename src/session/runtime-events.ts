/**
 * The session runtime's event fan-out: every event of every open session, to the listeners of
 * `SessionRuntime.onSessionEvent`. A listener that throws is logged and the others still hear the event.
 */
import { describeError, type Logger, type SessionId } from '../tasks/index.js';
import type { SessionEvent } from './session-events.js';

export type RuntimeEventListener = (sessionId: SessionId, event: SessionEvent) => void;

export class RuntimeEvents {
  readonly #listeners = new Set<RuntimeEventListener>();
  readonly #logger: Logger;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  on(listener: RuntimeEventListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  emit(sessionId: SessionId, event: SessionEvent): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(sessionId, event);
      } catch (error) {
        this.#logger.warn('a session event listener failed', { error: describeError(error) });
      }
    }
  }
}
