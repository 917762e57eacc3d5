/** The dashboard server (`errand serve`): HTTP API, server-sent events and the static page. */
export { generateAccessToken, tokenMatches } from './access-token.js';
export {
  type CancelBackgroundWorkCommand,
  COMMAND_TYPES,
  type CommandAck,
  type CommandType,
  type DashboardCommand,
  normalizeStopReason,
} from './commands.js';
export type {
  DashboardBackend,
  DashboardSession,
  MaybePromise,
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
export {
  consoleDashboardLogger,
  DASHBOARD_SERVER_DEFAULTS,
  type DashboardServerOptions,
  DEFAULT_ASSETS_DIRECTORY,
  dashboardServerOptions,
} from './server-options.js';
export {
  createInMemorySessionDirectory,
  type InMemorySessionDirectory,
  type SessionDirectory,
} from './session-directory.js';
export { DashboardAssetsMissingError } from './static-assets.js';
export {
  createStoreDashboardBackend,
  readFileTail,
  STORE_DASHBOARD_DEFAULTS,
  StopFailedError,
  StopNotAnsweredError,
  type StoreDashboardBackend,
  type StoreDashboardBackendOptions,
} from './store-dashboard-backend.js';
export {
  createTaskServiceBackend,
  type TaskServiceBackend,
  type TaskServiceBackendOptions,
} from './task-service-backend.js';
