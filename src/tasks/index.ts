/**
 * The task contract: ids, statuses, errors, owners, the clock and logger every part is given, the
 * producer facts, and the TaskService interface. Imports nothing of ours.
 */

export { type BackgroundListing, backgroundListingOf } from './background-listing.js';
export {
  type CancelTimer,
  type Clock,
  createManualClock,
  MAX_TIMER_DELAY_MS,
  type ManualClock,
  monotonicNow,
  systemClock,
} from './clock.js';
export { ERRAND_ERROR_CODES, type ErrandErrorCode, isErrandErrorCode } from './error-codes.js';
export {
  AdmissionLimitError,
  CancelFailedError,
  CancelNotSupportedError,
  CursorClosedError,
  type CursorCloseReason,
  CursorLimitError,
  describeError,
  describeValue,
  ErrandError,
  type ErrandErrorOptions,
  type ErrorContext,
  type ErrorFault,
  InvalidArgumentError,
  InvalidTaskSpecError,
  InvalidTimeoutError,
  MessagesNotSupportedError,
  NoControllerError,
  OwnerDisposedError,
  ProducerContractError,
  ServiceDisposedError,
  TaskNotFoundError,
  TaskNotResumableError,
  TaskNotRunningError,
  UnknownOptionError,
  WaitAbortedError,
} from './errors.js';
export {
  asSessionId,
  asTaskId,
  formatTaskId,
  isTaskId,
  isValidTaskKind,
  type KnownTaskKind,
  parseTaskId,
  type SessionId,
  type TaskId,
  type TaskKind,
} from './ids.js';
export { consoleLogger, createConsoleLogger, emitWarningLogger, type Logger } from './logger.js';
export {
  describeIntegerRange,
  type IntegerSettings,
  option,
  type RecordKeys,
  type StringSettings,
} from './option-rules.js';
export type {
  AnyOptionRule,
  DefaultedRule,
  OptionBound,
  OptionDefaults,
  OptionRule,
  OptionRules,
  OptionsInput,
  OptionsResolver,
  ResolveAt,
  ResolvedOptions,
} from './option-types.js';
export { type DefineOptionsSettings, defineOptions, type OptionsDeclaration } from './options.js';
export type {
  CursorReadOptions,
  OpenCursorOptions,
  OutputCursor,
  OutputCursorRead,
  OutputStreamKind,
  TaskOutputChunk,
  TaskOutputStream,
} from './output-stream.js';
export {
  type Caller,
  type Cleanup,
  type CreateOwnerOptions,
  createOwner,
  createTrustedCaller,
  isTrustedCaller,
  type Owner,
  type TrustedCaller,
  validateSessionId,
} from './owner.js';
export {
  checkPathLength,
  MAX_PATH_BYTES,
  PathTooLongError,
  resolveWorkdir,
} from './path-bounds.js';
export {
  isTerminalStatus,
  type LiveTaskStatus,
  mapPortStatus,
  type PortStatus,
  type StopInitiator,
  TASK_STATUSES,
  type TaskStatus,
  TERMINAL_STATUSES,
  type TerminalTaskStatus,
} from './status.js';
export {
  type FactValue,
  type NotificationLane,
  type ScheduleProgress,
  type TaskFacts,
  taskFact,
  type UsageFacts,
} from './task-facts.js';
export type { TaskService } from './task-service.js';
export type {
  BackgroundWaitResult,
  ControllerScope,
  Disposer,
  KillOptions,
  OnTaskDoneOptions,
  OnTasksChangedOptions,
  ReleaseClaimOptions,
  TaskChange,
  TaskChangeListener,
  TaskChangeReason,
  TaskDoneListener,
  TaskHooks,
  TaskOutcome,
  TaskReadResult,
  TaskRunContext,
  TaskSnapshot,
  TaskSpec,
} from './types.js';
