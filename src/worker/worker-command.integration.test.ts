/**
 * `errand worker` as a process: its usage errors (never printing a credential), a name already in use,
 * and SIGTERM's drain policy — running commands finish within `--drain-timeout`, the rest are cancelled.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startWorkerProcess, type WorkerProcess } from '../../test/support/errand-workers.js';
import { findRedisServer, startTestRedis, type TestRedis } from '../../test/support/redis-server.js';
import { createErrandRuntime, type ErrandRuntime } from '../host/index.js';
import type { BashFacts } from '../producers/bash/index.js';
import { createMemorySessionStore } from '../store/index.js';
import { createTrustedCaller } from '../tasks/index.js';
import { scriptedModel } from '../testing/index.js';

const redisServer = findRedisServer();
const trusted = createTrustedCaller('worker-command-test');
const cli = new URL('../../dist/cli/main.js', import.meta.url).pathname;

function runCli(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('exit', (code) => resolve({ code, stderr }));
  });
}

describe('errand worker usage', () => {
  it('needs --redis, and names a bad URL only redacted', async () => {
    const missing = await runCli(['worker']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('`--redis <url>` is required');
    const bad = await runCli(['worker', '--redis', 'http://user:hunter22@cache:6379']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--redis');
    expect(bad.stderr).not.toContain('hunter22');
    const sentinel = await runCli(['worker', '--redis', 'redis+sentinel://user:hunter22@s1:26379,s2:0/main']);
    expect(sentinel.code).toBe(2);
    expect(sentinel.stderr).toContain('`s2:0` has no port from 1 to 65535');
    expect(sentinel.stderr).not.toContain('hunter22');
  });
});

describe.skipIf(redisServer === undefined)('errand worker on a real Redis', () => {
  let redis: TestRedis;
  let home: string;
  let deployment = 0;
  const workers: WorkerProcess[] = [];
  const runtimes: ErrandRuntime[] = [];

  beforeAll(async () => {
    redis = await startTestRedis(redisServer!);
    home = await mkdtemp(join(tmpdir(), 'errand-worker-cli-'));
  });
  afterEach(async () => {
    for (const runtime of runtimes.splice(0)) await runtime.dispose();
    for (const worker of workers.splice(0)) await worker.stop('SIGKILL');
  });
  afterAll(async () => {
    await redis?.stop();
    if (home) await rm(home, { recursive: true, force: true });
  });

  const start = async (extra: string[] = []) => {
    const prefix = `cli${++deployment}`;
    const worker = await startWorkerProcess({
      url: redis.url,
      prefix,
      name: 'drainer',
      home: join(home, prefix),
      extra: ['--heartbeat', '100', '--heartbeat-ttl', '3000', ...extra],
    });
    workers.push(worker);
    const runtime = await createErrandRuntime({
      model: scriptedModel(),
      store: createMemorySessionStore(),
      pty: false,
      subagents: false,
      commandPollMs: false,
      lifeline: false,
      logger: { warn: () => {} },
      redis: { url: redis.url, prefix, heartbeatMs: 100, heartbeatTtlMs: 3000 },
    });
    runtimes.push(runtime);
    return { runtime, worker, prefix };
  };

  const runningOnWorker = async (runtime: ErrandRuntime, taskId: string) => {
    while ((runtime.tasks.get(taskId, trusted).detail as BashFacts).worker === undefined) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  it('refuses a second live worker of the same name', async () => {
    const { prefix } = await start();
    const second = await runCli([
      'worker',
      '--redis',
      redis.url,
      '--redis-prefix',
      prefix,
      '--name',
      'drainer',
      '--home',
      join(home, 'second'),
    ]);
    expect(second.code).toBe(2);
    expect(second.stderr).toContain('Another worker named "drainer"');
  });

  it('SIGTERM drains: a running command finishes, the worker exits 0', async () => {
    const { runtime, worker } = await start();
    const started = await runtime.bash.start({ command: 'sleep 0.5; echo drained-ok' });
    await runningOnWorker(runtime, started.taskId);
    await worker.stop('SIGTERM');
    expect(await worker.exited).toBe(0);
    const ended = await runtime.tasks.wait(started.taskId, 20_000, trusted);
    expect(ended.status).toBe('completed');
    expect((await runtime.tasks.read(started.taskId, trusted)).text).toBe('drained-ok\n');
  });

  it('SIGTERM drains for --drain-timeout, then cancels what still runs', async () => {
    const { runtime, worker } = await start(['--drain-timeout', '200']);
    const started = await runtime.bash.start({ command: 'sleep 60' });
    await runningOnWorker(runtime, started.taskId);
    await worker.stop('SIGTERM');
    expect(await worker.exited).toBe(0);
    const ended = await runtime.tasks.wait(started.taskId, 20_000, trusted);
    expect(ended.status).toBe('killed');
    expect((ended.detail as BashFacts).cancelMessage).toContain('worker drainer drained');
  });
});
