/**
 * In-band delivery: the session's queued `<task-notification>`s ride on the next tool result, as one
 * extra text block. This is the ledger's delivery — each notification is committed as delivered once,
 * through the session — and it works with every MCP client. Logging messages and MCP Tasks are side
 * channels that never touch the ledger.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { DeliveredNotification, TakeQueuedNotificationsOptions } from '../session/index.js';

/** What in-band delivery needs from a session (`Session` implements it). */
export interface NotificationInbox {
  takeQueuedNotifications(options: TakeQueuedNotificationsOptions): readonly DeliveredNotification[];
  /** Commands still queued (for an MCP session: notifications only). */
  readonly queuedCommands: number;
}

/** The `source` of the conversation message that records a delivery on a tool result. */
export const MCP_TOOL_RESULT_SOURCE = 'mcp_tool_result';

/**
 * Takes up to `limit` queued notifications and appends them to `result` as one text block (blocks
 * joined by a blank line; a last line says how many wait for the next result). `result` unchanged when
 * none is queued.
 */
export function appendQueuedNotifications(
  result: CallToolResult,
  inbox: NotificationInbox,
  limit: number,
): CallToolResult {
  const delivered = inbox.takeQueuedNotifications({ source: MCP_TOOL_RESULT_SOURCE, limit });
  if (delivered.length === 0) return result;
  const parts = delivered.map((notification) => notification.text);
  const waiting = inbox.queuedCommands;
  if (waiting > 0) {
    parts.push(
      `(${waiting} more task notification${waiting === 1 ? '' : 's'} will follow the next tool result)`,
    );
  }
  return { ...result, content: [...result.content, { type: 'text', text: parts.join('\n\n') }] };
}
