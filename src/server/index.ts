/** The dashboard server (`errand serve`): HTTP API, server-sent events and the static page. */
export { generateAccessToken, tokenMatches } from './access-token.js';
export {
  type CancelBackgroundWorkCommand,
  COMMAND_TYPES,
  type CommandAck,
  type CommandType,
  type DashboardCommand,
  type MoveToBackgroundCommand,
  normalizeStopReason,
  type StopAllBackgroundWorkCommand,
  type StopAllFailure,
  type StopAllRejection,
} from './commands.js';
export { type ConversationBody, pageFromStore } from './conversation-endpoint.js';
export type { ConversationMessageView, ToolCallView, ToolResultView } from './conversation-view.js';
export type {
  DashboardBackend,
  DashboardSession,
  ForegroundWork,
  MaybePromise,
  MessagePage,
  MessagePageRequest,
  MoveRejectionReason,
  MoveToBackgroundResult,
  OutputSnapshot,
  StopBackgroundWorkResult,
  StopRejectionReason,
} from './dashboard-backend.js';
export { createDashboardServer, type DashboardAddress, type DashboardServer } from './dashboard-server.js';
export { formatEventId, parseEventId } from './event-stream.js';
export {
  type DashboardErrorCode,
  DashboardRequestError,
  PAGE_CONTENT_SECURITY_POLICY,
  SECURITY_HEADERS,
} from './http-response.js';
export type { WorkOutputSnapshot } from './output-snapshot.js';
export { type BodyLimits, readJsonBody } from './read-json-body.js';
export { createRequestGuard, type RequestGuard, type RequestGuardOptions } from './request-guard.js';
export {
  consoleDashboardLogger,
  DASHBOARD_SERVER_DEFAULTS,
  type DashboardServerOptions,
  DEFAULT_ASSETS_DIRECTORY,
  dashboardServerOptions,
  isLoopbackHost,
} from './server-options.js';
export {
  createInMemorySessionDirectory,
  type InMemorySessionDirectory,
  type SessionDirectory,
} from './session-directory.js';
export { compareSessions, type SessionGroup, type SessionListEntry } from './session-list.js';
export {
  createSessionSummaries,
  FIRST_MESSAGE_MAX_CHARS,
  type SessionSummaries,
  type SessionSummaryOptions,
} from './session-summaries.js';
export { DashboardAssetsMissingError } from './static-assets.js';
export {
  createStoreDashboardBackend,
  MoveFailedError,
  readFileTail,
  STORE_DASHBOARD_DEFAULTS,
  StopFailedError,
  StopNotAnsweredError,
  type StoreDashboardBackend,
  type StoreDashboardBackendOptions,
} from './store-dashboard-backend.js';
export { type ParsedNotification, readTaskNotifications } from './task-notification-reader.js';
export {
  createTaskServiceBackend,
  type TaskServiceBackend,
  type TaskServiceBackendOptions,
} from './task-service-backend.js';
