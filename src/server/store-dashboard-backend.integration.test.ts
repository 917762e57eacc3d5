/**
 * The store-backed dashboard against a real working runtime in another process (a child on the same
 * SQLite file): its session and running work are listed, its output read from the output file, Stop
 * reaches it through the store, and its work shows as lost once it is killed. Then `errand serve` end
 * to end: the built CLI lists the other process's session over HTTP.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isAlive } from '../../test/fixtures/bash/index.js';
import { CLI_PATH, httpCall, TextCapture } from '../../test/support/mcp-client.js';
import { createBackgroundWorksStore } from '../events/index.js';
import { openSqliteSessionStore, type SessionStore } from '../store/index.js';
import { createStoreDashboardBackend, type StoreDashboardBackend } from './store-dashboard-backend.js';

const FIXTURE = resolve(import.meta.dirname, '../../test/fixtures/session/serve-child.mjs');

interface Ready {
  readonly sessionId: string;
  readonly taskId: string;
  readonly pid: number;
  readonly finishedTaskId: string;
}

const children: ChildProcess[] = [];
const processGroups: number[] = [];
const stores: SessionStore[] = [];
const backends: StoreDashboardBackend[] = [];
const directories: string[] = [];

afterEach(async () => {
  for (const backend of backends.splice(0)) backend.dispose();
  for (const store of stores.splice(0)) store.close();
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((done) => child.once('exit', done));
      child.kill('SIGKILL');
      await exited;
    }
  }
  // A killed runtime leaves its commands' process groups behind: they are this test's to end.
  for (const group of processGroups.splice(0)) {
    try {
      process.kill(-group, 'SIGKILL');
    } catch {
      // Already gone.
    }
    await vi.waitFor(() => expect(isAlive(group)).toBe(false), { timeout: 5000 });
  }
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function temporaryHome(): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), 'errand-store-dash-')));
  directories.push(directory);
  return directory;
}

function spawnTracked(args: readonly string[]): {
  child: ChildProcess;
  stdout: TextCapture;
  stderr: TextCapture;
} {
  const child = spawn(process.execPath, args, { env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  return { child, stdout: new TextCapture(child.stdout!), stderr: new TextCapture(child.stderr!) };
}

async function startWorker(home: string): Promise<{ child: ChildProcess; ready: Ready }> {
  const { child, stdout } = spawnTracked([FIXTURE, home]);
  const [, json] = (await stdout.waitFor(/READY (\{.*\})\n/)) as unknown as [string, string];
  const ready = JSON.parse(json) as Ready;
  processGroups.push(ready.pid);
  return { child, ready };
}

function backendOn(home: string): { store: SessionStore; backend: StoreDashboardBackend } {
  const store = openSqliteSessionStore({ home });
  stores.push(store);
  const backend = createStoreDashboardBackend({
    store,
    pollMs: 50,
    stopTimeoutMs: 10_000,
    logger: { warn() {} },
  });
  backends.push(backend);
  return { store, backend };
}

describe('a store-backed dashboard over another process', () => {
  it('lists its session and running work, reads its output, and stops it through the store', async () => {
    const home = temporaryHome();
    const { ready } = await startWorker(home);
    const { store, backend } = backendOn(home);
    const works = createBackgroundWorksStore(backend.events, { logger: { warn() {} } });
    try {
      const sessions = await backend.listSessions();
      expect(sessions.map((session) => session.id)).toContain(ready.sessionId);
      expect(works.hasRunningWork(ready.sessionId)).toBe(true);
      expect(works.work(ready.taskId)).toMatchObject({ state: 'running', pid: ready.pid, cancellable: true });
      expect(works.work(ready.finishedTaskId)?.state).not.toBe('running');

      const output = await backend.outputSnapshot(ready.sessionId, ready.taskId, 8192);
      expect(output?.text).toContain('hello-from-child');
      expect(output?.totalBytes).toBe(Buffer.byteLength('hello-from-child\n'));

      expect(await backend.stopBackgroundWork(ready.finishedTaskId)).toEqual({
        ok: false,
        reason: 'not_running',
      });
      expect(await backend.stopBackgroundWork('bash-999')).toEqual({ ok: false, reason: 'not_found' });

      expect(await backend.stopBackgroundWork(ready.taskId)).toEqual({ ok: true });
      await vi.waitFor(() => expect(isAlive(ready.pid)).toBe(false), { timeout: 10_000 });
      await vi.waitFor(
        () =>
          expect(store.getTask(ready.taskId, ready.sessionId)).toMatchObject({
            status: 'killed',
            stopInitiator: 'user',
          }),
        { timeout: 10_000 },
      );
      await vi.waitFor(() => expect(works.work(ready.taskId)?.state).toBe('cancelled'), { timeout: 10_000 });
      expect(works.hasRunningWork(ready.sessionId)).toBe(false);
      expect(await backend.stopBackgroundWork(ready.taskId)).toEqual({ ok: false, reason: 'not_running' });
    } finally {
      works.dispose();
    }
  });

  it('shows the work of a killed runtime as its lifeline stopped it, never running once gone, and refuses to stop it', async () => {
    const home = temporaryHome();
    const { child, ready } = await startWorker(home);
    const { backend } = backendOn(home);
    expect(backend.events.find(ready.taskId)?.status).toBe('running');
    const events: string[] = [];
    backend.events.subscribe((event) => {
      if (event.type !== 'BackgroundWorksLevel' && event.taskId === ready.taskId) events.push(event.type);
    });
    const exited = new Promise((done) => child.once('exit', done));
    child.kill('SIGKILL');
    await exited;
    // The lifeline stops the sleep and records why; until it did, the sleep runs and is shown running.
    await vi.waitFor(
      () => {
        backend.refresh();
        expect(backend.events.find(ready.taskId)?.status).not.toBe('running');
      },
      { timeout: 5000, interval: 20 },
    );
    expect(backend.events.find(ready.taskId)).toMatchObject({
      status: 'killed',
      reason: 'runtime_died',
      cancellable: false,
    });
    // The lifeline records the stop before its signal lands, so the process may take a moment to go.
    await vi.waitFor(() => expect(isAlive(ready.pid)).toBe(false), { timeout: 5000, interval: 10 });
    backend.refresh();
    expect(backend.events.find(ready.taskId)?.status).toBe('killed');
    expect(events).toEqual(['BackgroundTaskCompleted']);
    backend.refresh();
    expect(events).toEqual(['BackgroundTaskCompleted']);
    expect(await backend.stopBackgroundWork(ready.taskId)).toEqual({ ok: false, reason: 'not_running' });
  });
});

describe('errand serve over the data directory', () => {
  it("lists another process's session and its running work over HTTP", async () => {
    const home = temporaryHome();
    const { ready } = await startWorker(home);
    const serve = spawnTracked([CLI_PATH, 'serve', '--home', home, '--port', '0']);
    const [, url] = (await serve.stdout.waitFor(
      /Errand dashboard: (http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)\n/,
    )) as unknown as [string, string];
    const page = new URL(url);
    const token = encodeURIComponent(page.searchParams.get('token')!);
    const sessions = await httpCall(new URL(`/api/sessions?token=${token}`, page.origin).href);
    expect(sessions.status).toBe(200);
    const body = JSON.parse(sessions.body) as {
      sessions: { id: string; hasRunningWork: boolean; title: string | null }[];
    };
    expect(body.sessions).toContainEqual(
      expect.objectContaining({ id: ready.sessionId, hasRunningWork: true, title: 'the working process' }),
    );
    const works = await httpCall(
      new URL(`/api/sessions/${ready.sessionId}/background-works?token=${token}`, page.origin).href,
    );
    expect(JSON.parse(works.body).backgroundWorks).toContainEqual(
      expect.objectContaining({ workId: ready.taskId, state: 'running', pid: ready.pid }),
    );
    const exited = new Promise((done) => serve.child.once('exit', (code, signal) => done({ code, signal })));
    serve.child.kill('SIGTERM');
    expect(await exited).toEqual({ code: 0, signal: null });
    expect(serve.stderr.text).toBe('');
  });
});
