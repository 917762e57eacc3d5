import { mkdtemp, rm } from 'node:fs/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { connect as connectTcp, createServer as createTcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, type Mock, vi } from 'vitest';
import { createTaskService } from '../registry/index.js';
import { createMemorySessionStore } from '../store/index.js';
import { createOwner, ErrandError, type Owner, type TaskService } from '../tasks/index.js';
import { type ScriptedTask, type ScriptedTaskOptions, scriptedTask } from '../testing/index.js';
import type { DashboardBackend } from './dashboard-backend.js';
import { createDashboardServer, type DashboardAddress, type DashboardServer } from './dashboard-server.js';
import type { DashboardServerOptions } from './server-options.js';
import { createInMemorySessionDirectory } from './session-directory.js';
import { createStoreDashboardBackend } from './store-dashboard-backend.js';
import { createTaskServiceBackend, type TaskServiceBackend } from './task-service-backend.js';

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

interface Fixture {
  readonly service: TaskService;
  readonly backend: TaskServiceBackend;
  readonly server: DashboardServer;
  readonly address: DashboardAddress;
  readonly token: string;
  readonly logger: { warn: Mock<(message: string, context?: Record<string, unknown>) => void> };
  /** Output a live runtime holds, by `<sessionId>/<workId>`. */
  readonly outputs: Map<string, string>;
  readonly readOutput: ReturnType<typeof vi.fn>;
  owner(sessionId: string): Owner;
  start(sessionId: string, options?: ScriptedTaskOptions): Promise<{ task: ScriptedTask; id: string }>;
}

const fixtures: Fixture[] = [];

async function startFixture(
  options: {
    server?: Partial<DashboardServerOptions>;
    backend?: (backend: TaskServiceBackend) => DashboardBackend;
    feed?: { ringSize?: number; tailMaxBytes?: number };
  } = {},
): Promise<Fixture> {
  const logger = { warn: vi.fn<(message: string, context?: Record<string, unknown>) => void>() };
  const service = createTaskService({ logger });
  service.attachController('test');
  const sessions = createInMemorySessionDirectory([
    { id: 'main', title: 'Main session' },
    { id: 'child', title: 'A subagent', parentId: 'main' },
    { id: 'idle', title: 'Idle session' },
  ]);
  const outputs = new Map<string, string>();
  const readOutput = vi.fn((sessionId: string, workId: string) => {
    const text = outputs.get(`${sessionId}/${workId}`);
    return text === undefined ? undefined : { text, totalBytes: Buffer.byteLength(text) };
  });
  const backend = createTaskServiceBackend({
    tasks: service,
    sessions,
    readOutput,
    feed: { logger, ...options.feed },
  });
  const server = createDashboardServer({
    backend: options.backend ? options.backend(backend) : backend,
    logger,
    ...options.server,
  });
  const address = await server.listen();
  const owners = new Map<string, Owner>();
  const owner = (sessionId: string) => {
    let found = owners.get(sessionId);
    if (!found) {
      found = createOwner(sessionId);
      owners.set(sessionId, found);
    }
    return found;
  };
  const fixture: Fixture = {
    service,
    backend,
    server,
    address,
    token: server.token,
    logger,
    outputs,
    readOutput,
    owner,
    async start(sessionId, taskOptions = {}) {
      const task = scriptedTask({ kind: 'bash', label: 'npm test', owner: owner(sessionId), ...taskOptions });
      const snapshot = await service.start(task.spec);
      return { task, id: snapshot.id };
    },
  };
  fixtures.push(fixture);
  return fixture;
}

afterEach(async () => {
  for (const fixture of fixtures.splice(0)) {
    await fixture.server.close();
    fixture.backend.dispose();
    await fixture.service.dispose();
  }
});

interface Reply {
  readonly status: number;
  readonly headers: IncomingMessage['headers'];
  readonly text: string;
  // biome-ignore lint/suspicious/noExplicitAny: replies are inspected structurally by the assertions
  json(): any;
}

function send(
  fixture: Fixture,
  method: string,
  path: string,
  options: {
    headers?: Record<string, string>;
    body?: string | Buffer;
    auth?: 'bearer' | 'query' | 'none';
  } = {},
): Promise<Reply> {
  const auth = options.auth ?? 'bearer';
  const separator = path.includes('?') ? '&' : '?';
  const fullPath = auth === 'query' ? `${path}${separator}token=${encodeURIComponent(fixture.token)}` : path;
  const headers: Record<string, string> = {
    Host: `127.0.0.1:${fixture.address.port}`,
    ...(auth === 'bearer' ? { Authorization: `Bearer ${fixture.token}` } : {}),
    ...options.headers,
  };
  // An empty Host means none at all (Node would otherwise fill in its own).
  const setHost = headers.Host !== '';
  if (!setHost) delete headers.Host;
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        host: '127.0.0.1',
        port: fixture.address.port,
        method,
        path: fullPath,
        headers,
        agent: false,
        setHost,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            text,
            json: () => JSON.parse(text),
          });
        });
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    if (options.body !== undefined) request.write(options.body);
    request.end();
  });
}

/**
 * Posts `body` over a raw socket as a simple client does: the whole body first, then the answer is read.
 * Resolves with the status and error code, or with how the answer was lost.
 */
