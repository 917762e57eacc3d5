/**
 * The sessions of a store as the dashboard lists them: what a person recognises a session by (its first
 * user message, else its client, start time and working directory), whether a runtime still holds it,
 * whether that runtime is the one serving the dashboard, and how much background work other processes
 * run in it. Shared by the in-process backend (`createErrandRuntime`'s) and `errand serve`'s.
 */
import type { SessionHolder, SessionRecord, SessionStore } from '../store/index.js';
import { shortenText, toSingleLine } from '../text/index.js';
import type { DashboardSession } from './dashboard-backend.js';

/** Characters of a first user message kept for the session list. */
export const FIRST_MESSAGE_MAX_CHARS = 120;
/** Messages read from a session's start looking for its first user message. */
const FIRST_MESSAGE_SCAN = 16;

export interface SessionSummaryOptions {
  readonly store: SessionStore;
  /** Whether a holder's runtime still runs (pid and process start). */
  readonly isHolderLive: (holder: SessionHolder) => boolean;
  /** Sessions open in the runtime serving the dashboard (none for `errand serve`). */
  readonly isOwn?: (sessionId: string) => boolean;
  /**
   * Count running background task records of live sessions that are not the runtime's own (their events
   * reach no feed of this process). Default false: the feed sees every session's work.
   */
  readonly countForeignWork?: boolean;
}

export interface SessionSummaries {
  list(): DashboardSession[];
  get(sessionId: string): DashboardSession | undefined;
}

export function createSessionSummaries(options: SessionSummaryOptions): SessionSummaries {
  const { store } = options;
  /** First user messages found so far; a message once written never changes, so the cache never goes stale. */
  const firstMessages = new Map<string, string>();
  /** Ended sessions known to have none: they get no new messages. */
  const withoutMessage = new Set<string>();

  const firstUserMessage = (record: SessionRecord, live: boolean): string | undefined => {
    const known = firstMessages.get(record.id);
    if (known !== undefined) return known;
    if (!live && withoutMessage.has(record.id)) return undefined;
    const message = store
      .listMessages(record.id, { limit: FIRST_MESSAGE_SCAN })
      .find(
        (candidate) =>
          candidate.role === 'user' && candidate.source === 'user' && candidate.visibility === 'all',
      );
    const text = message?.content.text === undefined ? '' : toSingleLine(message.content.text);
    if (text === '') {
      if (!live) withoutMessage.add(record.id);
      return undefined;
    }
    const shown = shortenText(text, FIRST_MESSAGE_MAX_CHARS);
    firstMessages.set(record.id, shown);
    return shown;
  };

  const summarize = (record: SessionRecord, foreign: ReadonlyMap<string, number>): DashboardSession => {
    const own = options.isOwn?.(record.id) ?? false;
    const holderLive = record.holder !== undefined && options.isHolderLive(record.holder);
    const live = own || (record.state === 'active' && holderLive);
    const first = firstUserMessage(record, live);
    return {
      id: record.id,
      title: record.title,
      parentId: record.parentId,
      createdAt: record.createdAt,
      cwd: record.cwd,
      live,
      own,
      ...(first === undefined ? {} : { firstUserMessage: first }),
      ...(live && record.holder ? { pid: record.holder.pid } : {}),
      ...(foreign.has(record.id) ? { runningElsewhere: foreign.get(record.id) } : {}),
    };
  };

  /** Running background records per live session of another runtime. */
  const foreignWork = (records: readonly SessionRecord[]): Map<string, number> => {
    const counts = new Map<string, number>();
    if (options.countForeignWork !== true) return counts;
    const liveForeign = new Set(
      records
        .filter(
          (record) =>
            !(options.isOwn?.(record.id) ?? false) &&
            record.state === 'active' &&
            record.holder !== undefined &&
            options.isHolderLive(record.holder),
        )
        .map((record) => record.id),
    );
    if (liveForeign.size === 0) return counts;
    for (const task of store.listTasks({ statuses: ['running', 'stopping'] })) {
      if (!task.isBackgrounded || task.sessionId === undefined || !liveForeign.has(task.sessionId)) continue;
      counts.set(task.sessionId, (counts.get(task.sessionId) ?? 0) + 1);
    }
    return counts;
  };

  return {
    list() {
      const records = store.listSessions();
      const foreign = foreignWork(records);
      return records.map((record) => summarize(record, foreign));
    },
    get(sessionId) {
      const record = store.getSession(sessionId);
      return record === undefined ? undefined : summarize(record, foreignWork([record]));
    },
  };
}
