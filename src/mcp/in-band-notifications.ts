/**
 * In-band delivery: the session's queued `<task-notification>`s ride on the next tool result, as one
 * extra text block. This is the ledger's delivery — each notification is committed as delivered once,
 * through the session — and it works with every MCP client. Logging messages and MCP Tasks are side
 * channels that never touch the ledger.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { DeliveredNotification, InboxSurface, NotificationReservation } from '../session/index.js';

/** What in-band delivery needs of a session's inbox (`session.inbox`). */
export type NotificationInbox = Pick<InboxSurface, 'take' | 'queued'>;

/** What delivery that commits only once the result was sent needs of a session's inbox (`session.inbox`). */
export type ReservingNotificationInbox = Pick<InboxSurface, 'reserve' | 'queued'>;

/** The `source` of the conversation message that records a delivery on a tool result. */
export const MCP_TOOL_RESULT_SOURCE = 'mcp_tool_result';

/**
 * Takes up to `limit` queued notifications, commits them as delivered at once, and appends them to
 * `result` as one text block (blocks joined by a blank line; a last line says how many wait for the next
 * result). `result` unchanged when none is queued. For a surface that knows the result reaches its
 * reader; the MCP server uses `reserveQueuedNotificationsFor`, which commits only once the result was sent.
 */
export function appendQueuedNotifications(
  result: CallToolResult,
  inbox: NotificationInbox,
  limit: number,
): CallToolResult {
  const delivered = inbox.take({ source: MCP_TOOL_RESULT_SOURCE, limit });
  if (delivered.length === 0) return result;
  return withNotificationBlock(result, notificationBlock(delivered, inbox.queued));
}

export interface ReservedResult {
  /** `result` with the reserved notifications appended as one text block. */
  readonly result: CallToolResult;
  /** The appended block's text (how the sent result is recognised). */
  readonly block: string;
  /** Commit once the result was handed over; release if it was not. */
  readonly reservation: NotificationReservation;
}

/**
 * Reserves up to `limit` queued notifications and appends them to `result` as one text block, without
 * recording them as delivered yet. Undefined when none is queued.
 */
export function reserveQueuedNotificationsFor(
  result: CallToolResult,
  inbox: ReservingNotificationInbox,
  limit: number,
): ReservedResult | undefined {
  const reservation = inbox.reserve({ source: MCP_TOOL_RESULT_SOURCE, limit });
  if (reservation.notifications.length === 0) {
    reservation.release();
    return undefined;
  }
  const block = notificationBlock(reservation.notifications, inbox.queued);
  return { result: withNotificationBlock(result, block), block, reservation };
}

/** True when `result` carries `block` as one of its text blocks. */
export function carriesNotificationBlock(result: unknown, block: string): boolean {
  const content = (result as { content?: unknown } | undefined)?.content;
  return (
    Array.isArray(content) &&
    content.some(
      (part) => typeof part === 'object' && part !== null && part.type === 'text' && part.text === block,
    )
  );
}

function notificationBlock(delivered: readonly DeliveredNotification[], waiting: number): string {
  const parts = delivered.map((notification) => notification.text);
  if (waiting > 0) {
    parts.push(
      `(${waiting} more task notification${waiting === 1 ? '' : 's'} will follow the next tool result)`,
    );
  }
  return parts.join('\n\n');
}

function withNotificationBlock(result: CallToolResult, block: string): CallToolResult {
  return { ...result, content: [...result.content, { type: 'text', text: block }] };
}
