/**
 * MCP 2026-07-28 over Streamable HTTP: the stateless core (`server/discover`, per-request `_meta`, no
 * `initialize`, no protocol session) and the Tasks extension (`io.modelcontextprotocol/tasks`,
 * SEP-2663: a `tools/call` answered with a task, `tasks/get` polling with the result inlined,
 * `tasks/update`, `tasks/cancel` as an acknowledgement, `notifications/tasks` on a
 * `subscriptions/listen` stream; no `tasks/result`, no `tasks/list`).
 *
 * The SDK (1.x) stops at 2025-11-25, so the modern messages are written here, on top of one Errand MCP
 * server the endpoint drives in process as a 2025-11-25 client: every tool, the in-band notifications
 * and the 2025-11-25 task store are the same code the stdio and session-based HTTP clients use. A
 * background `bash` call from a client that declares the extension becomes a task; its end is claimed
 * for the task the moment the command ends, so no `<task-notification>` repeats what `tasks/get`
 * returns. Modern requests carry no session: they act for this endpoint's one Errand session, and a
 * task is reached only by its unguessable id.
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { JSONRPCMessage, Task as LegacyTask } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '../tasks/index.js';
import type { ErrandMcpServer } from './errand-mcp-server.js';
import { END_THROUGH_TASK_META } from './errand-task-store.js';
import { mcpInstructions } from './initialize-answer.js';
import {
  declaresTasksExtension,
  decodeHeaderValue,
  ERROR_HEADER_MISMATCH,
  ERROR_INTERNAL,
  ERROR_INVALID_PARAMS,
  ERROR_INVALID_REQUEST,
  ERROR_METHOD_NOT_FOUND,
  ERROR_MISSING_CLIENT_CAPABILITY,
  META_CLIENT_CAPABILITIES,
  META_PROTOCOL_VERSION,
  META_SERVER_INFO,
  META_SUBSCRIPTION_ID,
  MODERN_PROTOCOL_VERSION,
  type ModernTask,
  modernTaskOf,
  SUPPORTED_PROTOCOL_VERSIONS,
  TASKS_EXTENSION,
} from './modern-protocol.js';

export interface StatelessEndpointOptions {
  /** The Errand MCP server this endpoint drives (not connected to anything yet). */
  readonly mcp: ErrandMcpServer;
  readonly logger: Logger;
  /** `subscriptions/listen` streams open at once; one more is refused. */
  readonly maxListeners: number;
  /** How often an open listen stream gets an SSE comment, so idle proxies keep it. */
  readonly keepAliveMs: number;
}

type JsonObject = Record<string, unknown>;

interface JsonRpcRequest {
  readonly jsonrpc: '2.0';
  readonly id?: string | number;
  readonly method: string;
  readonly params?: JsonObject;
}

interface Reply {
  readonly status: number;
  readonly message: JsonObject;
}

interface Listener {
  readonly id: string | number;
  readonly taskIds: ReadonlySet<string>;
  readonly response: ServerResponse;
  readonly keepAlive: NodeJS.Timeout;
}

/** An error from the inner server, kept as the JSON-RPC error it was. */
class InnerError extends Error {
  constructor(readonly error: { code: number; message: string; data?: unknown }) {
    super(error.message);
  }
}

/**
 * The caching hint of `server/discover` and `tools/list` (both `CacheableResult`s): the tools and the
 * instructions of a server do not change while it runs; the cache stays within one token's clients.
 */
const CACHEABLE = { ttlMs: 60_000, cacheScope: 'private' } as const;

/** Methods that are 2025-11-25 only: the extension removed them. */
const REMOVED_METHODS = new Set(['tasks/result', 'tasks/list', 'initialize', 'logging/setLevel']);

export class StatelessEndpoint {
  readonly #options: StatelessEndpointOptions;
  readonly #transport: InMemoryTransport;
  readonly #pending = new Map<number, (message: JsonObject) => void>();
  readonly #listeners = new Set<Listener>();
  #nextId = 1;
  #started: Promise<void> | undefined;
  #closed = false;

  constructor(options: StatelessEndpointOptions) {
    this.#options = options;
    const [client, server] = InMemoryTransport.createLinkedPair();
    this.#transport = client;
    client.onmessage = (message) => this.#onInnerMessage(message as unknown as JsonObject);
    this.#serverSide = server;
  }

