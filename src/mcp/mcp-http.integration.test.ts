/**
 * `errand mcp --http` end to end: a client written from the MCP 2026-07-28 specification (raw JSON-RPC
 * over fetch: `server/discover`, a `tools/call` answered with a task through the Tasks extension,
 * `tasks/get` polling, `tasks/update`, `subscriptions/listen`, `tasks/cancel`, no double delivery), the
 * official 2025-11-25 SDK client over Streamable HTTP beside it, the bearer token, and the isolation of
 * two sessions.
 */
import { mkdtempSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { isAlive } from '../../test/fixtures/bash/index.js';
import { CLI_PATH } from '../../test/support/mcp-client.js';
import { settled } from '../../test/support/waiting.js';
import { type HttpMcpServer, startHttpMcpServer } from './http-server.js';

const directories: string[] = [];
const servers: HttpMcpServer[] = [];
const clients: Client[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => {});
  for (const server of servers.splice(0)) await server.shutdown();
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function temporaryDirectory(): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), 'errand-mcp-http-')));
  directories.push(directory);
  return directory;
}

async function start(options: Parameters<typeof startHttpMcpServer>[0] = {}): Promise<HttpMcpServer> {
  const home = temporaryDirectory();
  const server = await startHttpMcpServer({
    runtime: { home },
    cwd: home,
    logger: { warn: () => {} },
    ...options,
  });
  servers.push(server);
  return server;
}

type Json = Record<string, unknown>;

const TASKS = 'io.modelcontextprotocol/tasks';

/** A 2026-07-28 client, written from the specification: per-request `_meta`, the mirrored headers. */
function modernClient(server: HttpMcpServer, options: { tasks?: boolean; token?: string | false } = {}) {
  let nextId = 1;
  const capabilities = options.tasks === false ? {} : { extensions: { [TASKS]: {} } };
  const token = options.token === undefined ? server.token : options.token;
  const post = async (method: string, params: Json = {}, headers: Record<string, string> = {}) => {
    const id = nextId;
    nextId += 1;
    const name =
      method === 'tools/call' ? params.name : method.startsWith('tasks/') ? params.taskId : undefined;
    const response = await fetch(server.url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'MCP-Protocol-Version': '2026-07-28',
        'Mcp-Method': method,
        ...(typeof name === 'string' ? { 'Mcp-Name': name } : {}),
        ...(token === false ? {} : { Authorization: `Bearer ${token}` }),
        ...headers,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id,
        method,
        params: {
          ...params,
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientInfo': { name: 'spec-client', version: '1.0.0' },
            'io.modelcontextprotocol/clientCapabilities': capabilities,
          },
        },
      }),
    });
    const body = (await response.json()) as { id: number | null; result?: Json; error?: Json };
    // A refusal before the body is read (401, 403) cannot name the request.
    if (response.status < 401 || response.status > 403) expect(body.id).toBe(id);
    return { status: response.status, result: body.result, error: body.error };
  };
  return {
    post,
    async result(method: string, params: Json = {}): Promise<Json> {
      const answer = await post(method, params);
      if (answer.error) throw new Error(`${method}: ${JSON.stringify(answer.error)}`);
      return answer.result as Json;
    },
    /** Polls `tasks/get` at the task's own interval until it reaches a terminal status. */
    async pollUntilDone(taskId: string): Promise<Json> {
      for (;;) {
        const task = await this.result('tasks/get', { taskId });
        if (!['working', 'input_required'].includes(String(task.status))) return task;
        await new Promise((resolve) => setTimeout(resolve, Number(task.pollIntervalMs ?? 100)));
      }
    },
  };
}

function texts(result: Json): string[] {
  return ((result.content as { type: string; text: string }[]) ?? [])
    .filter((block) => block.type === 'text')
    .map((block) => block.text);
}

/** A command that waits for `file` to exist, then prints and exits 4. */
function gatedCommand(file: string, word: string): string {
  return `while [ ! -e ${file} ]; do sleep 0.02; done; echo ${word}; exit 4`;
}