function postRaw(fixture: Fixture, body: Buffer, framing: 'length' | 'chunked'): Promise<string> {
  return new Promise((resolve) => {
    const socket = connectTcp(fixture.address.port, '127.0.0.1');
    socket.pause();
    let received = '';
    let failure: string | undefined;
    socket.on('error', (error: NodeJS.ErrnoException) => {
      failure ??= error.code;
    });
    const answer = () => {
      const split = received.indexOf('\r\n\r\n');
      if (split < 0) return undefined;
      const length = Number(/content-length: (\d+)/i.exec(received.slice(0, split))?.[1]);
      const payload = received.slice(split + 4);
      if (Buffer.byteLength(payload) < length) return undefined;
      return `${received.slice(9, 12)} ${JSON.parse(payload).error?.code}`;
    };
    socket.once('connect', async () => {
      const head = [
        'POST /api/commands HTTP/1.1',
        `Host: 127.0.0.1:${fixture.address.port}`,
        `Authorization: Bearer ${fixture.token}`,
        'Content-Type: application/json',
        framing === 'length' ? `Content-Length: ${body.length}` : 'Transfer-Encoding: chunked',
      ].join('\r\n');
      socket.write(`${head}\r\n\r\n`);
      const step = 64 * 1024;
      for (let offset = 0; offset < body.length && !socket.destroyed; offset += step) {
        const part = body.subarray(offset, offset + step);
        const framed =
          framing === 'length'
            ? part
            : Buffer.concat([Buffer.from(`${part.length.toString(16)}\r\n`), part, Buffer.from('\r\n')]);
        await new Promise<void>((written) => socket.write(framed, () => written()));
      }
      if (framing === 'chunked' && !socket.destroyed) socket.write('0\r\n\r\n');
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString('utf8');
        const found = answer();
        if (found !== undefined) {
          socket.destroy();
          resolve(found);
        }
      });
      socket.once('close', () => resolve(answer() ?? `lost (${failure ?? 'closed'})`));
      socket.resume();
    });
  });
}

function command(fixture: Fixture, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  return send(fixture, 'POST', '/api/commands', {
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

interface Frame {
  readonly id?: string;
  readonly event?: string;
  readonly data?: string;
  readonly comment?: string;
}

interface EventStream {
  readonly status: number;
  readonly frames: Frame[];
  readonly response: IncomingMessage;
  /** Resolves with the first frame (from the start) that matches. */
  waitFor(predicate: (frame: Frame) => boolean): Promise<Frame>;
  readonly closed: Promise<void>;
  close(): void;
}

function openEventStream(fixture: Fixture, headers: Record<string, string> = {}): Promise<EventStream> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        host: '127.0.0.1',
        port: fixture.address.port,
        path: `/api/events?token=${encodeURIComponent(fixture.token)}`,
        headers: { Host: `127.0.0.1:${fixture.address.port}`, Accept: 'text/event-stream', ...headers },
        agent: false,
      },
      (response) => {
        const frames: Frame[] = [];
        const waiters = new Set<{ predicate: (frame: Frame) => boolean; resolve: (frame: Frame) => void }>();
        let buffer = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          buffer += chunk;
          let end = buffer.indexOf('\n\n');
          while (end >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const frame: Record<string, string> = {};
            for (const line of block.split('\n')) {
              if (line.startsWith(':')) frame.comment = line.slice(1).trim();
              else {
                const colon = line.indexOf(':');
                frame[line.slice(0, colon)] = line.slice(colon + 1).replace(/^ /, '');
              }
            }
            frames.push(frame);
            for (const waiter of [...waiters]) {
              if (waiter.predicate(frame)) {
                waiters.delete(waiter);
                waiter.resolve(frame);
              }
            }
            end = buffer.indexOf('\n\n');
          }
        });
        // The socket, not the response: a paused response reports nothing until it is read.
        const closed = new Promise<void>((resolveClosed) => {
          response.socket.once('close', () => resolveClosed());
        });
        resolve({
          status: response.statusCode ?? 0,
          frames,
          response,
          closed,
          waitFor(predicate) {
            const found = frames.find(predicate);
            if (found) return Promise.resolve(found);
            return new Promise((resolveFrame) => waiters.add({ predicate, resolve: resolveFrame }));
          },
          close: () => request.destroy(),
        });
      },
    );
    request.on('error', (error) => {
      if ((error as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(error);
    });
    request.end();
  });
}

const data = (frame: Frame) => JSON.parse(frame.data ?? 'null');

