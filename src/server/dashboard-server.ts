/**
 * The dashboard server: the page, the JSON API of DESIGN.md §8 and the event stream, on loopback by
 * default, behind a random token, a Host check and an Origin check. It can stop work; it can never
 * run anything.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type BackgroundWorksStore, createBackgroundWorksStore } from '../events/index.js';
import { ErrandError, validateSessionId } from '../tasks/index.js';
import { executeCommand, failureFault, parseCommand } from './commands.js';
import { readConversation } from './conversation-endpoint.js';
import type { DashboardSession } from './dashboard-backend.js';
import { EventStreamHub } from './event-stream.js';
import {
  DashboardRequestError,
  PAGE_CONTENT_SECURITY_POLICY,
  SECURITY_HEADERS,
  sendError,
  sendJson,
} from './http-response.js';
import { findOutputSnapshot } from './output-snapshot.js';
import { OutputRoutes } from './output-stream.js';
import { readJsonBody } from './read-json-body.js';
import { createRequestGuard, type RequestGuard } from './request-guard.js';
import {
  type DashboardServerOptions,
  dashboardServerOptions,
  type ResolvedDashboardOptions,
} from './server-options.js';
import { listSessionEntries } from './session-list.js';
import { loadStaticAssets, type StaticAsset } from './static-assets.js';

export interface DashboardAddress {
  /** The page's URL with the token in its query: what to print and open. */
  readonly url: string;
  /** `http://<host>:<port>`. */
  readonly origin: string;
  readonly host: string;
  readonly port: number;
}

export interface DashboardServer {
  /** The access token every API call must present. */
  readonly token: string;
  /** Set once listening. */
  readonly address: DashboardAddress | undefined;
  /** Loads the page and starts listening; resolves to the address (with the tokenized URL). */
  listen(): Promise<DashboardAddress>;
  /** Ends event streams and open connections, and stops listening. Idempotent. */
  close(): Promise<void>;
}

export function createDashboardServer(options: DashboardServerOptions): DashboardServer {
  return new HttpDashboardServer(dashboardServerOptions.resolve(options));
}

class ServerStateError extends ErrandError {
  constructor(message: string) {
    super('DASHBOARD_SERVER_STATE', 'caller', message);
  }
}

interface Running {
  readonly server: Server;
  readonly guard: RequestGuard;
  readonly store: BackgroundWorksStore;
  readonly hub: EventStreamHub;
  readonly output: OutputRoutes;
  readonly assets: ReadonlyMap<string, StaticAsset>;
  readonly address: DashboardAddress;
}

class HttpDashboardServer implements DashboardServer {
  readonly #options: ResolvedDashboardOptions;
  #running: Running | undefined;
  #starting: Promise<Running> | undefined;
  #closing: Promise<void> | undefined;

  constructor(options: ResolvedDashboardOptions) {
    this.#options = options;
  }

  get token(): string {
    return this.#options.token;
  }

  get address(): DashboardAddress | undefined {
    return this.#running?.address;
  }

  async listen(): Promise<DashboardAddress> {
    if (this.#starting || this.#running || this.#closing) {
      throw new ServerStateError('The dashboard server was already started');
    }
    const starting = this.#start();
    this.#starting = starting;
    let running: Running;
    try {
      running = await starting;
    } finally {
      this.#starting = undefined;
    }
    if (this.#closing) {
      // close() came while the server was starting: it shuts this start down.
      await this.#closing;
      throw new ServerStateError('The dashboard server was closed while it was starting');
    }
    this.#running = running;
    return running.address;
  }

