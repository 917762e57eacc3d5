/**
 * The session list as `GET /api/sessions` answers it: each session with its activity (from the server's
 * projection, plus work the backend sees elsewhere), in the order a person looks for them — sessions
 * running work first, then the other live ones, then those that ended; newest first within each.
 */
import { BADGE_WORK_KINDS, type BackgroundWorksStore } from '../events/index.js';
import type { DashboardSession } from './dashboard-backend.js';

/** `running`: has running work; `live`: a runtime holds it, idle; `ended`: closed, or its process is gone. */
export type SessionGroup = 'running' | 'live' | 'ended';

export interface SessionListEntry {
  readonly id: string;
  /** The recorded title (an MCP session's client), or null. */
  readonly title: string | null;
  readonly parentId: string | null;
  readonly createdAt: number | null;
  readonly cwd: string | null;
  /** What a person recognises it by when they wrote in it; null for a session without (an MCP client's). */
  readonly firstUserMessage: string | null;
  readonly live: boolean;
  /** Open in the runtime serving the dashboard: the page selects it first. */
  readonly own: boolean;
  readonly pid: number | null;
  readonly hasRunningWork: boolean;
  /** Running bash, workflow and subagent work the dashboard's events show. */
  readonly badgeCount: number;
  /** Running background work of it the events do not carry (another process's). */
  readonly runningElsewhere: number;
  readonly group: SessionGroup;
}

const GROUP_ORDER: Record<SessionGroup, number> = { running: 0, live: 1, ended: 2 };

/** Running first, then live, then ended; newest first within a group; the id breaks ties. */
export function compareSessions(left: SessionListEntry, right: SessionListEntry): number {
  return (
    GROUP_ORDER[left.group] - GROUP_ORDER[right.group] ||
    (right.createdAt ?? 0) - (left.createdAt ?? 0) ||
    (left.id < right.id ? -1 : left.id > right.id ? 1 : 0)
  );
}

/** What the list needs of one session's works: whether any runs, and how many the badge counts. */
export interface SessionActivity {
  readonly running: boolean;
  readonly badgeCount: number;
}

/** What the list needs of the works store: per-session activity, all of it read in one pass. */
export type SessionActivityOf = (sessionId: string) => SessionActivity;

export function toSessionEntry(
  session: DashboardSession,
  works: BackgroundWorksStore | SessionActivityOf,
): SessionListEntry {
  const elsewhere =
    typeof session.runningElsewhere === 'number' && session.runningElsewhere > 0
      ? session.runningElsewhere
      : 0;
  const activity =
    typeof works === 'function'
      ? works(session.id)
      : { running: works.hasRunningWork(session.id), badgeCount: works.badgeCount(session.id) };
  const hasRunningWork = activity.running || elsewhere > 0;
  const live = session.live !== false;
  return {
    id: session.id,
    title: session.title ?? null,
    parentId: session.parentId ?? null,
    createdAt: session.createdAt ?? null,
    cwd: session.cwd ?? null,
    firstUserMessage: session.firstUserMessage ?? null,
    live,
    own: session.own === true,
    pid: session.pid ?? null,
    hasRunningWork,
    badgeCount: activity.badgeCount,
    runningElsewhere: elsewhere,
    group: hasRunningWork ? 'running' : live ? 'live' : 'ended',
  };
}

const IDLE: SessionActivity = Object.freeze({ running: false, badgeCount: 0 });

/**
 * The activity of every session with works, from one pass over the works (not one per session: a list
 * of S sessions over W works costs S + W, not S × W).
 */
export function sessionActivities(works: BackgroundWorksStore): SessionActivityOf {
  const running = new Map<string, { running: boolean; badgeCount: number }>();
  for (const work of works.state.works.values()) {
    if (work.state !== 'running' || work.sessionId === null) continue;
    const entry = running.get(work.sessionId) ?? { running: true, badgeCount: 0 };
    if (BADGE_WORK_KINDS.includes(work.kind)) entry.badgeCount += 1;
    running.set(work.sessionId, entry);
  }
  return (sessionId) => running.get(sessionId) ?? IDLE;
}

export function listSessionEntries(
  sessions: readonly DashboardSession[],
  works: BackgroundWorksStore,
): SessionListEntry[] {
  const activityOf = sessionActivities(works);
  return sessions.map((session) => toSessionEntry(session, activityOf)).sort(compareSessions);
}