/** A port nothing listens on right now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createTcpServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** 'connected', or the error code of a refused connection. */
function tryConnect(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connectTcp(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

describe('access', () => {
  it('refuses every API call without the token', async () => {
    const fixture = await startFixture();
    for (const [method, path] of [
      ['GET', '/api/sessions'],
      ['GET', '/api/events'],
      ['GET', '/api/sessions/main/background-works'],
      ['GET', '/api/background-works/bash-1/output'],
      ['POST', '/api/commands'],
    ] as const) {
      const reply = await send(fixture, method, path, { auth: 'none' });
      expect(reply.status, path).toBe(401);
      expect(reply.json().error.code).toBe('TOKEN_REQUIRED');
      expect(reply.headers['www-authenticate']).toBe('Bearer');
    }
  });

  it('refuses a wrong token, in the query or as a bearer', async () => {
    const fixture = await startFixture();
    const wrong = `${fixture.token.slice(0, -1)}${fixture.token.endsWith('A') ? 'B' : 'A'}`;
    const asQuery = await send(fixture, 'GET', `/api/sessions?token=${wrong}`, { auth: 'none' });
    const asBearer = await send(fixture, 'GET', '/api/sessions', {
      auth: 'none',
      headers: { Authorization: `Bearer ${wrong}` },
    });
    const truncated = await send(fixture, 'GET', `/api/sessions?token=${fixture.token.slice(0, 8)}`, {
      auth: 'none',
    });
    for (const reply of [asQuery, asBearer, truncated]) {
      expect(reply.status).toBe(401);
      expect(reply.json().error.code).toBe('TOKEN_INVALID');
    }
  });

  it('accepts the token in the query and as a bearer', async () => {
    const fixture = await startFixture();
    expect((await send(fixture, 'GET', '/api/sessions', { auth: 'query' })).status).toBe(200);
    expect((await send(fixture, 'GET', '/api/sessions', { auth: 'bearer' })).status).toBe(200);
  });

  it('prints a loopback URL that carries a strong random token', async () => {
    const fixture = await startFixture();
    const other = await startFixture();
    expect(fixture.address.url).toBe(
      `http://127.0.0.1:${fixture.address.port}/?token=${encodeURIComponent(fixture.token)}`,
    );
    expect(fixture.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(other.token).not.toBe(fixture.token);
  });

  it('refuses a command from a foreign Origin, even with the token', async () => {
    const fixture = await startFixture();
    const { id } = await fixture.start('main');
    const foreign = await command(
      fixture,
      { type: 'cancelBackgroundWork', workId: id },
      { Origin: 'https://evil.example' },
    );
    expect(foreign.status).toBe(403);
    expect(foreign.json().error.code).toBe('ORIGIN_FORBIDDEN');
    const crossSite = await command(
      fixture,
      { type: 'cancelBackgroundWork', workId: id },
      { 'Sec-Fetch-Site': 'cross-site' },
    );
    expect(crossSite.status).toBe(403);
    expect(fixture.service.get(id, fixture.owner('main')).status).toBe('running');

    const sameOrigin = await command(
      fixture,
      { type: 'cancelBackgroundWork', workId: id },
      { Origin: fixture.address.origin },
    );
    expect(sameOrigin.status).toBe(200);
  });

  it('accepts a command without Origin (a non-browser client that holds the token)', async () => {
    const fixture = await startFixture();
    const { id } = await fixture.start('main');
    expect((await command(fixture, { type: 'cancelBackgroundWork', workId: id })).status).toBe(200);
  });

  it('refuses a Host header that does not name the server (DNS rebinding)', async () => {
    const fixture = await startFixture();
    for (const host of [
      `evil.example:${fixture.address.port}`,
      'localhost:1',
      `127.0.0.1.nip.io:${fixture.address.port}`,
    ]) {
      const reply = await send(fixture, 'GET', '/api/sessions', { headers: { Host: host } });
      expect(reply.status, host).toBe(403);
      expect(reply.json().error.code).toBe('HOST_FORBIDDEN');
    }
    const page = await send(fixture, 'GET', '/', {
      auth: 'none',
      headers: { Host: `rebound.example:${fixture.address.port}` },
    });
    expect(page.status).toBe(403);
    // Node itself refuses an HTTP/1.1 request with no Host at all.
    expect((await send(fixture, 'GET', '/api/sessions', { headers: { Host: '' } })).status).toBe(400);
    const localhost = await send(fixture, 'GET', '/api/sessions', {
      headers: { Host: `localhost:${fixture.address.port}` },
    });
    expect(localhost.status).toBe(200);
  });
});

describe('the page', () => {
  it('serves the page and its assets with a strict content security policy', async () => {
    const fixture = await startFixture();
    const page = await send(fixture, 'GET', '/', { auth: 'none' });
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    expect(page.text).toContain('<script type="module" src="/app.js"></script>');

    const script = await send(fixture, 'GET', '/app.js', { auth: 'none' });
    expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect((await send(fixture, 'GET', '/app.css', { auth: 'none' })).status).toBe(200);
  });

  it('serves nothing but its own files', async () => {
    const fixture = await startFixture();
    for (const path of [
      '/package.json',
      '/../package.json',
      '/%2e%2e/package.json',
      '/web/app.js',
      '/tsconfig.json',
    ]) {
      expect((await send(fixture, 'GET', path, { auth: 'none' })).status, path).toBe(404);
    }
    expect((await send(fixture, 'POST', '/', { auth: 'none' })).status).toBe(405);
  });

  it('fails to start, clearly, when the page is missing', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'errand-no-assets-'));
    try {
      const service = createTaskService({ logger: { warn: vi.fn() } });
      const backend = createTaskServiceBackend({
        tasks: service,
        sessions: createInMemorySessionDirectory(),
        feed: { logger: { warn: vi.fn() } },
      });
      const server = createDashboardServer({
        backend,
        assetsDirectory: directory,
        logger: { warn: vi.fn() },
      });
      await expect(server.listen()).rejects.toMatchObject({ code: 'DASHBOARD_ASSETS_MISSING' });
      await server.close();
      backend.dispose();
    } finally {
      await rm(directory, { recursive: true });
    }
  });
});

