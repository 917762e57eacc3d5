/**
 * Durable remote commands across a runtime's death: a runtime in a child process (SQLite home, Redis)
 * starts durable and non-durable background commands on an `errand worker` process and is SIGKILLed.
 * Once its heartbeat expires the worker stops the non-durable one and runs the durable ones on; a new
 * runtime on the same home and Redis resumes the session and re-attaches them: same ids and owner,
 * output from the model's read offset, and each end — one that happened while no runtime ran too —
 * settled once and notified once. A runtime that exits cleanly lets go of them the same way, and
 * `errand serve --redis`'s backend shows such work from Redis and stops it through its job.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { processesWith, startWorkerProcess } from '../../test/support/errand-workers.js';
import { findRedisServer, startTestRedis, type TestRedis } from '../../test/support/redis-server.js';
import { RedisContext } from '../redis/redis-context.js';
import { createRedisWorkAccess } from '../redis/redis-work-access.js';
import { createStoreDashboardBackend } from '../server/index.js';
import { openSqliteSessionStore, type SessionStore } from '../store/index.js';
import { systemClock } from '../tasks/clock.js';
import { createTrustedCaller, type TaskSnapshot } from '../tasks/index.js';
import { scriptedModel } from '../testing/index.js';
import { executeTool } from '../tools/index.js';
import { createErrandRuntime, type ErrandRuntime } from './errand-runtime.js';

const redisServer = findRedisServer();
const trusted = createTrustedCaller('redis-durable-test');
const quiet = { warn: () => {} };
const child = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  'test',
  'fixtures',
  'host',
  'remote-runtime-child.mjs',
);

interface Started {
  readonly sessionId: string;
  readonly durable: string[];
  readonly plain: string[];
  kill(): Promise<void>;
}

/** Runs the fixture until READY. */
async function startRuntimeChild(config: Record<string, unknown>): Promise<Started> {
  const process_ = spawn(process.execPath, [child, JSON.stringify(config)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  process_.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => process_.once('exit', () => resolve()));
  const timer = setTimeout(() => process_.kill('SIGKILL'), 20_000);
  await new Promise<void>((resolve, reject) => {
    process_.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (/READY \S+\n/.test(stdout)) resolve();
    });
    process_.once('exit', (code) => reject(new Error(`the runtime child exited early (${code}): ${stderr}`)));
  }).catch(async (error: unknown) => {
    process_.kill('SIGKILL');
    await exited;
    throw error;
  });
  clearTimeout(timer);
  const started = [...stdout.matchAll(/STARTED (\S+) (durable|plain)\n/g)];
  return {
    sessionId: /READY (\S+)\n/.exec(stdout)![1]!,
    durable: started.filter((match) => match[2] === 'durable').map((match) => match[1]!),
    plain: started.filter((match) => match[2] === 'plain').map((match) => match[1]!),
    async kill() {
      process_.kill('SIGKILL');
      await exited;
    },
  };
}

function queuedAbout(store: SessionStore, sessionId: string, taskId: string): string[] {
  return store
    .listQueued(sessionId)
    .filter((entry) => entry.taskId === taskId)
    .map((entry) => entry.text);
}

function settledTask(runtime: ErrandRuntime, taskId: string): Promise<TaskSnapshot> {
  return vi.waitFor(
    () => {
      const task = runtime.tasks.get(taskId, trusted);
      if (task.status === 'running' || task.status === 'stopping')
        throw new Error(`${taskId} still ${task.status}`);
      return task;
    },
    { timeout: 15_000, interval: 20 },
  );
}

