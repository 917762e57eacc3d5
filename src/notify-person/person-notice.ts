/**
 * The notice a person is sent: one small, versioned JSON record per task end, failure, monitor match or
 * "needs input", the same for every sink (the webhook posts it as is). Built from the background event
 * facts, so every sink says what the dashboard shows.
 */
import type { BackgroundTaskFacts } from '../events/index.js';
import { endStateOf } from '../events/index.js';
import { truncateUtf8Head } from '../text/index.js';
import type { PersonNoticeEvent } from './notice-events.js';

/** The version of the notice's JSON shape; a receiver checks it before reading the rest. */
export const PERSON_NOTICE_SCHEMA_VERSION = 1;

export { PERSON_NOTICE_EVENTS, type PersonNoticeEvent } from './notice-events.js';

/** The task a notice is about, as a viewer sees it. */
export interface PersonNoticeTask {
  readonly id: string;
  /** The display kind (`bash`, `subagent`, `workflow`, `monitor`, `other`). */
  readonly kind: string;
  /** The registry's kind (`bash`, `pty`, `agent`, ...). */
  readonly taskKind: string;
  readonly label: string;
  readonly status: string;
  readonly exitCode: number | null;
  readonly signal: string | null;
  /** The producer's stop reason (`completed`, `timed_out`, ...). */
  readonly reason: string | null;
  readonly startedAt: number;
  readonly endedAt: number | null;
}

export interface PersonNotice {
  readonly schemaVersion: typeof PERSON_NOTICE_SCHEMA_VERSION;
  /** Unique per notice; a retry of the same notice carries the same id (a receiver de-duplicates by it). */
  readonly id: string;
  readonly event: PersonNoticeEvent;
  /** When it happened, epoch milliseconds. */
  readonly at: number;
  /** The owning session; null for ownerless work. */
  readonly sessionId: string | null;
  readonly task: PersonNoticeTask;
  /** One line for a person: `bash-1 "npm test" failed with exit code 3`. */
  readonly summary: string;
  /** Monitor matches: the matched lines shown (each bounded); otherwise empty. */
  readonly lines: readonly string[];
}

/** The longest summary, and the longest line of a monitor match, in UTF-8 bytes. */
export const NOTICE_SUMMARY_MAX_BYTES = 300;
export const NOTICE_LINE_MAX_BYTES = 500;
/** Matched lines one notice carries. */
export const NOTICE_MAX_LINES = 10;

/** Whether an ended task's end is a failure, as the dashboard draws it (a non-zero exit code counts). */
export function isFailedEnd(facts: BackgroundTaskFacts): boolean {
  if (endStateOf(facts) === 'failed') return true;
  return facts.status === 'completed' && facts.exitCode !== null && facts.exitCode !== 0;
}

export function noticeTaskOf(facts: BackgroundTaskFacts): PersonNoticeTask {
  return {
    id: facts.taskId,
    kind: facts.kind,
    taskKind: facts.taskKind,
    label: facts.label,
    status: facts.status,
    exitCode: facts.exitCode,
    signal: facts.signal,
    reason: facts.reason,
    startedAt: facts.startedAt,
    endedAt: facts.endedAt,
  };
}

/** How an end reads in one line. */
export function describeEnd(facts: BackgroundTaskFacts): string {
  const subject = `${facts.taskId} ${JSON.stringify(facts.label)}`;
  if (facts.status === 'completed') {
    if (facts.exitCode !== null && facts.exitCode !== 0)
      return `${subject} failed with exit code ${facts.exitCode}`;
    return `${subject} completed${facts.exitCode === null ? '' : ' (exit code 0)'}`;
  }
  if (facts.status === 'killed') {
    return facts.reason !== null && facts.reason !== 'cancelled'
      ? `${subject} was stopped (${facts.reason})`
      : `${subject} was stopped`;
  }
  if (facts.status === 'lost') return `${subject} was lost: its executor no longer knows it`;
  if (facts.exitCode !== null && facts.exitCode !== 0)
    return `${subject} failed with exit code ${facts.exitCode}`;
  return `${subject} failed${facts.error === null ? '' : `: ${facts.error}`}`;
}

export interface NoticeInput {
  readonly id: string;
  readonly event: PersonNoticeEvent;
  readonly at: number;
  readonly facts: BackgroundTaskFacts;
  readonly summary: string;
  readonly lines?: readonly string[];
}

/** A notice, with its summary and lines bounded. */
export function buildNotice(input: NoticeInput): PersonNotice {
  return {
    schemaVersion: PERSON_NOTICE_SCHEMA_VERSION,
    id: input.id,
    event: input.event,
    at: input.at,
    sessionId: input.facts.sessionId,
    task: noticeTaskOf(input.facts),
    summary: truncateUtf8Head(input.summary, NOTICE_SUMMARY_MAX_BYTES),
    lines: (input.lines ?? [])
      .slice(0, NOTICE_MAX_LINES)
      .map((line) => truncateUtf8Head(line, NOTICE_LINE_MAX_BYTES)),
  };
}

/** The title a desktop or browser notification shows. */
export function noticeTitle(notice: PersonNotice): string {
  switch (notice.event) {
    case 'task-ended':
      return `Errand: ${notice.task.id} ${notice.task.status}`;
    case 'task-failed':
      return `Errand: ${notice.task.id} failed`;
    case 'monitor-match':
      return `Errand: ${notice.task.id} matched`;
    case 'input-needed':
      return `Errand: ${notice.task.id} is waiting for input`;
  }
}
