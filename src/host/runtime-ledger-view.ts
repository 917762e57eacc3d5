/**
 * The notification ledger as a runtime's own event feed sees it, so the dashboard shows a result pending
 * until the model is told: which notifications wait in each session's ledger (the store), which sessions
 * can still be told anything (open in a followed session runtime — the runtime's, its subagents' — not
 * closing, not sealed), and the session events that say either may have changed.
 */
import {
  type LedgerChangeListener,
  type NotificationLedgerView,
  queuedNotificationTaskIds,
} from '../events/index.js';
import type { Session, SessionRuntime } from '../session/index.js';
import type { SessionStore } from '../store/index.js';
import type { Disposer, Logger } from '../tasks/index.js';

export interface RuntimeLedgerView extends NotificationLedgerView {
  /** Follows a session runtime's sessions and their events; returns the function that stops it. */
  follow(runtime: Pick<SessionRuntime, 'getSession' | 'onSessionEvent'>): Disposer;
}

export function createRuntimeLedgerView(
  store: Pick<SessionStore, 'listQueued'>,
  logger: Logger,
): RuntimeLedgerView {
  const runtimes = new Set<Pick<SessionRuntime, 'getSession' | 'onSessionEvent'>>();
  const listeners = new Set<LedgerChangeListener>();

  const sessionOf = (sessionId: string): Session | undefined => {
    for (const runtime of runtimes) {
      const session = runtime.getSession(sessionId);
      if (session !== undefined) return session;
    }
    return undefined;
  };

  const tell = (sessionId: string, taskId: string | undefined): void => {
    for (const listener of [...listeners]) {
      try {
        listener(sessionId, taskId);
      } catch (error) {
        logger.warn('a notification ledger listener failed', {
          sessionId,
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }
  };

  return {
    deliverableGeneration(sessionId) {
      const session = sessionOf(sessionId);
      if (session === undefined || session.state === 'closed' || session.shuttingDown || session.sealed) {
        return undefined;
      }
      return session.branchGeneration;
    },
    queuedTaskIds: (sessionId) => queuedNotificationTaskIds(store, sessionId),
    subscribe(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
    follow(runtime) {
      runtimes.add(runtime);
      const stop = runtime.onSessionEvent((sessionId, event) => {
        // Queued or discarded name their task; a delivery is a message (it names none); closing ends them all.
        if (event.type === 'notification-queued' || event.type === 'notification-discarded') {
          tell(sessionId, event.taskId);
        } else if (event.type === 'message' || event.type === 'state') {
          tell(sessionId, undefined);
        }
      });
      return () => {
        stop();
        runtimes.delete(runtime);
      };
    },
  };
}
