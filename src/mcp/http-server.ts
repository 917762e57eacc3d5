/**
 * `errand mcp --http`: Errand's MCP server on Streamable HTTP, for a team that runs it as a service.
 * One endpoint (`/mcp`) behind a bearer token, the Host/Origin checks against DNS rebinding, and two
 * eras of the protocol side by side:
 *
 * - 2025-11-25 and earlier clients (`initialize`, then `Mcp-Session-Id`): one SDK transport and one
 *   Errand MCP server — so one Errand session, owning its tasks — per MCP session, bounded in number
 *   and closed after an idle time;
 * - 2026-07-28 clients (`MCP-Protocol-Version: 2026-07-28`, no session): the stateless endpoint, with
 *   the Tasks extension.
 *
 * The same tools, in-band notifications and MCP Tasks as on stdio. Client hooks (`errand hook`) are a
 * stdio feature: they find their server through the process tree.
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { ErrandRuntime } from '../host/index.js';
import {
  createRequestGuard,
  DashboardRequestError,
  type RequestGuard,
  readJsonBody,
} from '../server/index.js';
import { emitWarningLogger, isTerminalStatus, type Logger } from '../tasks/index.js';
import { createErrandMcpServer, type ErrandMcpServer } from './errand-mcp-server.js';
import {
  checkExposure,
  type HttpMcpServerOptions,
  httpMcpServerOptions,
  type ResolvedHttpMcpServerOptions,
} from './http-server-options.js';
import { createMcpRuntime } from './mcp-runtime.js';
import {
  ERROR_UNSUPPORTED_PROTOCOL_VERSION,
  META_PROTOCOL_VERSION,
  MODERN_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
} from './modern-protocol.js';
import { StatelessEndpoint } from './stateless-endpoint.js';
import { ASK_SOCKET_VARIABLE, startTaskQuestions } from './task-questions.js';

export const MCP_HTTP_PATH = '/mcp';

export interface HttpMcpServer {
  readonly runtime: ErrandRuntime;
  /** The endpoint, e.g. `http://127.0.0.1:8123/mcp` (no token in it). */
  readonly url: string;
  /** The bearer token requests must carry; false when none is required. */
  readonly token: string | false;
  /** MCP sessions (2025-11-25 and earlier clients) open now. */
  sessionCount(): number;
  /** Resolves once `shutdown` finished. */
  readonly closed: Promise<void>;
  /** Closes every session (stopping its tasks), the listener and the runtime. Idempotent. */
  shutdown(): Promise<void>;
}

interface SessionEntry {
  readonly transport: StreamableHTTPServerTransport;
  readonly mcp: ErrandMcpServer;
  lastSeen: number;
  /**
   * POST requests of this session in flight: such a session is never closed for being idle or to make
   * room. Its standalone GET stream (server-initiated notifications) does not count.
   */
  active: number;
}

/** The keys of `HttpMcpServerOptions` that are the HTTP server's own, not the MCP server's. */
const OWN_KEYS = [
  'runtime',
  'host',
  'port',
  'token',
  'tokenFile',
  'allowedHosts',
  'allowedOrigins',
  'maxSessions',
  'sessionIdleMs',
  'maxBodyBytes',
  'maxListeners',
  'keepAliveMs',
  'now',
] as const;