/** Reads a `subscriptions/listen` SSE stream, handing each JSON-RPC message to `onMessage`. */
async function listen(
  server: HttpMcpServer,
  taskIds: string[],
  onMessage: (message: Json) => void,
): Promise<AbortController> {
  const abort = new AbortController();
  const response = await fetch(server.url, {
    method: 'POST',
    signal: abort.signal,
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2026-07-28',
      'Mcp-Method': 'subscriptions/listen',
      Authorization: `Bearer ${server.token}`,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 'listen-1',
      method: 'subscriptions/listen',
      params: {
        notifications: { taskIds },
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': { extensions: { [TASKS]: {} } },
        },
      },
    }),
  });
  expect(response.headers.get('content-type')).toContain('text/event-stream');
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const event = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = event
            .split('\n')
            .filter((line) => line.startsWith('data: '))
            .map((line) => line.slice(6))
            .join('\n');
          if (data !== '') onMessage(JSON.parse(data) as Json);
        }
      }
    } catch {
      // Aborted by the test.
    }
  })();
  return abort;
}

describe('a client written from MCP 2026-07-28, with the Tasks extension', () => {
  it('discovers the server: versions, the tasks extension, identity; no initialize needed', async () => {
    const server = await start();
    const client = modernClient(server);
    const discovered = await client.result('server/discover');
    expect(discovered.resultType).toBe('complete');
    expect(discovered.supportedVersions).toEqual(['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26']);
    expect(discovered.capabilities).toMatchObject({ tools: {}, extensions: { [TASKS]: {} } });
    expect((discovered._meta as Json)['io.modelcontextprotocol/serverInfo']).toMatchObject({
      name: 'errand',
    });
    expect(String(discovered.instructions)).toContain('Errand runs shell commands');
    const listed = await client.result('tools/list');
    // Both are cacheable results.
    expect(listed).toMatchObject({ ttlMs: 60_000, cacheScope: 'private' });
    expect(discovered).toMatchObject({ ttlMs: 60_000, cacheScope: 'private' });
    const bash = (listed.tools as Json[]).find((tool) => tool.name === 'bash');
    expect(bash).toBeDefined();
    expect(bash?.execution).toBeUndefined();
  });

  it('create → poll → update → complete: the result arrives once, through the task only', async () => {
    const server = await start();
    const client = modernClient(server);
    const gate = join(temporaryDirectory(), 'go');
    const created = await client.result('tools/call', {
      name: 'bash',
      arguments: { command: gatedCommand(gate, 'through-the-task'), run_in_background: true },
      // The 2025-11-25 opt-in is ignored under 2026-07-28: the server decides.
      task: { ttl: 5 },
    });
    expect(created.resultType).toBe('task');
    const taskId = String(created.taskId);
    expect(taskId).toMatch(/^[0-9a-f-]{36}$/);
    expect(created).toMatchObject({ status: 'working', ttlMs: 3_600_000, pollIntervalMs: 500 });
    const errandId = /^(bash-\d+)/.exec(String(created.statusMessage))?.[1] as string;

    const working = await client.result('tasks/get', { taskId });
    expect(working).toMatchObject({ resultType: 'complete', taskId, status: 'working' });
    expect(working.result).toBeUndefined();

    // Nothing is outstanding: the server acknowledges and ignores responses to keys it never issued.
    expect(
      await client.result('tasks/update', { taskId, inputResponses: { 'not-issued': {} } }),
    ).toMatchObject({
      resultType: 'complete',
    });
    const unknownUpdate = await client.post('tasks/update', { taskId: 'no-such-task', inputResponses: {} });
    expect(unknownUpdate.error?.code).toBe(-32602);

    const notifications: Json[] = [];
    const stop = await listen(server, [taskId, 'never-created'], (message) => notifications.push(message));
    await expect.poll(() => notifications.length).toBeGreaterThan(0);
    expect(notifications[0]).toMatchObject({
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: { taskIds: [taskId] } },
    });

    const ended = settled(server.runtime.tasks, errandId);
    writeFileSync(gate, '');
    const done = await client.pollUntilDone(taskId);
    expect(done.status).toBe('completed');
    const [text] = texts(done.result as Json);
    expect(text).toContain('through-the-task');
    expect(text).toContain('[exit code: 4]');
    expect((done.result as Json).isError).toBe(false);
    // tasks/get is a pure read: asking again gives the same result.
    expect((await client.result('tasks/get', { taskId })).result).toEqual(done.result);

    await expect
      .poll(() => notifications.find((message) => message.method === 'notifications/tasks'))
      .toBeDefined();
    const pushed = notifications.find((message) => message.method === 'notifications/tasks') as Json;
    expect(pushed.params).toMatchObject({ taskId, status: 'completed', result: done.result });
    stop.abort();

    // No <task-notification> repeats the end on a later tool result.
    await ended;
    const next = await client.result('tools/call', { name: 'task_list', arguments: {} });
    expect(texts(next)).toHaveLength(1);
    expect(texts(next)[0]).toMatch(new RegExp(`^${errandId} \\[bash\\] failed`));

    // The removed 2025-11-25 methods are gone.
    for (const method of ['tasks/result', 'tasks/list']) {
      const answer = await client.post(method, { taskId });
      expect(answer.status).toBe(404);
      expect(answer.error?.code).toBe(-32601);
    }
  });

  it('input_required: a command asks (errand ask), tasks/get shows the question, tasks/update answers it', async () => {
    const server = await start();
    const client = modernClient(server);
    const ask = `node ${JSON.stringify(CLI_PATH)} ask`;
    const created = await client.result('tools/call', {
      name: 'bash',
      arguments: {
        command: `color=$(${ask} "Which color?") || exit 9; echo "got $color"; ${ask} "Again?" || echo declined`,
        run_in_background: true,
      },
    });
    expect(created.resultType).toBe('task');
    const taskId = String(created.taskId);
    const waitForQuestion = async (): Promise<[string, Json]> => {
      for (;;) {
        const task = await client.result('tasks/get', { taskId });
        if (task.status === 'input_required') {
          const [entry] = Object.entries(task.inputRequests as Record<string, Json>);
          if (entry) return entry;
        }
        expect(task.status).toBe('working');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    const [key, request] = await waitForQuestion();
    expect(request).toMatchObject({
      method: 'elicitation/create',
      params: { mode: 'form', message: 'Which color?', requestedSchema: { required: ['answer'] } },
    });
    // A response to a key that is not outstanding is ignored; the question stays.
    await client.result('tasks/update', {
      taskId,
      inputResponses: { [`${key}-other`]: { action: 'accept' } },
    });
    expect((await client.result('tasks/get', { taskId })).status).toBe('input_required');
    await client.result('tasks/update', {
      taskId,
      inputResponses: { [key]: { action: 'accept', content: { answer: 'teal' } } },
    });
    // The second question has a key of its own; declining it makes `errand ask` fail.
    const [second] = await waitForQuestion();
    expect(second).not.toBe(key);
    await client.result('tasks/update', { taskId, inputResponses: { [second]: { action: 'decline' } } });
    const done = await client.pollUntilDone(taskId);
    expect(done.status).toBe('completed');
    expect(texts(done.result as Json)[0]).toMatch(
      /got teal\nerrand ask: the client chose decline\ndeclined\n\[exit code: 0\]/,
    );
  });

  it('errand ask fails at once where no client can answer (a task without the extension)', async () => {
    const server = await start();
    const client = modernClient(server, { tasks: false });
    const result = await client.result('tools/call', {
      name: 'bash',
      arguments: { command: `node ${JSON.stringify(CLI_PATH)} ask "Anyone?"; echo "exit $?"` },
    });
    expect(texts(result)[0]).toMatch(/no client can answer[\s\S]*exit 1/);
  });

  it('without the extension a background call answers at once and its end is notified in band, once', async () => {
    const server = await start();
    const client = modernClient(server, { tasks: false });
    const gate = join(temporaryDirectory(), 'go');
    const started = await client.result('tools/call', {
      name: 'bash',
      arguments: { command: gatedCommand(gate, 'in-band'), run_in_background: true },
    });
    expect(started.resultType).toBe('complete');
    const errandId = /Started (bash-\d+)/.exec(texts(started)[0] ?? '')?.[1] as string;
    const ended = settled(server.runtime.tasks, errandId);
    writeFileSync(gate, '');
    await ended;
    const first = texts(await client.result('tools/call', { name: 'task_list', arguments: {} }));
    expect(first).toHaveLength(2);
    expect(first[1]).toContain(`<task-id>${errandId}</task-id>`);
    const second = texts(await client.result('tools/call', { name: 'task_list', arguments: {} }));
    expect(second).toHaveLength(1);
  });

  it('tasks/cancel acknowledges, then the process tree is gone and the task says cancelled', async () => {
    const server = await start();
    const client = modernClient(server);
    const created = await client.result('tools/call', {
      name: 'bash',
      arguments: { command: 'exec sleep 600', run_in_background: true },
    });
    const taskId = String(created.taskId);
    const pid = Number(/\(pid (\d+)\)/.exec(String(created.statusMessage))?.[1]);
    expect(isAlive(pid)).toBe(true);
    expect(await client.result('tasks/cancel', { taskId })).toEqual({
      resultType: 'complete',
      _meta: { 'io.modelcontextprotocol/serverInfo': expect.any(Object) },
    });
    const done = await client.pollUntilDone(taskId);
    expect(done.status).toBe('cancelled');
    expect(isAlive(pid)).toBe(false);
  });

  it('checks what the transport mirrors: Mcp-Method, Mcp-Name, the version in _meta, unknown versions', async () => {
    const server = await start();
    const client = modernClient(server);
    const wrongName = await client.post(
      'tools/call',
      { name: 'task_list', arguments: {} },
      { 'Mcp-Name': 'bash' },
    );
    expect(wrongName.status).toBe(400);
    expect(wrongName.error?.code).toBe(-32020);
    const wrongMethod = await client.post('tools/list', {}, { 'Mcp-Method': 'tools/call' });
    expect(wrongMethod.error?.code).toBe(-32020);
    const encoded = await client.post(
      'tools/call',
      { name: 'task_list', arguments: {} },
      { 'Mcp-Name': `=?base64?${Buffer.from('task_list').toString('base64')}?=` },
    );
    expect(encoded.status).toBe(200);
    const future = await fetch(server.url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Authorization: `Bearer ${server.token}`,
        'MCP-Protocol-Version': '2099-01-01',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'server/discover', params: {} }),
    });
    expect(future.status).toBe(400);
    const body = (await future.json()) as { error: { code: number; data: Json } };
    expect(body.error.code).toBe(-32022);
    expect(body.error.data).toMatchObject({
      requested: '2099-01-01',
      supported: expect.arrayContaining(['2026-07-28']),
    });
  });
});

