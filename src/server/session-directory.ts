/** A small in-memory list of sessions, for hosts that have no session runtime of their own (and tests). */
import { InvalidArgumentError } from '../tasks/index.js';
import type { DashboardSession } from './dashboard-backend.js';

export interface SessionDirectory {
  list(): readonly DashboardSession[];
  get(sessionId: string): DashboardSession | undefined;
}

export interface InMemorySessionDirectory extends SessionDirectory {
  /** Adds or replaces a session. */
  add(session: DashboardSession): void;
  remove(sessionId: string): boolean;
}

export function createInMemorySessionDirectory(
  sessions: readonly DashboardSession[] = [],
): InMemorySessionDirectory {
  const byId = new Map<string, DashboardSession>();
  const directory: InMemorySessionDirectory = {
    list: () => [...byId.values()],
    get: (sessionId) => byId.get(sessionId),
    add(session) {
      if (typeof session?.id !== 'string' || session.id === '') {
        throw new InvalidArgumentError('session.id', 'a non-empty string', session?.id);
      }
      byId.set(session.id, Object.freeze({ ...session }));
    },
    remove: (sessionId) => byId.delete(sessionId),
  };
  for (const session of sessions) directory.add(session);
  return directory;
}