describe('sessions and background works', () => {
  it('lists at most maxListedSessions sessions, running work first, and counts the rest', async () => {
    const fixture = await startFixture({ server: { maxListedSessions: 2 } });
    await fixture.start('idle');
    await flush();
    const body = (await send(fixture, 'GET', '/api/sessions')).json() as {
      sessions: { id: string }[];
      omitted: number;
    };
    expect(body.sessions.map((session) => session.id)).toHaveLength(2);
    expect(body.sessions[0]?.id).toBe('idle');
    expect(body.omitted).toBe(1);
  });

  it('lists sessions with a running-work marker and badge counts', async () => {
    const fixture = await startFixture();
    await fixture.start('main');
    await fixture.start('main', { kind: 'agent', label: 'research' });
    await fixture.start('main', { kind: 'monitor', label: 'watch', cancellable: false });
    const done = await fixture.start('child');
    done.task.settle({ status: 'failed', error: 'exit 2' });
    await flush();

    const reply = await send(fixture, 'GET', '/api/sessions');
    expect(reply.headers['cache-control']).toBe('no-store');
    expect(reply.json()).toEqual({
      badgeCount: 2,
      sessions: [
        {
          id: 'main',
          title: 'Main session',
          parentId: null,
          createdAt: null,
          cwd: null,
          firstUserMessage: null,
          live: true,
          own: false,
          pid: null,
          hasRunningWork: true,
          badgeCount: 2,
          runningElsewhere: 0,
          group: 'running',
        },
        {
          id: 'child',
          title: 'A subagent',
          parentId: 'main',
          createdAt: null,
          cwd: null,
          firstUserMessage: null,
          live: true,
          own: false,
          pid: null,
          hasRunningWork: false,
          badgeCount: 0,
          runningElsewhere: 0,
          group: 'live',
        },
        {
          id: 'idle',
          title: 'Idle session',
          parentId: null,
          createdAt: null,
          cwd: null,
          firstUserMessage: null,
          live: true,
          own: false,
          pid: null,
          hasRunningWork: false,
          badgeCount: 0,
          runningElsewhere: 0,
          group: 'live',
        },
      ],
      omitted: 0,
    });
  });

  it("returns a session's background works in their five states", async () => {
    const fixture = await startFixture();
    const running = await fixture.start('main', { label: 'running' });
    const pending = await fixture.start('main', { label: 'pending' });
    const failed = await fixture.start('main', { label: 'failed' });
    const cancelled = await fixture.start('main', { label: 'cancelled' });
    const delivered = await fixture.start('main', { label: 'delivered' });
    await fixture.start('main', { label: 'foreground', background: false });
    pending.task.settle({ status: 'completed', detail: { exitCode: 0 } });
    failed.task.settle({ status: 'killed', detail: { reason: 'timed_out' } });
    delivered.task.settle();
    await fixture.service.kill(cancelled.id, fixture.owner('main'));
    await flush();
    // A bare task service knows no ledger: a taken claim is what ends a pending result.
    for (const { id } of [failed, cancelled, delivered]) fixture.service.claim(id, fixture.owner('main'));

    const reply = await send(fixture, 'GET', '/api/sessions/main/background-works');
    expect(reply.status).toBe(200);
    const body = reply.json();
    expect(body.sessionId).toBe('main');
    expect(body.badgeCount).toBe(1);
    expect(
      body.backgroundWorks.map((work: { label: string; state: string }) => [work.label, work.state]),
    ).toEqual([
      ['running', 'running'],
      ['pending', 'resultPending'],
      ['failed', 'failed'],
      ['cancelled', 'cancelled'],
      ['delivered', 'completed'],
    ]);
    expect(body.backgroundWorks[0]).toMatchObject({ workId: running.id, kind: 'bash', cancellable: true });
  });

  it('answers 404 for an unknown session and an unknown endpoint', async () => {
    const fixture = await startFixture();
    const unknown = await send(fixture, 'GET', '/api/sessions/nobody/background-works');
    expect(unknown.status).toBe(404);
    expect(unknown.json().error.code).toBe('SESSION_NOT_FOUND');
    expect((await send(fixture, 'GET', '/api/nothing')).json().error.code).toBe('NOT_FOUND');
    expect((await send(fixture, 'GET', '/api/sessions/%E0%A4%A/background-works')).json().error.code).toBe(
      'INVALID_PATH',
    );
    // Ids no session can have (a "/" or a NUL decoded from the path) are not found either, never a failure.
    for (const path of ['/api/sessions/a%2Fb/background-works', '/api/sessions/a%00b/background-works']) {
      const reply = await send(fixture, 'GET', path);
      expect(reply.status, path).toBe(404);
      expect(reply.json().error.code, path).toBe('SESSION_NOT_FOUND');
    }
    const wrongMethod = await send(fixture, 'DELETE', '/api/sessions');
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.allow).toBe('GET');
  });
});

describe('control by hand over a bare task service', () => {
  it('lists foreground work, moves it to the background through the task service, and stops all of a session', async () => {
    const fixture = await startFixture();
    const foreground = await fixture.start('main', {
      background: false,
      spec: { detail: { toolUseId: 'call_fg' } },
    });
    const first = await fixture.start('main');
    const second = await fixture.start('main', { kind: 'monitor', label: 'watch', cancellable: false });
    const other = await fixture.start('idle');
    const moved = fixture.service.waitForBackground(foreground.id, fixture.owner('main'));

    const conversation = (await send(fixture, 'GET', '/api/sessions/main/conversation')).json();
    expect(conversation).toMatchObject({ available: false, messages: [], hasOlder: false });
    expect(conversation.foreground).toEqual([
      expect.objectContaining({ workId: foreground.id, toolCallId: 'call_fg', canMoveToBackground: true }),
    ]);
    const move = await command(fixture, { type: 'moveToBackground', workId: foreground.id });
    expect(move.status).toBe(200);
    await expect(moved).resolves.toBe('backgrounded');
    expect((await command(fixture, { type: 'moveToBackground', workId: foreground.id })).status).toBe(409);

    const stopAll = await command(fixture, { type: 'stopAllBackgroundWork', sessionId: 'main' });
    expect(stopAll.status).toBe(200);
    expect([...stopAll.json().stopped].sort()).toEqual([foreground.id, first.id].sort());
    expect(stopAll.json().rejected).toEqual([{ workId: second.id, reason: 'cancel_not_supported' }]);
    expect(fixture.service.get(other.id, fixture.owner('idle')).status).toBe('running');
    expect(first.task.cancelReasons).toEqual(['stopped from the dashboard']);
  });

  it('refuses malformed commands with a code naming the field', async () => {
    const fixture = await startFixture();
    for (const [body, code] of [
      [{ type: 'stopAllBackgroundWork' }, 'MISSING_SESSION_ID'],
      [{ type: 'stopAllBackgroundWork', sessionId: '' }, 'MISSING_SESSION_ID'],
      [{ type: 'moveToBackground' }, 'MISSING_WORK_ID'],
      [{ type: 'moveToBackground', workId: 3 }, 'MISSING_WORK_ID'],
    ] as const) {
      const reply = await command(fixture, body);
      expect([reply.status, reply.json().error.code]).toEqual([400, code]);
    }
    const idle = await command(fixture, { type: 'stopAllBackgroundWork', sessionId: 'idle' });
    expect([idle.status, idle.json().fault]).toEqual([
      409,
      'fault.command.backgroundWorkCancelRejected.not_running',
    ]);
  });
});