/** The official SDK client (2025-11-25) over Streamable HTTP, with the server's token. */
async function sdkClient(server: HttpMcpServer, name = 'sdk-client'): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(server.url), {
    requestInit: { headers: { Authorization: `Bearer ${server.token}` } },
  });
  const client = new Client({ name, version: '1.0.0' });
  clients.push(client);
  await client.connect(transport);
  return client;
}

async function call(client: Client, name: string, args: Json = {}): Promise<string[]> {
  const result = await client.callTool({ name, arguments: args }, CallToolResultSchema);
  return texts(result as Json);
}

describe('2025-11-25 clients over Streamable HTTP', () => {
  it('the SDK client: tools, MCP Tasks (tasks/result), and one Errand session per MCP session', async () => {
    const server = await start();
    const first = await sdkClient(server, 'first');
    const second = await sdkClient(server, 'second');
    expect(server.sessionCount()).toBe(2);

    expect(await call(first, 'bash', { command: 'echo hello' })).toEqual(['hello\n[exit code: 0]']);
    const created = await first.request(
      {
        method: 'tools/call',
        params: { name: 'bash', arguments: { command: 'echo legacy; exit 2' }, task: {} },
      },
      CreateTaskResultSchema,
    );
    const result = await first.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
    expect(texts(result as Json)[0]).toContain('[exit code: 2]');

    // Each session sees and stops only its own tasks.
    const started = await call(first, 'bash', { command: 'exec sleep 600', run_in_background: true });
    const errandId = /Started (bash-\d+)/.exec(started[0] ?? '')?.[1] as string;
    expect((await call(first, 'task_list')).join('\n')).toContain(errandId);
    expect((await call(second, 'task_list')).join('\n')).not.toContain(errandId);
    const foreign = await second.callTool({ name: 'task_kill', arguments: { task_id: errandId } });
    expect(foreign.isError).toBe(true);
    const tasksOfSecond = await second.experimental.tasks.listTasks();
    expect(tasksOfSecond.tasks).toEqual([]);
    await expect(second.experimental.tasks.getTask(created.task.taskId)).rejects.toThrow();
  });

  it('bounds: the session limit (quiet sessions make room), the body size, idle expiry', async () => {
    const server = await start({ maxSessions: 2, maxBodyBytes: 2048, sessionIdleMs: 1_000 });
    const busy = await sdkClient(server, 'busy');
    await call(busy, 'bash', { command: 'exec sleep 600', run_in_background: true });
    const quiet = await sdkClient(server, 'quiet');
    const busyToo = await sdkClient(server, 'busy-too');
    // The quiet session (no task, nothing queued, no request open) made room for the third.
    expect(server.sessionCount()).toBe(2);
    await expect(call(quiet, 'task_list')).rejects.toThrow(/404|Session not found/);
    await call(busyToo, 'bash', { command: 'exec sleep 600', run_in_background: true });
    await expect(sdkClient(server, 'one-too-many')).rejects.toThrow(/503|Too many MCP sessions/);

    const large = await fetch(server.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${server.token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(4096) } }),
    });
    expect(large.status).toBe(400);
    expect(await large.text()).toContain('2048 bytes');

    // Untouched for sessionIdleMs, a session is closed and its tasks stopped, busy or not.
    await expect.poll(() => server.sessionCount(), { timeout: 10_000 }).toBe(0);
    const running = server.runtime.tasks.list().filter((task) => task.status === 'running');
    expect(running).toEqual([]);
  });
});