  async #start(): Promise<Running> {
    const options = this.#options;
    const assets = await loadStaticAssets(options.assetsDirectory);
    const server = createServer((request, response) => {
      void this.#handle(request, response);
    });
    // A browser's speculative connections must not keep the process alive past close().
    server.keepAliveTimeout = 5000;
    const port = await new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port, options.host, () => {
        server.off('error', reject);
        resolve((server.address() as AddressInfo).port);
      });
    });
    const host = options.host.includes(':') ? `[${options.host}]` : options.host;
    const origin = `http://${host}:${port}`;
    const address: DashboardAddress = Object.freeze({
      url: `${origin}/?token=${encodeURIComponent(options.token)}`,
      origin,
      host: options.host,
      port,
    });
    const store = createBackgroundWorksStore(options.backend.events, { logger: options.logger });
    return {
      server,
      guard: createRequestGuard({ ...options, port }),
      store,
      hub: new EventStreamHub({
        feed: options.backend.events,
        notices: options.notices,
        heartbeatMs: options.heartbeatMs,
        maxClientBufferBytes: options.maxClientBufferBytes,
        maxClients: options.maxEventClients,
        logger: options.logger,
      }),
      output: new OutputRoutes({
        backend: options.backend,
        pageMaxBytes: options.outputPageMaxBytes,
        heartbeatMs: options.heartbeatMs,
        maxStreams: options.maxOutputStreams,
      }),
      assets,
      address,
    };
  }

  close(): Promise<void> {
    this.#closing ??= this.#closeNow();
    return this.#closing;
  }

  async #closeNow(): Promise<void> {
    const running = this.#running ?? (await this.#starting?.catch(() => undefined));
    if (running === undefined) return;
    running.hub.closeAll();
    running.output.closeAll();
    running.store.dispose();
    await new Promise<void>((resolve) => {
      running.server.close(() => resolve());
      running.server.closeAllConnections();
    });
  }

  // ---------------------------------------------------------------- requests

  async #handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const running = this.#running;
    try {
      if (running === undefined || this.#closing) {
        throw new DashboardRequestError(503, 'SERVER_UNAVAILABLE', 'The dashboard server is not running');
      }
      running.guard.checkHost(request);
      const url = new URL(request.url ?? '/', 'http://dashboard.invalid');
      if (url.pathname === '/api' || url.pathname.startsWith('/api/')) {
        running.guard.checkOrigin(request);
        running.guard.checkToken(request, url);
        await this.#route(running, request, response, url);
      } else {
        this.#serveAsset(running, request, response, url);
      }
    } catch (error) {
      this.#fail(response, error);
    }
  }

  #fail(response: ServerResponse, error: unknown): void {
    if (response.headersSent) {
      response.destroy();
      return;
    }
    if (DashboardRequestError.isRequestError(error)) {
      sendError(response, error);
      return;
    }
    this.#options.logger.warn('a dashboard request failed', {
      error: error instanceof Error ? error.message : String(error),
      code: ErrandError.isInstance(error) ? error.code : undefined,
    });
    sendError(response, new DashboardRequestError(500, 'INTERNAL_ERROR', 'The request failed'));
  }

  #serveAsset(running: Running, request: IncomingMessage, response: ServerResponse, url: URL): void {
    const asset = running.assets.get(url.pathname);
    if (asset === undefined) throw new DashboardRequestError(404, 'NOT_FOUND', 'Not found');
    requireMethod(request, 'GET');
    response.writeHead(200, {
      ...SECURITY_HEADERS,
      'Content-Security-Policy': PAGE_CONTENT_SECURITY_POLICY,
      'Content-Type': asset.contentType,
      'Content-Length': String(asset.body.length),
      'Cache-Control': 'no-cache',
    });
    response.end(asset.body);
  }

  async #route(
    running: Running,
    request: IncomingMessage,
    response: ServerResponse,
    url: URL,
  ): Promise<void> {
    const segments = pathSegments(url.pathname);
    const [, resource, id, leaf, extra] = segments;
    const options = this.#options;
    if (resource === 'sessions' && id === undefined) {
      requireMethod(request, 'GET');
      sendJson(response, 200, await this.#sessions(running));
    } else if (resource === 'notices' && id === undefined) {
      requireMethod(request, 'GET');
      const notices = options.notices;
      sendJson(response, 200, {
        enabled: notices !== undefined,
        sinks: notices?.sinks ?? [],
        sent: notices?.sent() ?? [],
      });
    } else if (resource === 'events' && id === undefined) {
      requireMethod(request, 'GET');
      running.hub.open(request, response, url);
    } else if (
      resource === 'sessions' &&
      id !== undefined &&
      leaf === 'background-works' &&
      extra === undefined
    ) {
      requireMethod(request, 'GET');
      await this.#requireSession(id);
      sendJson(response, 200, {
        sessionId: id,
        badgeCount: running.store.badgeCount(id),
        backgroundWorks: running.store.sessionWorks(id),
      });
    } else if (
      resource === 'background-works' &&
      id !== undefined &&
      leaf === 'output' &&
      extra === undefined
    ) {
      requireMethod(request, 'GET');
      const { searchParams } = url;
      if (searchParams.has('from') || searchParams.has('tailBytes') || searchParams.has('maxBytes')) {
        sendJson(response, 200, await running.output.page(id, url));
        return;
      }
      const snapshot = await findOutputSnapshot(id, {
        backend: options.backend,
        maxBytes: options.outputSnapshotMaxBytes,
        maxParentDepth: options.maxParentDepth,
      });
      sendJson(response, 200, snapshot);
    } else if (
      resource === 'sessions' &&
      id !== undefined &&
      leaf === 'conversation' &&
      extra === undefined
    ) {
      requireMethod(request, 'GET');
      await this.#requireSession(id);
      sendJson(
        response,
        200,
        await readConversation(id, url, {
          backend: options.backend,
          pageSize: options.conversationPageSize,
          maxPage: options.maxConversationPage,
          maxTextBytes: options.maxMessageTextBytes,
          maxResultBytes: options.maxToolResultBytes,
        }),
      );
    } else if (
      resource === 'background-works' &&
      id !== undefined &&
      leaf === 'output' &&
      extra === 'stream' &&
      segments.length === 5
    ) {
      requireMethod(request, 'GET');
      await running.output.stream(id, request, response, url);
    } else if (resource === 'commands' && id === undefined) {
      requireMethod(request, 'POST');
      const command = parseCommand(
        await readJsonBody(request, {
          maxBytes: options.maxBodyBytes,
          maxDiscardBytes: options.maxDiscardBytes,
          lingerMs: options.lingerMs,
        }),
      );
      if (command.type === 'stopAllBackgroundWork') await this.#requireSession(command.sessionId);
      const subject =
        command.type === 'stopAllBackgroundWork'
          ? { sessionId: command.sessionId }
          : { workId: command.workId };
      let result: Awaited<ReturnType<typeof executeCommand>>;
      try {
        result = await executeCommand(command, { backend: options.backend, works: running.store });
      } catch (error) {
        const what =
          command.type === 'stopAllBackgroundWork'
            ? `stopping the work of ${command.sessionId}`
            : command.type === 'moveToBackground'
              ? `moving ${command.workId} to the background`
              : `stopping ${command.workId}`;
        options.logger.warn(`${what} failed`, {
          ...subject,
          error: error instanceof Error ? error.message : String(error),
        });
        sendJson(response, 500, {
          type: 'ack',
          command: command.type,
          ...subject,
          ok: false,
          fault: failureFault(command),
          // Errand's own errors are written to be shown (a holder that did not answer in time, say).
          message: ErrandError.isInstance(error)
            ? error.message
            : command.type === 'moveToBackground'
              ? 'The move failed; the work may still run in the foreground'
              : 'The stop failed; the work may still be running',
          ...(ErrandError.isInstance(error) ? { code: error.code } : {}),
        });
        return;
      }
      sendJson(response, result.status, result.ack);
    } else {
      throw new DashboardRequestError(404, 'NOT_FOUND', `No API endpoint ${url.pathname}`);
    }
  }

  /** The session named in a path; 404 for an unknown one and for a string no session id can be. */
  async #requireSession(id: string): Promise<DashboardSession> {
    const notFound = () =>
      new DashboardRequestError(404, 'SESSION_NOT_FOUND', `No session with id ${JSON.stringify(id)}`);
    try {
      validateSessionId(id);
    } catch {
      // A "/" or a NUL decoded from the path never names a session: not found, not a failure.
      throw notFound();
    }
    const session = await this.#options.backend.getSession(id);
    if (session === undefined) throw notFound();
    return session;
  }

  async #sessions(running: Running): Promise<unknown> {
    const entries = listSessionEntries(await this.#options.backend.listSessions(), running.store);
    const listed = this.#options.maxListedSessions;
    return {
      badgeCount: running.store.badgeCount(),
      sessions: entries.slice(0, listed),
      // Beyond the cap (the oldest ended ones first): counted, not listed.
      omitted: Math.max(0, entries.length - listed),
    };
  }
}

function requireMethod(request: IncomingMessage, method: 'GET' | 'POST'): void {
  if (request.method !== method) {
    throw new DashboardRequestError(405, 'METHOD_NOT_ALLOWED', `Use ${method} here`, { Allow: method });
  }
}

function pathSegments(pathname: string): string[] {
  try {
    return pathname
      .split('/')
      .slice(1)
      .map((segment) => decodeURIComponent(segment));
  } catch {
    throw new DashboardRequestError(400, 'INVALID_PATH', 'The path is not valid percent-encoding');
  }
}