export async function startHttpMcpServer(options: HttpMcpServerOptions = {}): Promise<HttpMcpServer> {
  const resolved = httpMcpServerOptions.resolve(options);
  checkExposure(resolved.host, resolved.token);
  const logger: Logger = resolved.logger ?? emitWarningLogger;
  const serverOptions: Record<string, unknown> = { ...options };
  for (const key of OWN_KEYS) delete serverOptions[key];
  // Commands reach this server's question socket through their environment (`errand ask`).
  // A private directory (0700) of its own keeps the path short and the socket out of others' reach.
  const questionDirectory = mkdtempSync(join(tmpdir(), 'errand-ask-'));
  const questionSocket = {
    path: join(questionDirectory, 'ask.sock'),
    cleanup: () => rmSync(questionDirectory, { recursive: true, force: true }),
  };
  const runtime = await createMcpRuntimeOrCleanUp(questionSocket.cleanup, {
    ...options.runtime,
    env: {
      ...((options.runtime?.env ?? process.env) as Record<string, string>),
      [ASK_SOCKET_VARIABLE]: questionSocket.path,
    },
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    ...(options.runtime?.logger ? {} : { logger }),
  });
  const createServerFor = (extra: Record<string, unknown>): ErrandMcpServer =>
    createErrandMcpServer({ ...serverOptions, ...extra, runtime, logger } as Parameters<
      typeof createErrandMcpServer
    >[0]);

  const sessions = new Map<string, SessionEntry>();
  let opening = 0;
  let stateless: { endpoint: StatelessEndpoint; mcp: ErrandMcpServer } | undefined;
  const statelessEndpoint = (): StatelessEndpoint => {
    if (!stateless) {
      // Requests of this era carry no session: they share one Errand session, and tasks are reached by id.
      const mcp = createServerFor({
        sessionTitle: `MCP ${MODERN_PROTOCOL_VERSION} clients`,
        useRoots: false,
      });
      stateless = {
        mcp,
        endpoint: new StatelessEndpoint({
          mcp,
          logger,
          maxListeners: resolved.maxListeners,
          keepAliveMs: resolved.keepAliveMs,
        }),
      };
    }
    return stateless.endpoint;
  };

  const questions = await startTaskQuestions({
    socketPath: questionSocket.path,
    // Only a task the Tasks extension created can ask: its client polls, and answers with tasks/update.
    ask: (ancestors, question, signal) => stateless?.mcp.taskStore?.ask(ancestors, question, signal),
    logger,
    maxOpen: resolved.maxListeners,
  });

  let guard: RequestGuard | undefined;
  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    if (url.pathname !== MCP_HTTP_PATH) {
      throw new DashboardRequestError(404, 'NOT_FOUND', `Not found: the MCP endpoint is ${MCP_HTTP_PATH}`);
    }
    guard?.checkHost(request);
    guard?.checkOrigin(request);
    if (resolved.token !== false) guard?.checkToken(request, url);
    const version = headerOf(request, 'mcp-protocol-version');
    if (request.method !== 'POST') {
      if (headerOf(request, 'mcp-session-id') === undefined) {
        response.writeHead(405, { Allow: 'POST' }).end();
        return;
      }
      return handleLegacy(request, response, undefined);
    }
    const body = await readJsonBody(request, {
      maxBytes: resolved.maxBodyBytes,
      maxDiscardBytes: resolved.maxBodyBytes,
    });
    if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
      return sendJson(response, 400, {
        jsonrpc: '2.0',
        id: idOf(body),
        error: {
          code: ERROR_UNSUPPORTED_PROTOCOL_VERSION,
          message: 'Unsupported protocol version',
          data: { supported: [...SUPPORTED_PROTOCOL_VERSIONS], requested: version },
        },
      });
    }
    const modern =
      version === MODERN_PROTOCOL_VERSION ||
      (version === undefined && metaVersionOf(body) === MODERN_PROTOCOL_VERSION);
    if (modern) return statelessEndpoint().handle(body, request.headers, response);
    return handleLegacy(request, response, body);
  };

  const handleLegacy = async (
    request: IncomingMessage,
    response: ServerResponse,
    body: unknown,
  ): Promise<void> => {
    const sessionId = headerOf(request, 'mcp-session-id');
    if (sessionId !== undefined) {
      const entry = sessions.get(sessionId);
      if (!entry) {
        return sendJson(response, 404, jsonRpcError(body, -32001, 'Session not found'));
      }
      track(entry, request, response);
      await entry.transport.handleRequest(request, response, body);
      return;
    }
    if (!isInitializeRequest(body)) {
      return sendJson(
        response,
        400,
        jsonRpcError(body, -32000, 'Bad Request: No valid session ID provided (send initialize first)'),
      );
    }
    if (sessions.size + opening >= resolved.maxSessions) evictQuietSession(sessions, runtime);
    if (sessions.size + opening >= resolved.maxSessions) {
      return sendJson(
        response,
        503,
        jsonRpcError(body, -32000, `Too many MCP sessions open (the limit is ${resolved.maxSessions})`),
      );
    }
    opening += 1;
    let entry: SessionEntry | undefined;
    const mcp = createServerFor({});
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (id) => {
        if (entry) sessions.set(id, entry);
      },
    });
    entry = { transport, mcp, lastSeen: resolved.now(), active: 0 };
    transport.onclose = () => {
      const id = transport.sessionId;
      if (id !== undefined) sessions.delete(id);
      void mcp.close().catch((error: unknown) => {
        logger.warn('closing an MCP session failed', { error: describe(error) });
      });
    };
    try {
      await mcp.connect(transport);
      track(entry, request, response);
      await transport.handleRequest(request, response, body);
    } finally {
      opening -= 1;
      // An initialize the transport refused leaves no session: nothing may keep its Errand session.
      if (transport.sessionId === undefined || !sessions.has(transport.sessionId)) await mcp.close();
    }
  };

  const track = (entry: SessionEntry, request: IncomingMessage, response: ServerResponse): void => {
    if (request.method !== 'POST') return;
    entry.active += 1;
    entry.lastSeen = resolved.now();
    response.once('close', () => {
      entry.active -= 1;
      entry.lastSeen = resolved.now();
    });
  };

  const server: Server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (error instanceof DashboardRequestError) {
        response.on('error', () => {});
        return sendJson(
          response,
          error.status,
          {
            jsonrpc: '2.0',
            id: null,
            error: { code: -32000, message: error.message, data: { code: error.apiCode } },
          },
          error.headers,
        );
      }
      logger.warn('an MCP HTTP request failed', { error: describe(error) });
      sendJson(response, 500, {
        jsonrpc: '2.0',
        id: null,
        error: { code: -32603, message: 'Internal error' },
      });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(resolved.port, resolved.host, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch(async (error: unknown) => {
    await questions.close();
    questionSocket.cleanup();
    await runtime.dispose();
    throw error;
  });
  const port = (server.address() as AddressInfo).port;
  guard = createRequestGuard({
    host: resolved.host,
    port,
    token: resolved.token === false ? '' : resolved.token,
    allowedHosts: resolved.allowedHosts,
    allowedOrigins: resolved.allowedOrigins,
  });
  if (resolved.token !== false && resolved.tokenFile !== undefined) {
    writeTokenFile(resolved.tokenFile, resolved.token);
  }

  const sweep = setInterval(
    () => expireIdleSessions(sessions, resolved, logger),
    Math.min(60_000, Math.max(250, Math.floor(resolved.sessionIdleMs / 4))),
  );
  sweep.unref();

  let finished!: () => void;
  const closed = new Promise<void>((resolve) => {
    finished = resolve;
  });
  let shutting: Promise<void> | undefined;
  const shutdown = (): Promise<void> => {
    shutting ??= (async () => {
      clearInterval(sweep);
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      await questions.close();
      questionSocket.cleanup();
      await stateless?.endpoint.close();
      for (const entry of [...sessions.values()]) await entry.transport.close().catch(() => {});
      server.closeAllConnections();
      await stopped;
      const servers = [
        ...[...sessions.values()].map((entry) => entry.mcp),
        ...(stateless ? [stateless.mcp] : []),
      ];
      sessions.clear();
      for (const mcp of servers) {
        await mcp.close().catch((error: unknown) => {
          logger.warn('closing an MCP session failed', { error: describe(error) });
        });
      }
      await runtime.dispose();
      finished();
    })();
    return shutting;
  };

  const shownHost = resolved.host.includes(':') ? `[${resolved.host}]` : resolved.host;
  return {
    runtime,
    url: `http://${shownHost}:${port}${MCP_HTTP_PATH}`,
    token: resolved.token,
    sessionCount: () => sessions.size,
    closed,
    shutdown,
  };
}