describe('the bearer token and the network', () => {
  it('refuses requests without the token or with a wrong one, and a foreign Host', async () => {
    const server = await start();
    const client = modernClient(server, { token: false });
    expect((await client.post('server/discover')).status).toBe(401);
    const wrong = modernClient(server, { token: 'x'.repeat(43) });
    expect((await wrong.post('server/discover')).status).toBe(401);
    // fetch sets Host itself; node:http sends what it is given, as a rebound DNS name would.
    const rebound = await new Promise<{ status: number }>((resolve, reject) => {
      const target = new URL(server.url);
      const outgoing = httpRequest(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: 'POST',
          headers: {
            'Content-Type': 'application/json',
            Authorization: `Bearer ${server.token}`,
            Host: `evil.example:${target.port}`,
          },
        },
        (incoming) => {
          incoming.resume();
          resolve({ status: incoming.statusCode ?? 0 });
        },
      );
      outgoing.once('error', reject);
      outgoing.end('{}');
    });
    expect(rebound.status).toBe(403);
    const legacy = new Client({ name: 'no-token', version: '1.0.0' });
    await expect(legacy.connect(new StreamableHTTPClientTransport(new URL(server.url)))).rejects.toThrow();
  });

  it('refuses to serve a non-loopback interface without a token; writes the token file 0600', async () => {
    await expect(startHttpMcpServer({ host: '0.0.0.0', token: false })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    const tokenFile = join(temporaryDirectory(), 'token');
    const server = await start({ tokenFile });
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    expect(server.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });
});
