/** Promise helpers the session, subagent and workflow suites share: hand-settled promises and event waits. */
import type { Session, SessionEvent } from '../../src/session/index.js';
import type { TaskService, TaskSnapshot } from '../../src/tasks/index.js';

export interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
}

/** A promise a test settles by hand. */
export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

/**
 * Resolves with the terminal snapshot of task `id` (or of the first task `match` accepts) without taking
 * its delivery claim: it listens to `onTaskDone` instead of waiting.
 */
export function settled(
  tasks: TaskService,
  match: string | ((snapshot: TaskSnapshot) => boolean),
): Promise<TaskSnapshot> {
  const accepts = typeof match === 'string' ? (snapshot: TaskSnapshot) => snapshot.id === match : match;
  return new Promise((resolve) => {
    const stop = tasks.onTaskDone((snapshot) => {
      if (accepts(snapshot)) {
        stop();
        resolve(snapshot);
      }
    });
  });
}

/** Resolves with the session's next event that `predicate` accepts. */
export function nextEvent(
  session: Session,
  predicate: (event: SessionEvent) => boolean,
): Promise<SessionEvent> {
  return new Promise((resolve) => {
    const stop = session.on((event) => {
      if (predicate(event)) {
        stop();
        resolve(event);
      }
    });
  });
}

/** The texts of the session's messages that carry a `<task-notification>`, in order. */
export function notifications(session: Session): string[] {
  return session
    .messages()
    .map((message) => message.content.text ?? '')
    .filter((text) => text.includes('<task-notification>'));
}
