/**
 * The logging side channel: each notification the session queues is also sent as an MCP logging
 * message (`notifications/message`, level `info`, logger `errand`, data `{ taskId, notification }`),
 * the moment it is queued. It does not deliver anything in the ledger's sense: the same notification
 * still rides on the next tool result, once.
 */
import type { LoggingMessageNotification } from '@modelcontextprotocol/sdk/types.js';
import type { Session } from '../session/index.js';
import type { SessionStore } from '../store/index.js';
import { optionKeys, rejectUnknownOptions } from '../tasks/option-keys.js';

export const MCP_LOGGER_NAME = 'errand';

/** Options of `forwardNotificationsAsLogs`. A key not listed here is rejected with `UNKNOWN_OPTION`. */
export interface NotificationLogOptions {
  /** The session whose queued notifications are forwarded. */
  readonly session: Pick<Session, 'id' | 'on'>;
  /** The store the queued notifications are read from. */
  readonly store: Pick<SessionStore, 'listQueued'>;
  /** Sends one logging message (the server's `sendLoggingMessage`). */
  readonly send: (params: LoggingMessageNotification['params']) => Promise<void>;
  /** Told when sending failed while the connection is still meant to be open. */
  readonly onError?: (error: unknown) => void;
}

const NOTIFICATION_LOG_OPTION_KEYS = optionKeys<NotificationLogOptions>()({
  session: true,
  store: true,
  send: true,
  onError: true,
});

/** Starts forwarding; returns the function that stops it. */
export function forwardNotificationsAsLogs(options: NotificationLogOptions): () => void {
  rejectUnknownOptions(options, NOTIFICATION_LOG_OPTION_KEYS, { where: 'forwardNotificationsAsLogs' });
  // Ledger ids increase in admission order: everything at or below this one was sent.
  let lastSent = 0;
  return options.session.on((event) => {
    if (event.type !== 'notification-queued') return;
    for (const entry of options.store.listQueued(options.session.id)) {
      if (entry.kind !== 'notification' || entry.id <= lastSent) continue;
      lastSent = entry.id;
      options
        .send({
          level: 'info',
          logger: MCP_LOGGER_NAME,
          data: { taskId: entry.taskId ?? null, notification: entry.text },
        })
        .catch((error: unknown) => options.onError?.(error));
    }
  });
}
