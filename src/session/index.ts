/** The session runtime: sessions, the turn loop, the model port, the command queue. */
export * from './command-queue.js';
export {
  type DeliveryForm,
  type InboxLedger,
  type NotificationEntry,
  volatileInboxLedger,
} from './inbox-ledger.js';
export * from './model-port.js';
export * from './notification-delivery-error.js';
export {
  type DeliveredNotification,
  type InboxSurface,
  type NotificationAdmission,
  NotificationInbox,
  type NotificationInboxContext,
  type NotificationReservation,
  type ReserveNotificationsOptions,
  type RestoredNotification,
  type SessionNotification,
  type TakeQueuedNotificationsOptions,
  type TurnReservationOptions,
} from './notification-inbox.js';
export * from './session.js';
export { SessionBusyError, SessionClosedError } from './session-errors.js';
export * from './session-events.js';
export * from './session-limits.js';
export * from './session-options.js';
export * from './session-runtime.js';
export { toModelMessages } from './turn-loop.js';
export { batchTitle } from './turn-runner.js';
