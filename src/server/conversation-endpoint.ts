/**
 * `GET /api/sessions/:id/conversation`: one bounded page of a session's conversation and its running
 * foreground work. Without a query it is the newest `conversationPageSize` messages; `before=<seq>` pages
 * back from a seq, `after=<seq>` reads what is newer than the last one a viewer holds; `limit` is at most
 * `maxConversationPage`.
 */
import type { MessageRecord } from '../store/index.js';
import {
  type ConversationLimits,
  type ConversationMessageView,
  toConversationMessage,
} from './conversation-view.js';
import type {
  DashboardBackend,
  ForegroundWork,
  MessagePage,
  MessagePageRequest,
} from './dashboard-backend.js';
import { DashboardRequestError } from './http-response.js';

export interface ConversationOptions extends ConversationLimits {
  readonly backend: DashboardBackend;
  readonly pageSize: number;
  readonly maxPage: number;
}

export interface ConversationBody {
  readonly sessionId: string;
  /** False when the backend keeps no conversation (a bare task service): `messages` is then empty. */
  readonly available: boolean;
  readonly messages: readonly ConversationMessageView[];
  /** Older messages exist before the first one of the page. */
  readonly hasOlder: boolean;
  readonly foreground: readonly ForegroundWork[];
}

function seqParameter(url: URL, name: string): number | undefined {
  const raw = url.searchParams.get(name);
  if (raw === null) return undefined;
  if (!/^\d{1,15}$/.test(raw)) {
    throw new DashboardRequestError(
      400,
      'INVALID_QUERY',
      `Expected \`${name}\` to be a message seq (a non-negative integer), got ${JSON.stringify(raw)}`,
    );
  }
  return Number(raw);
}

function limitParameter(url: URL, pageSize: number, maxPage: number): number {
  const raw = url.searchParams.get('limit');
  if (raw === null) return pageSize;
  const limit = /^\d{1,6}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isInteger(limit) || limit < 1 || limit > maxPage) {
    throw new DashboardRequestError(
      400,
      'INVALID_QUERY',
      `Expected \`limit\` to be an integer from 1 to ${maxPage}, got ${JSON.stringify(raw)}`,
    );
  }
  return limit;
}

export async function readConversation(
  sessionId: string,
  url: URL,
  options: ConversationOptions,
): Promise<ConversationBody> {
  const afterSeq = seqParameter(url, 'after');
  const beforeSeq = seqParameter(url, 'before');
  if (afterSeq !== undefined && beforeSeq !== undefined) {
    throw new DashboardRequestError(400, 'INVALID_QUERY', 'Give `after` or `before`, not both');
  }
  const limit = limitParameter(url, options.pageSize, options.maxPage);
  const { backend } = options;
  const foreground = (await backend.listForegroundWork?.(sessionId)) ?? [];
  const page = await backend.readMessages?.(sessionId, {
    ...(afterSeq === undefined ? {} : { afterSeq }),
    ...(beforeSeq === undefined ? {} : { beforeSeq }),
    limit,
  });
  if (page === undefined) return { sessionId, available: false, messages: [], hasOlder: false, foreground };
  return {
    sessionId,
    available: true,
    messages: page.messages.slice(-limit).map((message) => toConversationMessage(message, options)),
    hasOlder: page.hasOlder,
    foreground,
  };
}

/**
 * A page over a store's `listMessages`: the newest `limit` before `beforeSeq` (or of all), or the oldest
 * `limit` after `afterSeq`; `hasOlder` from one extra row read.
 */
export function pageFromStore(
  listMessages: (options: {
    afterSeq?: number;
    beforeSeq?: number;
    limit: number;
  }) => readonly MessageRecord[],
  page: MessagePageRequest,
): MessagePage {
  if (page.afterSeq !== undefined) {
    const messages = listMessages({ afterSeq: page.afterSeq, limit: page.limit });
    // Newer messages only: whether older ones exist is the viewer's to know already.
    return { messages, hasOlder: page.afterSeq > 0 };
  }
  const rows = listMessages({ beforeSeq: page.beforeSeq ?? Number.MAX_SAFE_INTEGER, limit: page.limit + 1 });
  return rows.length > page.limit
    ? { messages: rows.slice(1), hasOlder: true }
    : { messages: rows, hasOlder: false };
}