  readonly #serverSide: InMemoryTransport;

  /** Connects the inner server and introduces this endpoint to it, once. */
  start(): Promise<void> {
    this.#started ??= (async () => {
      await this.#options.mcp.connect(this.#serverSide);
      await this.#transport.start();
      const answer = await this.#innerRequest('initialize', {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: `mcp-${MODERN_PROTOCOL_VERSION}-clients`, version: MODERN_PROTOCOL_VERSION },
      });
      if ('error' in answer) throw new InnerError(answer.error as InnerError['error']);
      await this.#transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    })();
    return this.#started;
  }

  /** Answers one modern POST body. `headers` are the request's; the answer goes to `response`. */
  async handle(body: unknown, headers: IncomingHttpHeaders, response: ServerResponse): Promise<void> {
    const request = body as Partial<JsonRpcRequest> | null;
    if (typeof request !== 'object' || request === null || Array.isArray(request)) {
      return send(response, errorReply(400, null, ERROR_INVALID_REQUEST, 'Expected one JSON-RPC message'));
    }
    if (typeof request.method !== 'string') {
      return send(response, errorReply(400, request.id ?? null, ERROR_INVALID_REQUEST, 'Expected `method`'));
    }
    if (request.id === undefined) {
      // This revision defines no client notifications over HTTP; accept and ignore them.
      response.writeHead(202).end();
      return;
    }
    const invalid = this.#validate(request as JsonRpcRequest, headers);
    if (invalid) return send(response, invalid);
    await this.start();
    const full = request as JsonRpcRequest;
    if (full.method === 'subscriptions/listen') return this.#listen(full, response);
    let cancelled = false;
    let innerId: number | undefined;
    const onClose = () => {
      if (response.writableFinished) return;
      // Closing the response is the client cancelling the request.
      cancelled = true;
      if (innerId !== undefined) {
        void this.#transport
          .send({
            jsonrpc: '2.0',
            method: 'notifications/cancelled',
            params: { requestId: innerId, reason: 'the HTTP request closed' },
          })
          .catch(() => {});
      }
    };
    response.on('close', onClose);
    try {
      const reply = await this.#dispatch(full, (id) => {
        innerId = id;
      });
      if (!cancelled) send(response, reply);
    } catch (error) {
      if (!cancelled) send(response, replyForError(full.id as string | number, error));
    } finally {
      response.off('close', onClose);
    }
  }

  /** Ends every listen stream with its closing result and disconnects the inner server. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const listener of [...this.#listeners]) {
      writeEvent(listener.response, {
        jsonrpc: '2.0',
        id: listener.id,
        result: { resultType: 'complete', _meta: { [META_SUBSCRIPTION_ID]: listener.id } },
      });
      this.#dropListener(listener);
      listener.response.end();
    }
    for (const resolve of this.#pending.values()) {
      resolve({ error: { code: ERROR_INTERNAL, message: 'the server is shutting down' } });
    }
    this.#pending.clear();
    await this.#transport.close().catch(() => {});
  }

  // ---------------------------------------------------------------- requests

  #validate(request: JsonRpcRequest, headers: IncomingHttpHeaders): Reply | undefined {
    const id = request.id ?? null;
    const method = header(headers, 'mcp-method');
    if (method === undefined)
      return errorReply(400, id, ERROR_HEADER_MISMATCH, 'Missing `Mcp-Method` header');
    if (method !== request.method) {
      return errorReply(
        400,
        id,
        ERROR_HEADER_MISMATCH,
        `Header mismatch: Mcp-Method header value ${JSON.stringify(method)} does not match body value ${JSON.stringify(request.method)}`,
      );
    }
    const params = request.params;
    const meta = params?._meta as JsonObject | undefined;
    const version = meta?.[META_PROTOCOL_VERSION];
    if (typeof version !== 'string' || typeof meta?.[META_CLIENT_CAPABILITIES] !== 'object') {
      return errorReply(
        400,
        id,
        ERROR_INVALID_PARAMS,
        `Expected \`params._meta\` to carry ${JSON.stringify(META_PROTOCOL_VERSION)} and ${JSON.stringify(META_CLIENT_CAPABILITIES)}`,
      );
    }
    if (version !== header(headers, 'mcp-protocol-version')) {
      return errorReply(
        400,
        id,
        ERROR_HEADER_MISMATCH,
        `Header mismatch: MCP-Protocol-Version header does not match ${META_PROTOCOL_VERSION} ${JSON.stringify(version)}`,
      );
    }
    const named = nameOf(request);
    if (named !== undefined) {
      const name = header(headers, 'mcp-name');
      const decoded = name === undefined ? undefined : decodeHeaderValue(name);
      if (decoded !== named) {
        return errorReply(
          400,
          id,
          ERROR_HEADER_MISMATCH,
          name === undefined
            ? `Missing \`Mcp-Name\` header for ${request.method}`
            : `Header mismatch: Mcp-Name header value ${JSON.stringify(decoded)} does not match body value ${JSON.stringify(named)}`,
        );
      }
    }
    return undefined;
  }

  async #dispatch(request: JsonRpcRequest, onInnerId: (id: number) => void): Promise<Reply> {
    const id = request.id as string | number;
    const params = request.params ?? {};
    const ok = (result: JsonObject): Reply => ({
      status: 200,
      message: { jsonrpc: '2.0', id, result: this.#withServerInfo({ resultType: 'complete', ...result }) },
    });
    switch (request.method) {
      case 'server/discover':
        return ok({ ...this.#discover(), ...CACHEABLE });
      case 'ping':
        return ok({});
      case 'tools/list': {
        const listed = await this.#innerResult('tools/list', withoutMeta(params), onInnerId);
        const tools = (listed.tools as JsonObject[] | undefined) ?? [];
        // `execution.taskSupport` is the 2025-11-25 handshake; the extension has none.
        return ok({
          ...listed,
          ...CACHEABLE,
          tools: tools.map(({ execution: _execution, ...tool }) => tool),
        });
      }
      case 'tools/call':
        return this.#callTool(request, onInnerId);
      case 'tasks/get': {
        const task = await this.#detailedTask(String(params.taskId), onInnerId);
        return ok({ ...task });
      }
      case 'tasks/update': {
        // Responses settle the questions the task's command asked (`errand ask`); a key that is not
        // outstanding is ignored, as the extension says. An unknown task is an error.
        const responses = params.inputResponses ?? {};
        if (!isObject(responses)) {
          return errorReply(400, id, ERROR_INVALID_PARAMS, 'Expected `inputResponses` to be an object');
        }
        const taskId = String(params.taskId);
        await this.#innerResult('tasks/get', { taskId }, onInnerId);
        this.#options.mcp.taskStore?.answer(taskId, responses);
        return ok({});
      }
      case 'tasks/cancel':
        await this.#innerResult('tasks/cancel', { taskId: String(params.taskId) }, onInnerId);
        return ok({});
      default:
        return errorReply(
          404,
          id,
          ERROR_METHOD_NOT_FOUND,
          REMOVED_METHODS.has(request.method)
            ? `Method not found: ${request.method} is not part of MCP ${MODERN_PROTOCOL_VERSION}`
            : `Method not found: ${request.method}`,
        );
    }
  }

  #discover(): JsonObject {
    const mcp = this.#options.mcp;
    return {
      supportedVersions: [...SUPPORTED_PROTOCOL_VERSIONS],
      capabilities: { tools: {}, extensions: mcp.taskStore ? { [TASKS_EXTENSION]: {} } : {} },
      instructions: mcpInstructions(),
    };
  }

  async #callTool(request: JsonRpcRequest, onInnerId: (id: number) => void): Promise<Reply> {
    const id = request.id as string | number;
    // `task` is the 2025-11-25 opt-in: the extension removed it, so it is ignored, not obeyed.
    const { task: _ignored, ...params } = request.params ?? {};
    const meta = (params._meta as JsonObject | undefined) ?? {};
    const args = params.arguments as JsonObject | undefined;
    const ok = (result: JsonObject): Reply => ({
      status: 200,
      message: { jsonrpc: '2.0', id, result: this.#withServerInfo(result) },
    });
    const asTask =
      this.#options.mcp.taskStore !== undefined &&
      declaresTasksExtension(meta) &&
      params.name === 'bash' &&
      args?.run_in_background === true;
    if (!asTask) {
      const result = await this.#innerResult('tools/call', params, onInnerId);
      return ok({ resultType: 'complete', ...result });
    }
    const created = await this.#innerResult(
      'tools/call',
      { ...params, task: {}, _meta: { ...meta, [END_THROUGH_TASK_META]: true } },
      onInnerId,
    );
    const task = created.task as LegacyTask;
    if (task.status !== 'working') {
      // It ended (or never started) before the answer: the result itself is the answer.
      const result = await this.#innerResult('tasks/result', { taskId: task.taskId });
      return ok({ resultType: 'complete', ...result });
    }
    return ok({ resultType: 'task', ...modernTaskOf(task) });
  }

  /** A task as `tasks/get` and `notifications/tasks` carry it: its result inlined once it has one. */
  async #detailedTask(taskId: string, onInnerId?: (id: number) => void): Promise<ModernTask> {
    const task = (await this.#innerResult('tasks/get', { taskId }, onInnerId)) as unknown as LegacyTask;
    if (task.status === 'input_required') {
      return modernTaskOf(task, undefined, this.#options.mcp.taskStore?.inputRequestsOf(taskId));
    }
    if (task.status !== 'completed' && task.status !== 'failed') return modernTaskOf(task);
    const result = await this.#innerResult('tasks/result', { taskId });
    return modernTaskOf(task, withoutTaskMeta(result));
  }

  #withServerInfo(result: JsonObject): JsonObject {
    const mcp = this.#options.mcp;
    const meta = (result._meta as JsonObject | undefined) ?? {};
    return {
      ...result,
      _meta: { ...meta, [META_SERVER_INFO]: { name: mcp.options.name, version: mcp.options.version } },
    };
  }

  // ---------------------------------------------------------------- subscriptions/listen

  async #listen(request: JsonRpcRequest, response: ServerResponse): Promise<void> {
    const id = request.id as string | number;
    const params = request.params ?? {};
    const filter = (params.notifications as { taskIds?: unknown } | undefined) ?? {};
    const requested = Array.isArray(filter.taskIds)
      ? filter.taskIds.filter((taskId): taskId is string => typeof taskId === 'string')
      : [];
    if (requested.length > 0 && !declaresTasksExtension(params._meta as JsonObject | undefined)) {
      return send(response, {
        status: 400,
        message: {
          jsonrpc: '2.0',
          id,
          error: {
            code: ERROR_MISSING_CLIENT_CAPABILITY,
            message: 'Missing required client capability',
            data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
          },
        },
      });
    }
    if (this.#listeners.size >= this.#options.maxListeners) {
      return send(
        response,
        errorReply(
          503,
          id,
          ERROR_INTERNAL,
          `Too many subscriptions/listen streams open (the limit is ${this.#options.maxListeners})`,
        ),
      );
    }
    // Only ids of tasks this endpoint knows are agreed to; an unknown id is left out of the acknowledgement.
    const known: string[] = [];
    const ended: ModernTask[] = [];
    for (const taskId of requested) {
      try {
        const task = await this.#detailedTask(taskId);
        known.push(taskId);
        if (task.status !== 'working' && task.status !== 'input_required') ended.push(task);
      } catch {
        // Unknown or expired: not subscribed.
      }
    }
    response.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache',
      'X-Accel-Buffering': 'no',
    });
    const listener: Listener = {
      id,
      taskIds: new Set(known),
      response,
      keepAlive: setInterval(() => response.write(':\n\n'), this.#options.keepAliveMs),
    };
    this.#listeners.add(listener);
    response.on('close', () => this.#dropListener(listener));
    writeEvent(response, {
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: { taskIds: known }, _meta: { [META_SUBSCRIPTION_ID]: id } },
    });
    // What already ended is told at once: the client need not race the end against its subscription.
    for (const task of ended) writeTaskNotification(listener, task);
  }

  #dropListener(listener: Listener): void {
    clearInterval(listener.keepAlive);
    this.#listeners.delete(listener);
  }

  #onTaskStatus(task: LegacyTask): void {
    const listeners = [...this.#listeners].filter((listener) => listener.taskIds.has(task.taskId));
    if (listeners.length === 0) return;
    void this.#detailedTask(task.taskId).then(
      (detailed) => {
        for (const listener of listeners) writeTaskNotification(listener, detailed);
      },
      (error: unknown) => {
        this.#options.logger.warn('reading a task for notifications/tasks failed', {
          taskId: task.taskId,
          error: error instanceof Error ? error.message : String(error),
        });
      },
    );
  }

  // ---------------------------------------------------------------- the inner connection

  #innerRequest(method: string, params: JsonObject, onInnerId?: (id: number) => void): Promise<JsonObject> {
    if (this.#closed) {
      return Promise.resolve({ error: { code: ERROR_INTERNAL, message: 'the server is shutting down' } });
    }
    const id = this.#nextId;
    this.#nextId += 1;
    onInnerId?.(id);
    return new Promise((resolve, reject) => {
      this.#pending.set(id, resolve);
      this.#transport.send({ jsonrpc: '2.0', id, method, params } as JSONRPCMessage).catch((error) => {
        this.#pending.delete(id);
        reject(error);
      });
    });
  }

  async #innerResult(
    method: string,
    params: JsonObject,
    onInnerId?: (id: number) => void,
  ): Promise<JsonObject> {
    const answer = await this.#innerRequest(method, params, onInnerId);
    if ('error' in answer) throw new InnerError(answer.error as InnerError['error']);
    return answer.result as JsonObject;
  }

  #onInnerMessage(message: JsonObject): void {
    if ('id' in message && !('method' in message)) {
      const resolve = this.#pending.get(message.id as number);
      this.#pending.delete(message.id as number);
      resolve?.(message);
      return;
    }
    if ('id' in message && 'method' in message) {
      // The inner server asks this endpoint something (it declared no client capabilities): refuse.
      void this.#transport
        .send({
          jsonrpc: '2.0',
          id: message.id as number,
          error: { code: ERROR_METHOD_NOT_FOUND, message: `Method not found: ${String(message.method)}` },
        })
        .catch(() => {});
      return;
    }
    if (message.method === 'notifications/tasks/status') this.#onTaskStatus(message.params as LegacyTask);
    // Logging messages are request-scoped in 2026-07-28; a task's end reaches these clients on tool
    // results and through the task.
  }
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The body value `Mcp-Name` mirrors for a method, if it has one. */
function nameOf(request: JsonRpcRequest): string | undefined {
  const params = request.params ?? {};
  if (request.method === 'tools/call' || request.method === 'prompts/get') return String(params.name);
  if (request.method === 'resources/read') return String(params.uri);
  if (request.method.startsWith('tasks/')) return String(params.taskId);
  return undefined;
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function withoutMeta(params: JsonObject): JsonObject {
  const { _meta: _dropped, ...rest } = params;
  return rest;
}

/** A stored result without the SDK's related-task marker (the task itself carries its id). */
function withoutTaskMeta(result: JsonObject): JsonObject {
  const meta = result._meta as JsonObject | undefined;
  if (!meta) return result;
  const { 'io.modelcontextprotocol/related-task': _related, ...rest } = meta;
  return Object.keys(rest).length === 0 ? withoutMeta(result) : { ...result, _meta: rest };
}

function errorReply(status: number, id: unknown, code: number, message: string, data?: unknown): Reply {
  return {
    status,
    message: { jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } },
  };
}

function replyForError(id: string | number, error: unknown): Reply {
  if (error instanceof InnerError) {
    return { status: 200, message: { jsonrpc: '2.0', id, error: error.error } };
  }
  return errorReply(500, id, ERROR_INTERNAL, error instanceof Error ? error.message : String(error));
}

function send(response: ServerResponse, reply: Reply): void {
  if (response.headersSent) return;
  const body = JSON.stringify(reply.message);
  response.writeHead(reply.status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(body),
  });
  response.end(body);
}

function writeEvent(response: ServerResponse, message: JsonObject): void {
  response.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
}

function writeTaskNotification(listener: Listener, task: ModernTask): void {
  writeEvent(listener.response, {
    jsonrpc: '2.0',
    method: 'notifications/tasks',
    params: { ...task, _meta: { [META_SUBSCRIPTION_ID]: listener.id } },
  });
}