describe.skipIf(redisServer === undefined)('durable remote commands', () => {
  let redis: TestRedis;
  let home: string;
  const cleanups: Array<() => Promise<unknown> | unknown> = [];

  beforeAll(async () => {
    redis = await startTestRedis(redisServer!);
    home = mkdtempSync(join('/tmp', 'errand-redis-durable-'));
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  afterAll(async () => {
    await redis?.stop();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it('run on when their runtime is SIGKILLed and are re-attached by the runtime that resumes the session', async () => {
    const prefix = 'durable1';
    const token = `errand-durable-${process.pid}-${Date.now()}`;
    const go = join(home, 'go');
    const end = join(home, 'end');
    const endEarly = join(home, 'end-early');
    const worker = await startWorkerProcess({
      url: redis.url,
      prefix,
      name: 'w-durable',
      home: join(home, 'worker'),
      extra: ['--heartbeat', '100', '--heartbeat-ttl', '1000'],
    });
    cleanups.push(() => worker.stop('SIGKILL'));
    const host = await startRuntimeChild({
      home: join(home, 'runtime'),
      url: redis.url,
      prefix,
      ready: 'ready',
      durable: [
        `: ${token}-a; echo ready before; until [ -e ${go} ]; do sleep 0.02; done; echo after; until [ -e ${end} ]; do sleep 0.02; done; exit 3`,
        `: ${token}-b; echo ready; until [ -e ${endEarly} ]; do sleep 0.02; done; echo early-end; exit 5`,
      ],
      plain: [`: ${token}-c; echo ready; exec sleep 1000`],
    });
    const [reattached, endedUnwatched] = host.durable as [string, string];
    const [plain] = host.plain as [string];
    const observer = await RedisContext.open(redis.url, prefix, quiet);
    cleanups.push(() => observer.close());
    await host.kill();

    // The runtime's heartbeat expires: its worker stops the non-durable command and runs the durable ones on.
    const jobOf = (taskId: string): Promise<Record<string, string>> =>
      observer.client
        .keys(`${prefix}:job:*.${taskId}`)
        .then((keys) => (keys[0] === undefined ? {} : observer.client.hgetall(keys[0])));
    await vi.waitFor(
      async () => {
        const record = await jobOf(plain);
        if (record.state !== 'ended') throw new Error(`the plain job is ${record.state}`);
        expect(record.facts).toContain('is gone (no heartbeat)');
      },
      { timeout: 10_000, interval: 50 },
    );
    await vi.waitFor(() => expect(processesWith(`${token}-c`)).toEqual([]), { timeout: 5000 });
    expect(processesWith(`${token}-a`).length).toBeGreaterThan(0);
    expect(processesWith(`${token}-b`).length).toBeGreaterThan(0);
    expect((await jobOf(reattached)).state).toBe('running');

    // One ends while no runtime runs.
    writeFileSync(endEarly, '');
    await vi.waitFor(
      async () => {
        const record = await jobOf(endedUnwatched);
        if (record.state !== 'ended') throw new Error(`still ${record.state}`);
      },
      { timeout: 10_000, interval: 50 },
    );

    const runtime = await createErrandRuntime({
      model: scriptedModel([]),
      home: join(home, 'runtime'),
      pty: false,
      subagents: false,
      durable: true,
      lifeline: false,
      notifications: { wakeBudget: 0 },
      commandPollMs: false,
      logger: quiet,
      redis: { url: redis.url, prefix, heartbeatMs: 100, heartbeatTtlMs: 1000 },
    });
    cleanups.push(() => runtime.dispose());
    const session = runtime.resumeSession(host.sessionId);
    expect(runtime.tasks.get(reattached, session.owner)).toMatchObject({
      id: reattached,
      status: 'running',
      ownerSessionId: host.sessionId,
      detail: expect.objectContaining({ worker: 'w-durable', durable: true }),
    });

    // The one that ended unwatched settles at once with its exit code, notified once.
    const early = await settledTask(runtime, endedUnwatched);
    expect(early).toMatchObject({ status: 'failed', detail: expect.objectContaining({ exitCode: 5 }) });
    await vi.waitFor(() => expect(queuedAbout(runtime.store, session.id, endedUnwatched)).toHaveLength(1), {
      timeout: 5000,
    });
    expect(queuedAbout(runtime.store, session.id, endedUnwatched)[0]).toContain('<exit-code>5</exit-code>');

    // Output continues from the model's read offset.
    writeFileSync(go, '');
    const taskOutput = runtime.taskTools.tools.find((tool) => tool.name === 'task_output')!;
    const read = await vi.waitFor(
      async () => {
        const result = await executeTool(
          taskOutput,
          { task_id: reattached },
          { caller: session.owner, toolCallId: 'read-1', signal: new AbortController().signal },
        );
        if (!result.text.includes('after')) throw new Error(`no "after" yet: ${result.text}`);
        return result.text;
      },
      { timeout: 10_000, interval: 50 },
    );
    expect(read).not.toContain('before');

    writeFileSync(end, '');
    const ended = await settledTask(runtime, reattached);
    expect(ended).toMatchObject({ status: 'failed', detail: expect.objectContaining({ exitCode: 3 }) });
    await vi.waitFor(() => expect(queuedAbout(runtime.store, session.id, reattached)).toHaveLength(1), {
      timeout: 5000,
    });
    expect(queuedAbout(runtime.store, session.id, reattached)[0]).toContain('<exit-code>3</exit-code>');
    // The non-durable one is not re-attached: it did not outlive its runtime.
    expect(runtime.tasks.list(trusted).map((task) => task.id)).not.toContain(plain);
    expect(runtime.store.getTask(plain, session.id)?.status ?? 'lost').toBe('lost');
    expect(existsSync(go)).toBe(true);
    // Nothing runs twice, nothing is notified twice.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(queuedAbout(runtime.store, session.id, reattached)).toHaveLength(1);
    expect(queuedAbout(runtime.store, session.id, endedUnwatched)).toHaveLength(1);
    expect(processesWith(token)).toEqual([]);
  }, 60_000);

  it('show on a dashboard over the data directory with their output from Redis, and its Stop reaches the worker', async () => {
    const prefix = 'serve1';
    const token = `errand-serve-${process.pid}-${Date.now()}`;
    const worker = await startWorkerProcess({
      url: redis.url,
      prefix,
      name: 'w-serve',
      home: join(home, 'worker-serve'),
      extra: ['--heartbeat', '100', '--heartbeat-ttl', '1000'],
    });
    cleanups.push(() => worker.stop('SIGKILL'));
    const host = await startRuntimeChild({
      home: join(home, 'serve-runtime'),
      url: redis.url,
      prefix,
      ready: 'ready',
      durable: [`: ${token}; echo ready from the worker; while :; do sleep 0.05; done`],
      plain: [],
    });
    const [taskId] = host.durable as [string];
    await host.kill();

    const link = await RedisContext.open(redis.url, prefix, quiet);
    cleanups.push(() => link.close());
    const store = openSqliteSessionStore({ home: join(home, 'serve-runtime') });
    cleanups.push(() => store.close());
    const backend = createStoreDashboardBackend({
      store,
      logger: quiet,
      pollMs: 50,
      remote: createRedisWorkAccess(link, { settledRetentionMs: 60_000, clock: systemClock }),
    });
    cleanups.push(() => backend.dispose());

    // Its runtime is gone, its job runs: shown running, its output read from the job's stream.
    await vi.waitFor(
      () => {
        backend.refresh();
        expect(backend.events.find(taskId)?.status).toBe('running');
      },
      { timeout: 5000 },
    );
    const snapshot = await backend.outputSnapshot(host.sessionId, taskId, 4096);
    expect(snapshot).toMatchObject({ text: 'ready from the worker\n', totalBytes: 22 });
    const cursor = (await backend.openOutput!(taskId, { from: 'start' }))!;
    cleanups.push(() => cursor.close());
    expect((await cursor.read()).text).toBe('ready from the worker\n');
    expect(processesWith(token).length).toBeGreaterThan(0);

    // Stop: recorded on the job, its worker kills the tree.
    expect(await backend.stopBackgroundWork(taskId)).toEqual({ ok: true });
    expect(store.getTask(taskId, host.sessionId)).toMatchObject({
      status: 'stopping',
      stopInitiator: 'user',
    });
    await vi.waitFor(() => expect(processesWith(token)).toEqual([]), { timeout: 10_000 });
    const observer = await RedisContext.open(redis.url, prefix, quiet);
    cleanups.push(() => observer.close());
    const [jobKey] = await observer.client.keys(`${prefix}:job:*.${taskId}`);
    await vi.waitFor(
      async () => {
        const record = await observer.client.hgetall(jobKey!);
        expect(record.state).toBe('ended');
        expect(record.facts).toContain('stopped from the dashboard');
      },
      { timeout: 5000 },
    );
    // The dashboard shows how it ended, and the cursor reads to the end.
    await vi.waitFor(
      () => {
        backend.refresh();
        expect(backend.events.find(taskId)?.status).toBe('killed');
      },
      { timeout: 5000 },
    );
    expect((await cursor.read()).ended).toBe(true);
  }, 60_000);

  it('are let go of by a runtime that exits cleanly and re-attached by the next one', async () => {
    const prefix = 'clean1';
    const token = `errand-clean-${process.pid}-${Date.now()}`;
    const end = join(home, 'clean-end');
    const worker = await startWorkerProcess({
      url: redis.url,
      prefix,
      name: 'w-clean',
      home: join(home, 'worker-clean'),
      extra: ['--heartbeat', '100', '--heartbeat-ttl', '1000'],
    });
    cleanups.push(() => worker.stop('SIGKILL'));
    const open = async () => {
      const runtime = await createErrandRuntime({
        model: scriptedModel([]),
        home: join(home, 'clean-runtime'),
        pty: false,
        subagents: false,
        durable: true,
        lifeline: false,
        notifications: { wakeBudget: 0 },
        commandPollMs: false,
        logger: quiet,
        redis: { url: redis.url, prefix, heartbeatMs: 100, heartbeatTtlMs: 1000 },
      });
      cleanups.push(() => runtime.dispose());
      return runtime;
    };
    const first = await open();
    const session = first.createSession();
    const started = await executeTool(
      first.bashTool,
      {
        command: `: ${token}; echo started; until [ -e ${end} ]; do sleep 0.02; done; echo done`,
        run_in_background: true,
      },
      { caller: session.owner, toolCallId: 'call-1', signal: new AbortController().signal },
    );
    const taskId = (started.value as { taskId: string }).taskId;
    await vi.waitFor(() => expect(first.outputSnapshot(taskId)?.text).toContain('started'), {
      timeout: 10_000,
    });
    await first.dispose();
    // The runtime's heartbeat is gone with it; two of the worker's heartbeats later (each one checks the
    // runtimes of its jobs right after it beats), the durable command still runs.
    const observer = await RedisContext.open(redis.url, prefix, quiet);
    cleanups.push(() => observer.close());
    expect(await observer.client.keys(`${prefix}:rt:*:alive`)).toEqual([]);
    // A beat shows as the key's time to live rising between two reads (a read right after a beat already
    // sees it below its full TTL, so "above the first read" could miss every later beat).
    const aliveKey = `${prefix}:worker:w-clean:alive`;
    for (let beat = 0; beat < 2; beat += 1) {
      let last = await observer.client.pttl(aliveKey);
      await vi.waitFor(
        async () => {
          const now = await observer.client.pttl(aliveKey);
          const rose = now > last;
          last = now;
          expect(rose).toBe(true);
        },
        { timeout: 5000, interval: 10 },
      );
    }
    expect(processesWith(token).length).toBeGreaterThan(0);

    const second = await open();
    const resumed = second.resumeSession(session.id);
    expect(second.tasks.get(taskId, resumed.owner)).toMatchObject({ status: 'running' });
    writeFileSync(end, '');
    const ended = await settledTask(second, taskId);
    expect(ended).toMatchObject({ status: 'completed', detail: expect.objectContaining({ exitCode: 0 }) });
    await vi.waitFor(() => expect(queuedAbout(second.store, session.id, taskId)).toHaveLength(1), {
      timeout: 5000,
    });
    expect(processesWith(token)).toEqual([]);
  }, 60_000);
});
