/**
 * Live output over HTTP with both backends: the in-process one (observation cursors of the runtime's task
 * service) and the store-backed one (`errand serve`: the output file of a runtime in another process).
 * Two readers of the same 5 MB output — one paging with `?from=`, one on the event stream, reconnecting
 * midway with `Last-Event-ID` — each receive all of it, in order, byte for byte.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { httpCall, TextCapture } from '../../test/support/mcp-client.js';
import { capturingLogger } from '../../test/support/registry.js';
import { createErrandRuntime, type ErrandRuntime } from '../host/index.js';
import { createMemorySessionStore, openSqliteSessionStore, type SessionStore } from '../store/index.js';
import { scriptedModel } from '../testing/index.js';
import type { DashboardBackend } from './dashboard-backend.js';
import { createDashboardServer, type DashboardServer } from './dashboard-server.js';
import { createStoreDashboardBackend, type StoreDashboardBackend } from './store-dashboard-backend.js';

const SIZE = 5 * 1024 * 1024;
const FIXTURE = resolve(import.meta.dirname, '../../test/fixtures/session/output-child.mjs');
const COMMAND = `for i in $(seq 0 40); do seq $((i * 40000)) $((i * 40000 + 39999)); sleep 0.02; done | head -c ${SIZE}`;

const cleanups: Array<() => unknown> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Served {
  readonly base: string;
  readonly token: string;
}

async function serve(backend: DashboardBackend): Promise<Served> {
  const server: DashboardServer = createDashboardServer({ backend, logger: capturingLogger() });
  const address = await server.listen();
  cleanups.push(() => server.close());
  return { base: address.origin, token: server.token };
}

function auth(served: Served): Record<string, string> {
  return { Authorization: `Bearer ${served.token}` };
}

/** Pages through the output with `?from=` until the work has ended and everything was read. */
async function readByPages(served: Served, workId: string): Promise<{ sha256: string; pages: number }> {
  const hash = createHash('sha256');
  let from = 0;
  let pages = 0;
  for (;;) {
    const reply = await httpCall(`${served.base}/api/background-works/${workId}/output?from=${from}`, {
      headers: auth(served),
    });
    expect(reply.status).toBe(200);
    const page = JSON.parse(reply.body) as {
      text: string;
      from: number;
      next: number;
      ended: boolean;
      missedBytes: number;
    };
    expect(page.from).toBe(from);
    expect(page.missedBytes).toBe(0);
    hash.update(page.text, 'utf8');
    from = page.next;
    pages += 1;
    if (page.ended) return { sha256: hash.digest('hex'), pages };
  }
}

interface StreamEvent {
  readonly id: string | undefined;
  readonly event: string;
  readonly data: string;
}

/** Reads server-sent events until `stopAfter` says so or the stream ends. */
async function readEvents(
  url: string,
  headers: Record<string, string>,
  stopAfter: (event: StreamEvent) => boolean,
): Promise<{ status: number; events: StreamEvent[] }> {
  const controller = new AbortController();
  const response = await fetch(url, { headers, signal: controller.signal });
  const events: StreamEvent[] = [];
  if (response.status !== 200 || response.body === null) return { status: response.status, events };
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return { status: response.status, events };
      buffer += value;
      let boundary = buffer.indexOf('\n\n');
      while (boundary >= 0) {
        const block = buffer.slice(0, boundary);
        buffer = buffer.slice(boundary + 2);
        boundary = buffer.indexOf('\n\n');
        let id: string | undefined;
        let event = 'message';
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith('id: ')) id = line.slice(4);
          else if (line.startsWith('event: ')) event = line.slice(7);
          else if (line.startsWith('data: ')) data.push(line.slice(6));
        }
        if (data.length === 0) continue;
        const parsed = { id, event, data: data.join('\n') };
        events.push(parsed);
        if (stopAfter(parsed)) return { status: response.status, events };
      }
    }
  } finally {
    controller.abort();
    await reader.cancel().catch(() => {});
  }
}

/** Follows the event stream from the start, dropping the connection once midway and resuming it. */
async function readByStream(served: Served, workId: string): Promise<{ sha256: string; resumedAt: number }> {
  const hash = createHash('sha256');
  const url = `${served.base}/api/background-works/${workId}/output/stream?from=0&token=${served.token}`;
  let next = 0;
  let ended = false;
  const take = (event: StreamEvent) => {
    if (event.event === 'output') {
      const data = JSON.parse(event.data) as { text: string; from: number; next: number };
      expect(data.from).toBe(next);
      expect(event.id).toBe(String(data.next));
      hash.update(data.text, 'utf8');
      next = data.next;
    }
    if (event.event === 'end') ended = true;
  };
  // The first connection drops after about a megabyte: a browser would reconnect with Last-Event-ID.
  await readEvents(url, {}, (event) => {
    take(event);
    return ended || next >= 1024 * 1024;
  });
  const resumedAt = next;
  if (!ended) {
    const resumed = await readEvents(url, { 'Last-Event-ID': String(next) }, (event) => {
      take(event);
      return ended;
    });
    expect(resumed.status).toBe(200);
  }
  expect(ended).toBe(true);
  // A reconnect after the end is told there is nothing more: 204, and the browser stops retrying.
  const after = await readEvents(url, { 'Last-Event-ID': String(next) }, () => true);
  expect(after.status).toBe(204);
  return { sha256: hash.digest('hex'), resumedAt };
}

