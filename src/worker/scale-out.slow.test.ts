/**
 * Scale-out under a crash: three `errand worker` processes share the background commands of one runtime;
 * one is SIGKILLed mid-run. Its running tasks become `lost` (naming it) within the documented bound,
 * every other task completes, each task is notified exactly once, no command runs twice, and nothing the
 * killed worker ran is left alive. `ERRAND_SCALE_TASKS` raises the task count (default 300).
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processesWith, startWorkerProcess, type WorkerProcess } from '../../test/support/errand-workers.js';
import { findRedisServer, startTestRedis, type TestRedis } from '../../test/support/redis-server.js';
import { createErrandRuntime, type ErrandRuntime } from '../host/index.js';
import type { BashFacts } from '../producers/bash/index.js';
import { createMemorySessionStore } from '../store/index.js';
import { createTrustedCaller, type TaskSnapshot } from '../tasks/index.js';
import { scriptedModel } from '../testing/index.js';

const redisServer = findRedisServer();
const trusted = createTrustedCaller('scale-out-test');
const TASKS = Number(process.env.ERRAND_SCALE_TASKS ?? 300);
const HEARTBEAT_MS = 200;
const HEARTBEAT_TTL_MS = 1500;
/** The documented bound (the worker's heartbeat TTL plus one runtime check), plus room for a loaded machine. */
const LOST_BOUND_MS = HEARTBEAT_TTL_MS + HEARTBEAT_MS + 8000;

describe.skipIf(redisServer === undefined)('three workers, one SIGKILLed mid-run', () => {
  let redis: TestRedis;
  let home: string;
  const workers: WorkerProcess[] = [];
  let runtime: ErrandRuntime | undefined;

  beforeAll(async () => {
    redis = await startTestRedis(redisServer!);
    home = await mkdtemp(join(tmpdir(), 'errand-scale-'));
  });
  afterAll(async () => {
    await runtime?.dispose();
    for (const worker of workers) await worker.stop('SIGKILL');
    await redis?.stop();
    if (home) await rm(home, { recursive: true, force: true });
  });

  it(`settles ${TASKS} tasks exactly once: the killed worker's lost, every other completed`, async () => {
    const prefix = 'scale';
    const token = `errand-scale-${process.pid}-${Date.now()}`;
    for (const name of ['w1', 'w2', 'w3']) {
      workers.push(
        await startWorkerProcess({
          url: redis.url,
          prefix,
          name,
          home: join(home, name),
          extra: [
            '--concurrency',
            '16',
            '--heartbeat',
            String(HEARTBEAT_MS),
            '--heartbeat-ttl',
            String(HEARTBEAT_TTL_MS),
          ],
        }),
      );
    }
    runtime = await createErrandRuntime({
      model: scriptedModel(),
      store: createMemorySessionStore(),
      pty: false,
      subagents: false,
      commandPollMs: false,
      lifeline: false,
      logger: { warn: (message) => process.stderr.write(`runtime warning: ${message}\n`) },
      notifications: { wakeBudget: 0 },
      tasks: { maxLiveTasksPerOwner: TASKS, maxLiveTasks: TASKS },
      redis: { url: redis.url, prefix, heartbeatMs: HEARTBEAT_MS, heartbeatTtlMs: HEARTBEAT_TTL_MS },
    });
    const session = runtime.createSession();
    const ran = join(home, 'ran.log');
    appendFileSync(ran, '');
    const done = new Map<string, TaskSnapshot[]>();
    const allDone = new Promise<void>((resolve) => {
      runtime!.tasks.onTaskDone((snapshot) => {
        const list = done.get(snapshot.id) ?? [];
        list.push(snapshot);
        done.set(snapshot.id, list);
        if (done.size === TASKS) resolve();
      });
    });
    const ids: string[] = [];
    for (let index = 0; index < TASKS; index += 1) {
      const started = await runtime.bash.start({
        // The token marks the shell (its command line) and its child (its environment).
        command: `echo ${index} >> ${ran}; ERRAND_SCALE_TOKEN=${token} sleep 0.4; echo finished ${index}`,
        owner: session.owner,
      });
      ids.push(started.taskId);
    }
    // Kill w1 once a third has ended and w1 runs something.
    const w1 = workers[0]!;
    for (;;) {
      const running = runtime.tasks.list(trusted).filter((task) => task.status === 'running');
      const onW1 = running.filter((task) => (task.detail as BashFacts).worker === 'w1');
      if (done.size >= TASKS / 3 && onW1.length > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const killedAt = Date.now();
    await w1.stop('SIGKILL');
    await allDone;

    const lost: TaskSnapshot[] = [];
    for (const id of ids) {
      const ends = done.get(id) ?? [];
      expect(ends, `${id} ends`).toHaveLength(1);
      const end = ends[0]!;
      if (end.status === 'lost') {
        lost.push(end);
        expect((end.detail as BashFacts).worker).toBe('w1');
        expect(end.error).toContain('w1');
        expect(end.endedAt! - killedAt).toBeLessThanOrEqual(LOST_BOUND_MS);
      } else {
        expect(end.status, `${id}: ${end.error}`).toBe('completed');
      }
    }
    expect(lost.length).toBeGreaterThan(0);
    // Exactly one notification per task, none twice (the last ones are enqueued just after their ends).
    for (let attempt = 0; session.inbox.queuedNotifications().length < TASKS && attempt < 200; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const notified = session.inbox.queuedNotifications().map((notification) => notification.taskId);
    expect(new Set(notified).size).toBe(notified.length);
    const missing = ids.filter((id) => !notified.includes(id));
    expect(missing.map((id) => `${id} ${done.get(id)?.[0]?.status} ${done.get(id)?.[0]?.reported}`)).toEqual(
      [],
    );
    expect(notified.sort()).toEqual([...ids].sort());
    // No command ran twice.
    const starts = readFileSync(ran, 'utf8').trim().split('\n');
    expect(new Set(starts).size).toBe(starts.length);
    // Nothing of the killed worker's commands is left (its lifeline stopped them); the others ended.
    let left = processesWith(token);
    for (let attempt = 0; left.length > 0 && attempt < 100; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      left = processesWith(token);
    }
    expect(left).toEqual([]);
  }, 180_000);
});