/**
 * Makes room for a new session by closing the longest-idle one that nothing depends on: no request in
 * flight, no task of its session running, no notification queued. Clients that never send DELETE (most
 * close by dropping the connection) would otherwise fill every slot. Returns whether one was closed.
 */
function evictQuietSession(sessions: Map<string, SessionEntry>, runtime: ErrandRuntime): boolean {
  let quietest: [string, SessionEntry] | undefined;
  for (const pair of sessions) {
    const [, entry] = pair;
    if (entry.active > 0 || entry.mcp.session.inbox.queued > 0) continue;
    const running = runtime.tasks
      .list(entry.mcp.session.owner)
      .some((task) => !isTerminalStatus(task.status));
    if (running) continue;
    if (!quietest || entry.lastSeen < quietest[1].lastSeen) quietest = pair;
  }
  if (!quietest) return false;
  sessions.delete(quietest[0]);
  void quietest[1].transport.close().catch(() => {});
  return true;
}

/** `createMcpRuntime`, removing the question socket's directory when it fails. */
async function createMcpRuntimeOrCleanUp(
  cleanup: () => void,
  options: Parameters<typeof createMcpRuntime>[0],
): ReturnType<typeof createMcpRuntime> {
  try {
    return await createMcpRuntime(options);
  } catch (error) {
    cleanup();
    throw error;
  }
}

/** Closes sessions no request touched for `sessionIdleMs` (their Errand sessions stop their tasks). */
function expireIdleSessions(
  sessions: Map<string, SessionEntry>,
  resolved: ResolvedHttpMcpServerOptions,
  logger: Logger,
): void {
  const now = resolved.now();
  for (const [id, entry] of sessions) {
    if (entry.active > 0 || now - entry.lastSeen < resolved.sessionIdleMs) continue;
    sessions.delete(id);
    void entry.transport.close().catch((error: unknown) => {
      logger.warn('closing an idle MCP session failed', { sessionId: id, error: describe(error) });
    });
  }
}

function writeTokenFile(path: string, token: string): void {
  writeFileSync(path, `${token}\n`, { mode: 0o600 });
  // An existing file keeps its mode through writeFileSync: make it 0600 either way.
  chmodSync(path, 0o600);
}

function headerOf(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function idOf(body: unknown): unknown {
  const id = (body as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

function metaVersionOf(body: unknown): unknown {
  const meta = (body as { params?: { _meta?: Record<string, unknown> } } | null)?.params?._meta;
  return meta?.[META_PROTOCOL_VERSION];
}

function jsonRpcError(body: unknown, code: number, message: string): Record<string, unknown> {
  return { jsonrpc: '2.0', id: idOf(body), error: { code, message } };
}

function sendJson(
  response: ServerResponse,
  status: number,
  message: Record<string, unknown>,
  headers: Readonly<Record<string, string>> = {},
): void {
  if (response.headersSent) {
    response.end();
    return;
  }
  const body = JSON.stringify(message);
  response.writeHead(status, {
    ...headers,
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(body),
  });
  response.end(body);
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