function sha256Of(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

function temporaryHome(): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), 'errand-output-http-')));
  cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

describe('live output over HTTP', () => {
  it('in-process: two readers of a 5 MB output each receive all of it, in order, byte for byte', async () => {
    const runtime: ErrandRuntime = await createErrandRuntime({
      model: scriptedModel(),
      store: createMemorySessionStore(),
      pty: false,
      logger: capturingLogger(),
    });
    cleanups.push(() => runtime.dispose());
    const served = await serve(runtime.dashboard);
    const session = runtime.createSession({ id: 'main' });
    const { taskId, handle } = await runtime.bash.start({ command: COMMAND, owner: session.owner });
    const [paged, streamed] = await Promise.all([readByPages(served, taskId), readByStream(served, taskId)]);
    const expected = sha256Of(handle.outputFile!);
    expect(readFileSync(handle.outputFile!).length).toBe(SIZE);
    expect(paged.sha256).toBe(expected);
    expect(streamed.sha256).toBe(expected);
    expect(streamed.resumedAt).toBeGreaterThanOrEqual(1024 * 1024);
    expect(paged.pages).toBeGreaterThan(SIZE / 65_536 - 1);
    // Neither reader moved the model's read: it still starts at the beginning (after the skipped part).
    const read = await runtime.tasks.read(taskId, session.owner);
    expect(read.text).toMatch(/^\[\.\.\. \d+ bytes skipped; full output: /);
  });

  it('store-backed: two readers of another process’s 5 MB output each receive all of it', async () => {
    const home = temporaryHome();
    const child: ChildProcess = spawn(process.execPath, [FIXTURE, home, String(SIZE)], {
      env: process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    cleanups.push(async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((done) => child.once('exit', done));
      child.kill('SIGTERM');
      await exited;
    });
    const stdout = new TextCapture(child.stdout!);
    const [, json] = (await stdout.waitFor(/READY (\{.*\})\n/)) as unknown as [string, string];
    const ready = JSON.parse(json) as { sessionId: string; taskId: string };
    const store: SessionStore = openSqliteSessionStore({ home });
    cleanups.push(() => store.close());
    const backend: StoreDashboardBackend = createStoreDashboardBackend({
      store,
      pollMs: 20,
      outputPollMs: 10,
      logger: capturingLogger(),
    });
    cleanups.push(() => backend.dispose());
    await vi.waitFor(() => expect(backend.events.find(ready.taskId)).toBeDefined());
    const served = await serve(backend);
    const [paged, streamed] = await Promise.all([
      readByPages(served, ready.taskId),
      readByStream(served, ready.taskId),
    ]);
    const outputFile = store.getTask(ready.taskId, ready.sessionId)!.outputFile!;
    expect(readFileSync(outputFile).length).toBe(SIZE);
    expect(paged.sha256).toBe(sha256Of(outputFile));
    expect(streamed.sha256).toBe(sha256Of(outputFile));
    expect(streamed.resumedAt).toBeGreaterThanOrEqual(1024 * 1024);
  });

  it('answers bad positions, unknown work and missing readers with stable codes', async () => {
    const runtime = await createErrandRuntime({
      model: scriptedModel(),
      store: createMemorySessionStore(),
      pty: false,
      logger: capturingLogger(),
    });
    cleanups.push(() => runtime.dispose());
    const served = await serve(runtime.dashboard);
    const session = runtime.createSession({ id: 'main' });
    const { taskId } = await runtime.bash.start({ command: 'printf "hello é"', owner: session.owner });
    await runtime.tasks.wait(taskId, 10_000, session.owner);
    const get = (query: string, path = 'output') =>
      httpCall(`${served.base}/api/background-works/${taskId}/${path}${query}`, { headers: auth(served) });
    const code = async (query: string) => JSON.parse((await get(query)).body).error?.code;
    expect(JSON.parse((await get('?tailBytes=2')).body)).toMatchObject({
      workId: taskId,
      text: 'é',
      from: 6,
      next: 8,
      end: 8,
      ended: true,
      status: 'completed',
    });
    expect(JSON.parse((await get('?from=0&maxBytes=4')).body)).toMatchObject({
      text: 'hell',
      next: 4,
      ended: false,
    });
    expect((await get('?from=9')).status).toBe(400);
    expect(await code('?from=9')).toBe('INVALID_QUERY');
    expect(await code('?from=-1')).toBe('INVALID_QUERY');
    expect(await code('?from=1&tailBytes=2')).toBe('INVALID_QUERY');
    expect(await code('?maxBytes=3')).toBe('INVALID_QUERY');
    expect(await code('?maxBytes=65537')).toBe('INVALID_QUERY');
    const unknown = await httpCall(`${served.base}/api/background-works/bash-404/output?from=0`, {
      headers: auth(served),
    });
    expect(JSON.parse(unknown.body).error.code).toBe('WORK_NOT_FOUND');
    const stream = await readEvents(
      `${served.base}/api/background-works/${taskId}/output/stream?from=0&token=${served.token}`,
      {},
      (event) => event.event === 'end',
    );
    expect(stream.events.map((event) => event.event)).toEqual(['output', 'end']);
    expect(JSON.parse(stream.events[1]!.data)).toEqual({ next: 8, status: 'completed' });
    expect((await get('', 'output/stream/x')).status).toBe(404);
  });
});
