/**
 * The logging side channel: each notification the session queues is also sent as an MCP logging
 * message (`notifications/message`, level `info`, logger `errand`, data `{ taskId, notification }`),
 * the moment it is queued. It does not deliver anything in the ledger's sense: the same notification
 * still rides on the next tool result, once.
 */
import type { LoggingMessageNotification } from '@modelcontextprotocol/sdk/types.js';
import type { Session } from '../session/index.js';
import type { SessionStore } from '../store/index.js';
import { defineOptions, type OptionsInput, option } from '../tasks/options.js';

export const MCP_LOGGER_NAME = 'errand';

/** The options of `forwardNotificationsAsLogs`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
const notificationLogOptions = defineOptions('forwardNotificationsAsLogs', {
  /** The session whose queued notifications are forwarded. */
  session: option.required(option.shaped<Pick<Session, 'id' | 'on'>>('a Session', ['on'])),
  /** The store the queued notifications are read from. */
  store: option.required(option.shaped<Pick<SessionStore, 'listQueued'>>('a SessionStore', ['listQueued'])),
  /** Sends one logging message (the server's `sendLoggingMessage`). */
  send: option.required(option.func<(params: LoggingMessageNotification['params']) => Promise<void>>()),
  /** Told when sending failed while the connection is still meant to be open. */
  onError: option.func<(error: unknown) => void>(),
});

/** Options of `forwardNotificationsAsLogs`. */
export type NotificationLogOptions = OptionsInput<typeof notificationLogOptions.rules>;

/** Starts forwarding; returns the function that stops it. */
export function forwardNotificationsAsLogs(input: NotificationLogOptions): () => void {
  const options = notificationLogOptions.resolve(input);
  // Ledger ids increase in admission order: everything at or below this one was sent.
  let lastSent = 0;
  return options.session.on((event) => {
    if (event.type !== 'notification-queued') return;
    // Only what was admitted since the last one sent: a burst of K costs K reads of one entry, not K².
    for (const entry of options.store.listQueued(options.session.id, { afterId: lastSent })) {
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
