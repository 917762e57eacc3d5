/** The events a person can be told of; apart from the notice so that `errand mcp`'s flags load nothing else. */

/** What happened. */
export const PERSON_NOTICE_EVENTS = ['task-ended', 'task-failed', 'monitor-match', 'input-needed'] as const;
export type PersonNoticeEvent = (typeof PERSON_NOTICE_EVENTS)[number];
