/** Errand's MCP server (`errand mcp`): background tasks with notifications for every MCP client. */
export {
  type CommandOutput,
  describeTaskStatus,
  mcpTaskStatusOf,
  renderBashTaskResult,
} from './bash-task-result.js';
export { createErrandMcpServer, type ErrandMcpServer } from './errand-mcp-server.js';
export {
  createErrandTaskStore,
  ErrandTaskStore,
  type ErrandTaskStoreDependencies,
} from './errand-task-store.js';
export {
  McpInvalidCursorError,
  McpTaskLimitError,
  McpTaskNotFinishedError,
  McpTaskNotFoundError,
} from './errors.js';
export {
  CLIENT_HOOK_SOURCE,
  type HookEndpoint,
  type HookEndpointDependencies,
  startHookEndpoint,
} from './hook-endpoint.js';
export {
  HOOK_ENDPOINT_DEFAULTS,
  type HookEndpointOptions,
  type ResolvedHookEndpointOptions,
} from './hook-endpoint-options.js';
export { type HttpMcpServer, MCP_HTTP_PATH, startHttpMcpServer } from './http-server.js';
export {
  HTTP_MCP_SERVER_DEFAULTS,
  type HttpMcpServerOptions,
  type ResolvedHttpMcpServerOptions,
} from './http-server-options.js';
export {
  appendQueuedNotifications,
  carriesNotificationBlock,
  MCP_TOOL_RESULT_SOURCE,
  type NotificationInbox,
  type ReservedResult,
  type ReservingNotificationInbox,
  reserveQueuedNotificationsFor,
} from './in-band-notifications.js';
export { mcpInstructions } from './initialize-answer.js';
export {
  createMcpRuntime,
  MCP_CLIENT_MODEL,
  MCP_DEFAULT_MAX_TASKS,
  type McpRuntimeOptions,
} from './mcp-runtime.js';
export {
  type ErrandMcpServerOptions,
  MCP_SERVER_DEFAULTS,
  type ResolvedMcpServerOptions,
} from './mcp-server-options.js';
export {
  LEGACY_PROTOCOL_VERSIONS,
  MODERN_PROTOCOL_VERSION,
  type ModernTask,
  SUPPORTED_PROTOCOL_VERSIONS,
  TASKS_EXTENSION,
} from './modern-protocol.js';
export {
  forwardNotificationsAsLogs,
  MCP_LOGGER_NAME,
  type NotificationLogOptions,
} from './notification-log.js';
export { ResultDeliveries, type ResultDeliveriesDependencies } from './result-delivery.js';
export { StatelessEndpoint, type StatelessEndpointOptions } from './stateless-endpoint.js';
export { type StdioMcpServer, type StdioMcpServerOptions, startStdioMcpServer } from './stdio-server.js';
export {
  ERRAND_TASK_STORE_DEFAULTS,
  type ErrandTaskStoreOptions,
  type ResolvedErrandTaskStoreOptions,
} from './task-store-options.js';
export { clientToolCallId, mcpToolDescription } from './tool-descriptions.js';
export {
  firstDirectory,
  type McpRoot,
  WorkingDirectory,
  type WorkingDirectoryOptions,
  type WorkingDirectorySource,
} from './working-directory.js';
