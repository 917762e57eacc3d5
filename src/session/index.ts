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
  type InboxSurface,
  type NotificationAdmission,
  NotificationInbox,
  type NotificationInboxContext,
  type NotificationReservation,
  type ReserveNotificationsOptions,
  type SessionNotification,
  type TakeQueuedNotificationsOptions,
  type TurnReservationOptions,
} from './notification-inbox.js';
export { Session, type SessionDependencies } from './session.js';
export { SessionBusyError, SessionClosedError } from './session-errors.js';
export type {
  SessionEvent,
  SessionEventListener,
  SessionRunState,
  TurnEndReason,
  TurnOutcome,
  TurnSource,
} from './session-events.js';
export type { SendOptions } from './session-input.js';
export {
  type ResolvedSessionLimits,
  resolveSessionLimits,
  SESSION_LIMIT_DEFAULTS,
  SESSION_LIMIT_KEYS,
  type SessionLimits,
} from './session-options.js';
export {
  type CreateSessionOptions,
  createSessionRuntime,
  lastSequences,
  POLICY_OPTION_KEYS,
  type PolicyOptions,
  type ResumeSessionOptions,
  type RuntimeEventListener,
  SESSION_RUNTIME_OPTION_KEYS,
  SessionExistsError,
  SessionNotFoundError,
  SessionRuntime,
  type SessionRuntimeOptions,
  storeSequenceBlocks,
  TASK_ID_BLOCK_SIZE,
} from './session-runtime.js';
export { toModelMessages } from './turn-loop.js';
export { batchTitle } from './turn-runner.js';
