/**
 * `createErrandRuntime({ redis })` end to end: the model-facing tools on remote commands (a background
 * `bash` call runs on a worker, foreground stays here; task_list and task_output name the worker; one
 * notification per end), and a Redis restarted mid-run: commands keep running on their workers, every
 * task ends once, nothing runs twice.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { findRedisServer, startTestRedis, type TestRedis } from '../../test/support/redis-server.js';
import type { BashFacts } from '../producers/bash/index.js';
import { createMemorySessionStore } from '../store/index.js';
import { createTrustedCaller, type TaskSnapshot } from '../tasks/index.js';
import { scriptedModel } from '../testing/index.js';
import { executeTool } from '../tools/index.js';
import { ErrandWorker } from '../worker/errand-worker.js';
import { createErrandRuntime, type ErrandRuntime } from './errand-runtime.js';

const redisServer = findRedisServer();
const trusted = createTrustedCaller('redis-runtime-test');
const quiet = { warn: () => {} };

describe.skipIf(redisServer === undefined)('a runtime on Redis', () => {
  let redis: TestRedis;
  let home: string;
  let deployment = 0;
  const closers: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    redis = await startTestRedis(redisServer!);
    home = await mkdtemp(join(tmpdir(), 'errand-redis-runtime-'));
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });
  afterAll(async () => {
    await redis?.stop();
    if (home) await rm(home, { recursive: true, force: true });
  });

  const setUp = async (): Promise<{ runtime: ErrandRuntime; worker: ErrandWorker; prefix: string }> => {
    const prefix = `rt${++deployment}`;
    const worker = await ErrandWorker.start({
      url: redis.url,
      prefix,
      name: `worker-${prefix}`,
      home: join(home, prefix),
      heartbeatMs: 100,
      heartbeatTtlMs: 3000,
      logger: quiet,
    });
    closers.push(() => worker.stop());
    const runtime = await createErrandRuntime({
      model: scriptedModel(),
      store: createMemorySessionStore(),
      pty: false,
      subagents: false,
      commandPollMs: false,
      lifeline: false,
      logger: quiet,
      notifications: { wakeBudget: 0 },
      tasks: { maxLiveTasksPerOwner: 32 },
      redis: { url: redis.url, prefix, heartbeatMs: 100, heartbeatTtlMs: 3000 },
    });
    closers.push(() => runtime.dispose());
    return { runtime, worker, prefix };
  };

  it('runs a background bash call on the worker and reads, lists and notifies it as a local one', async () => {
    const { runtime, worker } = await setUp();
    const session = runtime.createSession();
    const context = { caller: session.owner, toolCallId: 'call-1', signal: new AbortController().signal };
    const started = await executeTool(
      runtime.bashTool,
      { command: 'echo from-the-worker', run_in_background: true, description: 'remote echo' },
      context,
    );
    expect(started.isError).toBe(false);
    const taskId = /Started (bash-\d+)/.exec(started.text)?.[1];
    expect(taskId).toBeDefined();
    const ended = await runtime.tasks.wait(taskId!, 20_000, trusted);
    expect(ended.status).toBe('completed');
    expect((ended.detail as BashFacts).worker).toBe(worker.name);
    const list = await executeTool(runtime.taskTools.taskList, {}, context);
    expect(list.text).toBe(`${taskId} [bash] completed on worker ${worker.name} — remote echo`);
    const output = await executeTool(runtime.taskTools.taskOutput, { task_id: taskId }, context);
    expect(output.text).toContain('from-the-worker');
    expect(output.text).toContain(`on worker ${worker.name}`);
    // A foreground call runs here.
    const foreground = await executeTool(runtime.bashTool, { command: 'echo local' }, context);
    expect(foreground.text).toContain('local');
    expect(
      runtime.tasks.list(trusted).filter((task) => (task.detail as BashFacts).worker === undefined),
    ).toHaveLength(1);
  });

  it('a Redis restarted mid-run: every task ends exactly once, none runs twice', async () => {
    const { runtime } = await setUp();
    const session = runtime.createSession();
    const ran = join(home, `restart-${deployment}.log`);
    writeFileSync(ran, '');
    const ends = new Map<string, TaskSnapshot[]>();
    const count = 12;
    const allEnded = new Promise<void>((resolve) => {
      runtime.tasks.onTaskDone((snapshot) => {
        ends.set(snapshot.id, [...(ends.get(snapshot.id) ?? []), snapshot]);
        if (ends.size === count) resolve();
      });
    });
    const ids: string[] = [];
    for (let index = 0; index < count; index += 1) {
      const started = await runtime.bash.start({
        command: `echo ${index} >> ${ran}; sleep 1; echo end ${index}`,
        owner: session.owner,
      });
      ids.push(started.taskId);
    }
    // Down while the commands run, up again on the same data (append-only file, fsync always).
    while (readFileSync(ran, 'utf8').trim().split('\n').filter(Boolean).length < count) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await redis.kill();
    await new Promise((resolve) => setTimeout(resolve, 200));
    await redis.restart();
    await allEnded;
    for (const id of ids) {
      const list = ends.get(id) ?? [];
      expect(list, id).toHaveLength(1);
      // The outage was shorter than the heartbeat TTL: the workers' reports arrive after it.
      expect(list[0]!.status, `${id}: ${list[0]!.error}`).toBe('completed');
      expect((await runtime.tasks.read(id, trusted)).text).toMatch(/^end \d+\n$/);
    }
    const starts = readFileSync(ran, 'utf8').trim().split('\n');
    expect(new Set(starts).size).toBe(count);
    expect(starts).toHaveLength(count);
    for (let attempt = 0; session.inbox.queuedNotifications().length < count && attempt < 200; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const notified = session.inbox.queuedNotifications().map((notification) => notification.taskId);
    expect(notified.sort()).toEqual([...ids].sort());
  }, 60_000);
});
