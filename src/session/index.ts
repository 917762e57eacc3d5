/** The session runtime: sessions, the turn loop, the model port, the command queue. */
export {
  CommandQueue,
  QUEUE_PRIORITIES,
  type QueuedCommand,
  type QueuedConfiguration,
  type QueuedNotification,
  type QueuedUserInput,
  QueueFullError,
  type QueuePriority,
  validateQueuePriority,
} from './command-queue.js';
export { toModelMessages } from './conversation-view.js';
export {
  type DeliveryForm,
  type InboxLedger,
  type NotificationEntry,
  volatileInboxLedger,
} from './inbox-ledger.js';
export type {
  FinishReason,
  ModelMessage,
  ModelPort,
  ModelRequest,
  ModelResponse,
  ModelToolCall,
  ModelToolResult,
  ModelToolSpec,
  ModelUsage,
} from './model-port.js';
export { NOTIFICATION_DELIVERY_FAILED, NotificationDeliveryError } from './notification-delivery-error.js';
export {
  type DeliveredNotification,
  type InboxDrain,
  type InboxOwner,
  type InboxSurface,
  type NotificationAdmission,
  NotificationInbox,
  type NotificationInboxContext,
  type NotificationReservation,
  type ReserveNotificationsOptions,
  type RestoredNotification,
  type SessionNotification,
  sessionNotificationOf,
  type TakeQueuedNotificationsOptions,
  type TurnReservationOptions,
} from './notification-inbox.js';
export type { RuntimeEventListener } from './runtime-events.js';
export { notifyingSchedulePort, scheduleSessionPort } from './schedule-session-port.js';
export { type SendOptions, Session, type SessionDependencies, type TurnEndReason } from './session.js';
export {
  PersistenceFailingError,
  SessionBusyError,
  SessionClosedError,
  SessionExistsError,
  SessionNotFoundError,
} from './session-errors.js';
export type {
  SessionEvent,
  SessionEventListener,
  SessionRunState,
  TurnOutcome,
  TurnSource,
} from './session-events.js';
export {
  type ResolvedSessionLimits,
  SESSION_LIMIT_DEFAULTS,
  type SessionLimits,
  sessionLimitOptions,
} from './session-limits.js';
export {
  type CreateSessionOptions,
  createSessionOptions,
  type PolicyOptions,
  policyOptions,
  type ReconcileOptions,
  type ResolvedSessionRuntimeOptions,
  type ResumeSessionOptions,
  reconcileOptions,
  resumeSessionOptions,
  type SessionRuntimeOptions,
  sessionRuntimeOptions,
} from './session-options.js';
export { createSessionRuntime, SessionRuntime } from './session-runtime.js';
export { lastSequences, storeSequenceBlocks, TASK_ID_BLOCK_SIZE } from './store-sequence-blocks.js';
export { batchTitle } from './turn-runner.js';
