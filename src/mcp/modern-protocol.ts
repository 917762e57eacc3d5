/**
 * The wire facts of MCP 2026-07-28 that Errand speaks beside the SDK's 2025-11-25 protocol: the version
 * names, the reserved `_meta` keys of the stateless core, its error codes, the Tasks extension's
 * identifier, and the mapping of a 2025-11-25 task (what the SDK's task store holds) onto the
 * extension's `Task` shape.
 */
import type { Task as LegacyTask } from '@modelcontextprotocol/sdk/types.js';

/** The modern protocol version: per-request `_meta`, no `initialize`, no protocol sessions. */
export const MODERN_PROTOCOL_VERSION = '2026-07-28';

/** Handshake-era versions the SDK serves (Streamable HTTP with `Mcp-Session-Id`). */
export const LEGACY_PROTOCOL_VERSIONS: readonly string[] = ['2025-11-25', '2025-06-18', '2025-03-26'];

/** Every version `errand mcp --http` answers, newest first (`server/discover`'s `supportedVersions`). */
export const SUPPORTED_PROTOCOL_VERSIONS: readonly string[] = [
  MODERN_PROTOCOL_VERSION,
  ...LEGACY_PROTOCOL_VERSIONS,
];

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

export const META_PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion';
export const META_CLIENT_INFO = 'io.modelcontextprotocol/clientInfo';
export const META_CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
export const META_SERVER_INFO = 'io.modelcontextprotocol/serverInfo';
export const META_SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';

export const ERROR_PARSE = -32700;
export const ERROR_INVALID_REQUEST = -32600;
export const ERROR_METHOD_NOT_FOUND = -32601;
export const ERROR_INVALID_PARAMS = -32602;
export const ERROR_INTERNAL = -32603;
export const ERROR_HEADER_MISMATCH = -32020;
export const ERROR_MISSING_CLIENT_CAPABILITY = -32021;
export const ERROR_UNSUPPORTED_PROTOCOL_VERSION = -32022;

/** The extension's task status: 2025-11-25's, minus nothing; `failed` is kept for JSON-RPC errors. */
export type ModernTaskStatus = 'working' | 'input_required' | 'completed' | 'cancelled' | 'failed';

/** The extension's `Task` (SEP-2663), as `tasks/get`, `notifications/tasks` and `CreateTaskResult` carry it. */
export interface ModernTask {
  readonly taskId: string;
  readonly status: ModernTaskStatus;
  readonly statusMessage?: string;
  readonly createdAt: string;
  readonly lastUpdatedAt: string;
  readonly ttlMs: number | null;
  readonly pollIntervalMs?: number;
  /** `completed` only: the result the `tools/call` would have returned. */
  readonly result?: Record<string, unknown>;
  /** `failed` only: the JSON-RPC error the request ended with. */
  readonly error?: Record<string, unknown>;
  /** `input_required` only: the outstanding server-to-client requests, by key. */
  readonly inputRequests?: Record<string, unknown>;
}

/**
 * The extension's view of a task the SDK's store holds. Errand's `failed` (a command that could not
 * start, or was lost) ends with a tool result, not a JSON-RPC error, so the extension calls it
 * `completed`, its result carrying `isError: true` — as the extension defines for tool errors.
 */
export function modernTaskOf(
  task: LegacyTask,
  result?: Record<string, unknown>,
  inputRequests?: Record<string, unknown>,
): ModernTask {
  const status: ModernTaskStatus = task.status === 'failed' ? 'completed' : task.status;
  return {
    taskId: task.taskId,
    status,
    ...(task.statusMessage === undefined ? {} : { statusMessage: task.statusMessage }),
    createdAt: task.createdAt,
    lastUpdatedAt: task.lastUpdatedAt,
    ttlMs: typeof task.ttl === 'number' ? task.ttl : null,
    ...(typeof task.pollInterval === 'number' ? { pollIntervalMs: task.pollInterval } : {}),
    ...(status === 'completed' && result !== undefined
      ? { result: { resultType: 'complete', ...result } }
      : {}),
    ...(status === 'input_required' ? { inputRequests: inputRequests ?? {} } : {}),
  };
}

/** Whether a request's per-request capabilities declare the Tasks extension. */
export function declaresTasksExtension(meta: Record<string, unknown> | undefined): boolean {
  const capabilities = meta?.[META_CLIENT_CAPABILITIES] as
    | { extensions?: Record<string, unknown> }
    | undefined;
  const settings = capabilities?.extensions?.[TASKS_EXTENSION];
  return typeof settings === 'object' && settings !== null;
}

/**
 * A header value as the client sent it: a `=?base64?…?=` sentinel is decoded (Streamable HTTP's
 * encoding for values that are not plain ASCII).
 */
export function decodeHeaderValue(value: string): string {
  const match = /^=\?base64\?([A-Za-z0-9+/=]*)\?=$/.exec(value);
  return match ? Buffer.from(match[1] as string, 'base64').toString('utf8') : value;
}