describe('paths over a store', () => {
  it('answers 404, not 500, for a session id no store accepts', async () => {
    const store = createMemorySessionStore();
    store.createSession({ id: 'real', cwd: '/' });
    const backend = createStoreDashboardBackend({ store, pollMs: 3_600_000, logger: { warn() {} } });
    const logger = { warn: vi.fn() };
    const server = createDashboardServer({ backend, logger });
    const address = await server.listen();
    try {
      const get = async (path: string) => {
        const response = await fetch(`${address.origin}${path}`, {
          headers: { Authorization: `Bearer ${server.token}` },
        });
        return { status: response.status, body: (await response.json()) as { error?: { code: string } } };
      };
      for (const id of ['a%2Fb', '%00', 'x%00y', '..%2F..', '%20', 'a'.repeat(200)]) {
        const reply = await get(`/api/sessions/${id}/background-works`);
        expect([id, reply.status, reply.body.error?.code]).toEqual([id, 404, 'SESSION_NOT_FOUND']);
      }
      expect((await get('/api/sessions/real/background-works')).status).toBe(200);
      expect(logger.warn).not.toHaveBeenCalled();
    } finally {
      await server.close();
      backend.dispose();
    }
  });
});

describe('commands', () => {
  it('acknowledges a cancel and really stops the task, as the user', async () => {
    const fixture = await startFixture();
    const { task, id } = await fixture.start('main');
    const reply = await command(fixture, { type: 'cancelBackgroundWork', workId: id });
    expect(reply.status).toBe(200);
    expect(reply.json()).toEqual({ type: 'ack', command: 'cancelBackgroundWork', workId: id, ok: true });
    expect(task.cancelReasons).toEqual(['stopped from the dashboard']);
    await flush();
    const snapshot = fixture.service.get(id, fixture.owner('main'));
    expect(snapshot.status).toBe('killed');
    expect(snapshot.stopInitiator).toBe('user');
  });

  it('answers a fault, never a success, when nothing was cancelled', async () => {
    const fixture = await startFixture();
    const finished = await fixture.start('main');
    finished.task.settle();
    await flush();
    const fixed = await fixture.start('main', { kind: 'monitor', cancellable: false });

    const notRunning = await command(fixture, { type: 'cancelBackgroundWork', workId: finished.id });
    expect(notRunning.status).toBe(409);
    expect(notRunning.json()).toMatchObject({
      type: 'ack',
      ok: false,
      workId: finished.id,
      fault: 'fault.command.backgroundWorkCancelRejected.not_running',
      reason: 'not_running',
    });

    const notSupported = await command(fixture, { type: 'cancelBackgroundWork', workId: fixed.id });
    expect(notSupported.json().fault).toBe('fault.command.backgroundWorkCancelRejected.cancel_not_supported');

    const missing = await command(fixture, { type: 'cancelBackgroundWork', workId: 'bash-999' });
    expect(missing.status).toBe(404);
    expect(missing.json().fault).toBe('fault.command.backgroundWorkCancelRejected.not_found');
  });

  it('does not stop foreground work it does not show', async () => {
    const fixture = await startFixture();
    const { id } = await fixture.start('main', { background: false });
    const reply = await command(fixture, { type: 'cancelBackgroundWork', workId: id });
    expect(reply.json().fault).toBe('fault.command.backgroundWorkCancelRejected.not_found');
    expect(fixture.service.get(id, fixture.owner('main')).status).toBe('running');
  });

  it("strips a runtime's background_task_ prefix from the reason", async () => {
    const fixture = await startFixture({
      backend: (backend) => ({
        ...backend,
        events: backend.events,
        stopBackgroundWork: async () => ({ ok: false, reason: 'background_task_not_running' }),
      }),
    });
    const reply = await command(fixture, { type: 'cancelBackgroundWork', workId: 'bash-1' });
    expect(reply.json()).toMatchObject({
      fault: 'fault.command.backgroundWorkCancelRejected.not_running',
      reason: 'not_running',
    });
  });

  it('reports a stop that failed as a failure, and logs it', async () => {
    const fixture = await startFixture();
    const { id } = await fixture.start('main', { onCancel: 'throw' });
    const reply = await command(fixture, { type: 'cancelBackgroundWork', workId: id });
    expect(reply.status).toBe(500);
    expect(reply.json()).toMatchObject({ ok: false, fault: 'fault.command.backgroundWorkCancelFailed' });
    expect(fixture.logger.warn).toHaveBeenCalledWith(`stopping ${id} failed`, expect.anything());
    expect(fixture.service.get(id, fixture.owner('main')).status).toBe('running');
  });

  it("passes an Errand error's own words to the viewer (a holder that did not answer), and hides others'", async () => {
    const answers: unknown[] = [
      new ErrandError(
        'STOP_NOT_ANSWERED',
        'system',
        'The runtime holding session "s" did not answer in 5000 ms',
      ),
      new Error('internal detail'),
    ];
    const fixture = await startFixture({
      backend: (backend) => ({
        ...backend,
        events: backend.events,
        stopBackgroundWork: async () => {
          throw answers.shift();
        },
      }),
    });
    const first = await command(fixture, { type: 'cancelBackgroundWork', workId: 'bash-1' });
    expect(first.status).toBe(500);
    expect(first.json()).toMatchObject({
      ok: false,
      fault: 'fault.command.backgroundWorkCancelFailed',
      code: 'STOP_NOT_ANSWERED',
      message: expect.stringContaining('did not answer in 5000 ms'),
    });
    const second = await command(fixture, { type: 'cancelBackgroundWork', workId: 'bash-1' });
    expect(second.json()).toMatchObject({ message: 'The stop failed; the work may still be running' });
    expect(JSON.stringify(second.json())).not.toContain('internal detail');
  });

  it('answers bad requests with 400 and a stable code', async () => {
    const fixture = await startFixture({ server: { maxBodyBytes: 256 } });
    const cases: [string | Buffer, string][] = [
      ['{"type": "cancelBackgroundWork",', 'INVALID_JSON'],
      ['[1, 2]', 'INVALID_COMMAND'],
      ['null', 'INVALID_COMMAND'],
      ['{"type": "runShell", "command": "rm -rf /"}', 'UNKNOWN_COMMAND'],
      ['{"workId": "bash-1"}', 'UNKNOWN_COMMAND'],
      ['{"type": "cancelBackgroundWork"}', 'MISSING_WORK_ID'],
      ['{"type": "cancelBackgroundWork", "workId": 7}', 'MISSING_WORK_ID'],
      ['{"type": "cancelBackgroundWork", "workId": ""}', 'MISSING_WORK_ID'],
      [JSON.stringify({ type: 'cancelBackgroundWork', workId: 'x'.repeat(300) }), 'BODY_TOO_LARGE'],
    ];
    for (const [body, code] of cases) {
      const reply = await send(fixture, 'POST', '/api/commands', {
        headers: { 'Content-Type': 'application/json' },
        body,
      });
      expect(reply.status, String(body)).toBe(400);
      expect(reply.json().error.code, String(body)).toBe(code);
    }
  });

  it('refuses an oversized body that declares no length', async () => {
    const fixture = await startFixture({ server: { maxBodyBytes: 256 } });
    const reply = await new Promise<Reply>((resolve, reject) => {
      const request = httpRequest(
        {
          host: '127.0.0.1',
          port: fixture.address.port,
          method: 'POST',
          path: '/api/commands',
          agent: false,
          headers: {
            Host: `127.0.0.1:${fixture.address.port}`,
            Authorization: `Bearer ${fixture.token}`,
            'Content-Type': 'application/json',
            'Transfer-Encoding': 'chunked',
          },
        },
        (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            text += chunk;
          });
          response.on('end', () =>
            resolve({
              status: response.statusCode ?? 0,
              headers: response.headers,
              text,
              json: () => JSON.parse(text),
            }),
          );
        },
      );
      request.on('error', reject);
      request.write('{"type":"cancelBackgroundWork","workId":"');
      request.write('y'.repeat(1024));
      request.end('"}');
    });
    expect(reply.status).toBe(400);
    expect(reply.json().error.code).toBe('BODY_TOO_LARGE');
  });

  it('delivers the 400 for an oversized body that is still being sent, without a connection reset', async () => {
    const fixture = await startFixture({ server: { maxBodyBytes: 256 } });
    const body = Buffer.alloc(8 * 1024 * 1024, 'x');
    const outcomes: string[] = [];
    for (let attempt = 0; attempt < 20; attempt += 1) {
      outcomes.push(await postRaw(fixture, body, attempt % 2 === 0 ? 'length' : 'chunked'));
    }
    expect(outcomes).toEqual(Array(20).fill('400 BODY_TOO_LARGE'));
  });

  it('delivers the 400 for a 20 MiB body with the default limits, 20 of 20 times (a lingering close)', async () => {
    const fixture = await startFixture();
    const body = Buffer.alloc(20 * 1024 * 1024, 'x');
    const outcomes: string[] = [];
    for (let attempt = 0; attempt < 20; attempt += 1) {
      outcomes.push(await postRaw(fixture, body, attempt % 2 === 0 ? 'length' : 'chunked'));
    }
    expect(outcomes).toEqual(Array(20).fill('400 BODY_TOO_LARGE'));
  });

  it('closes the connection of a body that keeps coming past the discard allowance', async () => {
    const fixture = await startFixture({ server: { maxBodyBytes: 256, maxDiscardBytes: 4096 } });
    const socket = connectTcp(fixture.address.port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(
      `POST /api/commands HTTP/1.1\r\nHost: 127.0.0.1:${fixture.address.port}\r\nAuthorization: Bearer ${fixture.token}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
    );
    let received = '';
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
    });
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.on('error', () => {});
    // An endless upload: the server answers, discards up to its allowance, then hangs up.
    const chunk = `1000\r\n${'y'.repeat(4096)}\r\n`;
    const timer = setInterval(() => {
      if (!socket.destroyed) socket.write(chunk);
    }, 1);
    try {
      await closed;
    } finally {
      clearInterval(timer);
    }
    expect(received).toMatch(/^HTTP\/1\.1 400 /);
  });

  it('requires a JSON body and POST', async () => {
    const fixture = await startFixture();
    const form = await send(fixture, 'POST', '/api/commands', {
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'type=cancelBackgroundWork&workId=bash-1',
    });
    expect(form.status).toBe(415);
    expect(form.json().error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    expect((await send(fixture, 'GET', '/api/commands')).status).toBe(405);
  });
});

describe('output snapshots', () => {
  it('returns at most 8192 bytes, keeping the end', async () => {
    const fixture = await startFixture();
    const { id } = await fixture.start('main');
    const output = `${'first line\n'.repeat(1000)}héllo wörld — the end\n`;
    fixture.outputs.set(`main/${id}`, output);

    const reply = await send(fixture, 'GET', `/api/background-works/${id}/output`);
    expect(reply.status).toBe(200);
    const body = reply.json();
    expect(Buffer.byteLength(body.text)).toBeLessThanOrEqual(8192);
    expect(body.bytes).toBe(Buffer.byteLength(body.text));
    expect(body.text.endsWith('héllo wörld — the end\n')).toBe(true);
    expect(output.endsWith(body.text)).toBe(true);
    expect(body).toMatchObject({
      workId: id,
      sessionId: 'main',
      truncated: true,
      totalBytes: Buffer.byteLength(output),
    });
    expect(fixture.readOutput).toHaveBeenCalledWith('main', id, 8192);
  });

  it('cuts an oversized answer from the backend to the budget', async () => {
    const fixture = await startFixture({ server: { outputSnapshotMaxBytes: 100 } });
    const { id } = await fixture.start('main');
    fixture.outputs.set(`main/${id}`, '€'.repeat(100));
    const body = (await send(fixture, 'GET', `/api/background-works/${id}/output`)).json();
    expect(body.text).toBe('€'.repeat(33));
    expect(body.truncated).toBe(true);
  });

  it("walks up the parent chain to the runtime that holds the work's output", async () => {
    const fixture = await startFixture();
    const { id } = await fixture.start('child');
    fixture.outputs.set(`main/${id}`, 'from the parent runtime\n');
    const body = (await send(fixture, 'GET', `/api/background-works/${id}/output`)).json();
    expect(body).toMatchObject({ sessionId: 'main', text: 'from the parent runtime\n', truncated: false });
    expect(fixture.readOutput.mock.calls.map((call) => call[0])).toEqual(['child', 'main']);
  });

  it('answers 404 when no live runtime holds the output, or the work is unknown', async () => {
    const fixture = await startFixture();
    const { id } = await fixture.start('child');
    const unavailable = await send(fixture, 'GET', `/api/background-works/${id}/output`);
    expect(unavailable.status).toBe(404);
    expect(unavailable.json().error.code).toBe('OUTPUT_UNAVAILABLE');
    const unknown = await send(fixture, 'GET', '/api/background-works/bash-77/output');
    expect(unknown.json().error.code).toBe('WORK_NOT_FOUND');
  });

  it('stops at a cycle in the parent chain', async () => {
    const fixture = await startFixture({
      backend: (backend) => ({
        ...backend,
        events: backend.events,
        getSession: (sessionId: string) => ({
          id: sessionId,
          parentId: sessionId === 'main' ? 'child' : 'main',
        }),
      }),
    });
    const { id } = await fixture.start('main');
    expect((await send(fixture, 'GET', `/api/background-works/${id}/output`)).status).toBe(404);
    expect(fixture.readOutput).toHaveBeenCalledTimes(2);
  });
});

describe('the event stream', () => {
  it('starts with the level, then streams live events with their projected work', async () => {
    const fixture = await startFixture();
    const existing = await fixture.start('main', { label: 'existing' });
    const stream = await openEventStream(fixture);
    expect(stream.status).toBe(200);
    expect(stream.response.headers['content-type']).toBe('text/event-stream; charset=utf-8');

    const level = await stream.waitFor((frame) => frame.event === 'BackgroundWorksLevel');
    expect(level.id).toBe(`${fixture.backend.events.streamId}:1`);
    expect(data(level)).toMatchObject({ scope: 'all', works: [{ workId: existing.id, state: 'running' }] });

    const next = await fixture.start('main', { kind: 'workflow', label: 'deploy' });
    const started = await stream.waitFor((frame) => frame.event === 'BackgroundTaskStarted');
    expect(started.id).toBe(`${fixture.backend.events.streamId}:2`);
    expect(data(started)).toMatchObject({
      type: 'BackgroundTaskStarted',
      taskId: next.id,
      kind: 'workflow',
      work: { workId: next.id, state: 'running', kind: 'workflow' },
    });

    next.task.settle();
    const completed = await stream.waitFor((frame) => frame.event === 'BackgroundTaskCompleted');
    expect(data(completed).work).toMatchObject({ state: 'resultPending' });
    fixture.service.claim(next.id, fixture.owner('main'));
    const delivered = await stream.waitFor((frame) => frame.event === 'BackgroundTaskUpdated');
    expect(data(delivered)).toMatchObject({ resultPending: false, work: { state: 'completed' } });
    stream.close();
  });

  it('resumes after a reconnect with Last-Event-ID, replaying only what was missed', async () => {
    const fixture = await startFixture();
    const first = await openEventStream(fixture);
    const { task, id } = await fixture.start('main');
    const seen = await first.waitFor((frame) => frame.event === 'BackgroundTaskStarted');
    first.close();
    await first.closed;

    task.context?.updateDetail({ pid: 4321 });
    task.settle({ status: 'completed', detail: { exitCode: 0 } });
    await flush();

    const resumed = await openEventStream(fixture, { 'Last-Event-ID': seen.id ?? '' });
    const completed = await resumed.waitFor((frame) => frame.event === 'BackgroundTaskCompleted');
    expect(data(completed)).toMatchObject({ taskId: id, exitCode: 0 });
    expect(resumed.frames.filter((frame) => frame.event !== undefined).map((frame) => frame.event)).toEqual([
      'BackgroundTaskUpdated',
      'BackgroundTaskCompleted',
    ]);
    expect(data(resumed.frames.find((frame) => frame.event === 'BackgroundTaskUpdated')!)).toMatchObject({
      pid: 4321,
    });
    resumed.close();
  });

  it('resets a client too far behind, then sends the level', async () => {
    const fixture = await startFixture({ feed: { ringSize: 2 } });
    const { task } = await fixture.start('main');
    for (const pid of [1, 2, 3, 4]) task.context?.updateDetail({ pid });
    const stream = await openEventStream(fixture, {
      'Last-Event-ID': `${fixture.backend.events.streamId}:1`,
    });
    const level = await stream.waitFor((frame) => frame.event === 'BackgroundWorksLevel');
    const events = stream.frames.filter((frame) => frame.event !== undefined);
    expect(events.map((frame) => frame.event)).toEqual(['reset', 'BackgroundWorksLevel']);
    expect(data(events[0]!)).toEqual({ reason: 'too_far_behind' });
    expect(data(level).works).toMatchObject([{ pid: 4, state: 'running' }]);
    stream.close();
  });

  it("resets a client that holds another stream's id (a restarted server)", async () => {
    const fixture = await startFixture();
    const stream = await openEventStream(fixture, { 'Last-Event-ID': 'previous-run:3' });
    await stream.waitFor((frame) => frame.event === 'BackgroundWorksLevel');
    expect(data(stream.frames.find((frame) => frame.event === 'reset')!)).toEqual({ reason: 'unknown_id' });
    stream.close();
  });

  it('sends heartbeat comments', async () => {
    const fixture = await startFixture({ server: { heartbeatMs: 10 } });
    const stream = await openEventStream(fixture);
    await stream.waitFor((frame) => frame.comment === 'heartbeat');
    stream.close();
  });

  it('drops a client that stops reading instead of buffering for it', async () => {
    const fixture = await startFixture({
      server: { maxClientBufferBytes: 256 * 1024 },
      feed: { tailMaxBytes: 4096 },
    });
    const { task } = await fixture.start('main');
    const healthy = await openEventStream(fixture);
    const slow = await openEventStream(fixture);
    slow.response.pause();
    // Each event carries a 4 KiB tail twice; the paused client's kernel buffers fill, then its budget.
    const filler = 'x'.repeat(4000);
    let rounds = 0;
    const droppedOnServer = () => fixture.logger.warn.mock.calls.length > 0;
    while (!droppedOnServer() && rounds < 20_000) {
      rounds += 1;
      task.context?.updateDetail({ tail: `${rounds}${filler}` });
      if (rounds % 16 === 0) await flush();
    }
    // Once it reads again it finds the stream ended (and would reconnect with its Last-Event-ID).
    slow.response.resume();
    await slow.closed;
    expect(fixture.logger.warn).toHaveBeenCalledWith(
      'dropped an event-stream client that fell behind',
      expect.objectContaining({ limit: 256 * 1024 }),
    );
    // The client that keeps reading stays connected and receives everything.
    task.context?.updateDetail({ tail: 'the last one' });
    const last = await healthy.waitFor((frame) => frame.data?.includes('"tail":"the last one"') === true);
    expect(last.event).toBe('BackgroundTaskUpdated');
    healthy.close();
  });

  it('accepts as many clients as maxEventClients allows, and refuses the next one saying which limit it hit', async () => {
    const fixture = await startFixture({ server: { maxEventClients: 200 } });
    const streams = await Promise.all(Array.from({ length: 200 }, () => openEventStream(fixture)));
    try {
      expect(streams.map((stream) => stream.status)).toEqual(Array(200).fill(200));
      await Promise.all(
        streams.map((stream) => stream.waitFor((frame) => frame.event === 'BackgroundWorksLevel')),
      );
      const refused = await send(fixture, 'GET', '/api/events');
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('5');
      expect(refused.json().error).toEqual({
        code: 'TOO_MANY_EVENT_CLIENTS',
        message:
          'This dashboard already serves 200 live event streams, its limit (the server option maxEventClients, or --max-event-clients): close other dashboard pages, or restart it with a higher limit',
      });
      // A closed stream frees its place.
      streams.pop()?.close();
      await vi.waitFor(async () => {
        const again = await openEventStream(fixture);
        again.close();
        expect(again.status).toBe(200);
      });
    } finally {
      for (const stream of streams) stream.close();
    }
  });

  it('refuses a second client with maxEventClients 1', async () => {
    const fixture = await startFixture({ server: { maxEventClients: 1 } });
    const first = await openEventStream(fixture);
    await first.waitFor((frame) => frame.event === 'BackgroundWorksLevel');
    const second = await send(fixture, 'GET', '/api/events');
    expect(second.status).toBe(503);
    expect(second.json().error.code).toBe('TOO_MANY_EVENT_CLIENTS');
    first.close();
  });

  it('ends open streams when the server closes', async () => {
    const fixture = await startFixture();
    const stream = await openEventStream(fixture);
    await stream.waitFor((frame) => frame.event === 'BackgroundWorksLevel');
    await fixture.server.close();
    await stream.closed;
    await fixture.server.close();
  });
});

describe('options', () => {
  it('refuses a non-loopback interface unless remote access is allowed, and weak tokens', async () => {
    const fixture = await startFixture();
    const base = { backend: fixture.backend, logger: fixture.logger };
    expect(() => createDashboardServer({ ...base, host: '0.0.0.0' })).toThrow(/allowRemote/);
    expect(() => createDashboardServer({ ...base, token: 'short' })).toThrow(/token/);
    expect(() => createDashboardServer({ ...base, port: 70_000 })).toThrow(
      'Expected `port` to be an integer from 0 to 65535, got 70000 (number)',
    );
    expect(() => createDashboardServer({ ...base, outputSnapshotMaxBytes: 9000 })).toThrow(
      /outputSnapshotMaxBytes/,
    );
    expect(() => createDashboardServer({ ...base, backend: {} as DashboardBackend })).toThrow(/backend/);
  });

  it('refuses to listen twice', async () => {
    const fixture = await startFixture();
    await expect(fixture.server.listen()).rejects.toMatchObject({ code: 'DASHBOARD_SERVER_STATE' });
  });

  it('stops listening when closed while it was starting', async () => {
    const fixture = await startFixture();
    const port = await freePort();
    const server = createDashboardServer({ backend: fixture.backend, logger: fixture.logger, port });
    const listening = server.listen();
    await server.close();
    await expect(listening).rejects.toMatchObject({ code: 'DASHBOARD_SERVER_STATE' });
    expect(server.address).toBeUndefined();
    expect(await tryConnect(port)).toBe('ECONNREFUSED');
    await server.close();
  });
});
