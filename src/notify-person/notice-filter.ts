/**
 * Which notices a sink takes: by event (`task-failed`, ...), by session and by the task's display kind.
 * An absent list takes everything; an empty one takes nothing.
 */
import type { PersonNotice, PersonNoticeEvent } from './person-notice.js';

export interface NoticeFilter {
  /** The events this sink takes. Default: all four. */
  readonly events?: readonly PersonNoticeEvent[] | undefined;
  /** The sessions whose work this sink reports (`null` stands for ownerless work). Default: every session. */
  readonly sessions?: readonly (string | null)[] | undefined;
  /** The display kinds (`bash`, `subagent`, `workflow`, `monitor`, `other`) it reports. Default: every kind. */
  readonly kinds?: readonly string[] | undefined;
}

export function matchesFilter(filter: NoticeFilter, notice: PersonNotice): boolean {
  if (filter.events !== undefined && !filter.events.includes(notice.event)) return false;
  if (filter.sessions !== undefined && !filter.sessions.includes(notice.sessionId)) return false;
  if (filter.kinds !== undefined && !filter.kinds.includes(notice.task.kind)) return false;
  return true;
}
