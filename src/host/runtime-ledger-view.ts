/**
 * The notification ledger as a runtime's own event feed sees it, so the dashboard shows a result pending
 * until the model is told: which notifications wait in each session's ledger (the store), which sessions
 * can still be told anything (open in a followed session runtime — the runtime's, its subagents' — not
 * closing, not sealed), and the session events that say either may have changed. A session's queue is
 * read from the store once and then kept in step with its events (a burst of a thousand ends reads it
 * once, not a thousand times); `refresh` forgets it, for what other processes wrote.
 */
import {
  type LedgerChangeListener,
  type NotificationLedgerView,
  queuedNotificationTaskIds,
} from '../events/index.js';
import type { Session, SessionEvent, SessionRuntime } from '../session/index.js';
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
  /** The task ids queued per session, as last read and kept in step with the session's events since. */
  const queued = new Map<string, Set<string>>();

  /** Applies a session event to what is kept of its queue. */
  const follow = (sessionId: string, event: SessionEvent): void => {
    const ids = queued.get(sessionId);
    if (event.type === 'notification-queued') ids?.add(event.taskId);
    // A discard drops every queued entry of its task (a read end, a seal, a rewind, another branch).
    else if (event.type === 'notification-discarded') ids?.delete(event.taskId);
    // A delivery names no task, and a closing session discards without events: read it again when asked.
    // The turn loop's own messages (a reply, tool results) and a turn starting or ending change no entry:
    // a result read is discarded with a discard event.
    else if (changesQueue(event)) queued.delete(sessionId);
  };

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
    queuedTaskIds(sessionId) {
      let ids = queued.get(sessionId);
      if (ids === undefined) {
        ids = queuedNotificationTaskIds(store, sessionId);
        queued.set(sessionId, ids);
      }
      return ids;
    },
    refresh() {
      queued.clear();
    },
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
          follow(sessionId, event);
          tell(sessionId, event.taskId);
        } else if (event.type === 'message' || event.type === 'state') {
          follow(sessionId, event);
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

/** Whether a session event may have changed its queue without naming the task (see `follow`). */
function changesQueue(event: SessionEvent): boolean {
  if (event.type === 'state') return event.state === 'shutting_down' || event.state === 'closed';
  if (event.type === 'message')
    return event.message.source !== 'assistant' && event.message.source !== 'tool';
  return true;
}
