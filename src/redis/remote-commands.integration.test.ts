/**
 * Remote bash commands end to end on a real redis-server: a runtime's task service and bash producer
 * dispatch background commands, a worker (in this process here; in processes of their own in the
 * scale-out suite) runs them. Output, cursors, cancels before pickup, while running and after the end.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { processesWith } from '../../test/support/errand-workers.js';
import { findRedisServer, startTestRedis, type TestRedis } from '../../test/support/redis-server.js';
import { BashExecutor, type BashFacts, createBashProducer } from '../producers/bash/index.js';
import { createTrustedCaller, systemClock, type TaskService, type TaskSnapshot } from '../tasks/index.js';
import { ErrandWorker } from '../worker/errand-worker.js';
import { RedisContext } from './redis-context.js';
import { redisTaskServiceOn } from './redis-task-service.js';
import { RemoteCommandDispatcher } from './remote-commands.js';

const redisServer = findRedisServer();

/** Whether `pid` runs (a zombie waiting for its reaper does not). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}
const trusted = createTrustedCaller('remote-test');
const quiet = { warn: () => {} };

interface Runtime {
  readonly tasks: TaskService;
  readonly bash: ReturnType<typeof createBashProducer>;
  close(): Promise<void>;
}

describe.skipIf(redisServer === undefined)('remote bash commands', () => {
  let redis: TestRedis;
  let home: string;
  let deployment = 0;
  const closers: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    redis = await startTestRedis(redisServer!);
    home = await mkdtemp(join(tmpdir(), 'errand-remote-'));
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });
  afterAll(async () => {
    await redis?.stop();
    if (home) await rm(home, { recursive: true, force: true });
  });

  const runtime = async (
    prefix: string,
    label = 'default',
    heartbeatTtlMs = 1000,
    settledRetentionMs = 60_000,
  ): Promise<Runtime & { context: RedisContext; dispatcher: RemoteCommandDispatcher }> => {
    const context = await RedisContext.open(redis.url, prefix, quiet);
    const dispatcher = await RemoteCommandDispatcher.start({
      context,
      label,
      heartbeatMs: 100,
      heartbeatTtlMs,
      settledRetentionMs,
      maxBufferedBytes: 1024 * 1024,
      maxReadBytes: 64 * 1024,
      clock: systemClock,
      logger: quiet,
    });
    const tasks = redisTaskServiceOn(context, 20);
    tasks.attachController('test');
    const executor = new BashExecutor({ logger: quiet });
    const bash = createBashProducer({ tasks, executor, remote: dispatcher });
    const close = async () => {
      await tasks.dispose();
      await executor.dispose();
      await dispatcher.close();
      await context.close();
    };
    closers.push(close);
    return { tasks, bash, close, context, dispatcher };
  };

  const worker = async (
    prefix: string,
    labels: string[] = [],
    settledRetentionMs?: number,
    outputFlushMs?: number,
    name = `w-${prefix}`,
  ): Promise<ErrandWorker> => {
    const started = await ErrandWorker.start({
      url: redis.url,
      prefix,
      name,
      labels,
      home,
      heartbeatMs: 100,
      heartbeatTtlMs: 1000,
      ...(settledRetentionMs === undefined ? {} : { settledRetentionMs }),
      ...(outputFlushMs === undefined ? {} : { outputFlushMs }),
      logger: quiet,
    });
    closers.push(() => started.stop());
    return started;
  };

  const ended = (tasks: TaskService, id: string): Promise<TaskSnapshot> => tasks.wait(id, 20_000, trusted);

  it('runs a background command on the worker: output, exit code, the worker named, cursors', async () => {
    const prefix = `p${++deployment}`;
    await worker(prefix);
    const { tasks, bash } = await runtime(prefix);
    const started = await bash.start({ command: 'printf "hello\\n"; printf "world\\n" >&2; exit 3' });
    expect(await started.handle.spawned).toBe(true);
    const done = await ended(tasks, started.taskId);
    expect(done.status).toBe('failed');
    const detail = done.detail as BashFacts;
    expect(detail.exitCode).toBe(3);
    expect(detail.worker).toBe(`w-${prefix}`);
    expect(detail.pid ?? null).toBeNull();
    const read = await tasks.read(started.taskId, trusted);
    expect(read.text).toBe('hello\nworld\n');
    const cursor = await tasks.openCursor(started.taskId, trusted);
    const page = await cursor.read();
    expect(page.text).toBe('hello\nworld\n');
    await cursor.close();
  });

  it('the worker spawns its commands itself, each carrying its lifeline tag, from the first one on', async () => {
    const prefix = `p${++deployment}`;
    await worker(prefix);
    const { tasks, bash } = await runtime(prefix);
    const started = await bash.start({ command: 'echo "$PPID ${ERRAND_LIFELINE:-none}"' });
    const done = await ended(tasks, started.taskId);
    expect(done.status).toBe('completed');
    const [parent, tag] = (await tasks.read(started.taskId, trusted)).text.trim().split(' ');
    // The worker runs in this test's process: its commands are children of it, never of its sidecar.
    expect(Number(parent)).toBe(process.pid);
    expect(tag).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('settles a task from its settled event: no read of the job record per task', async () => {
    const prefix = `p${++deployment}`;
    await worker(prefix);
    const { tasks, bash, context } = await runtime(prefix);
    const reads = vi.spyOn(context.client, 'hgetall');
    const started = await Promise.all(
      Array.from({ length: 5 }, (_, index) => bash.start({ command: `echo ${index}; exit ${index}` })),
    );
    const done = await Promise.all(started.map((task) => ended(tasks, task.taskId)));
    expect(done.map((task) => (task.detail as BashFacts).exitCode)).toEqual([0, 1, 2, 3, 4]);
    expect(done.map((task) => (task.detail as BashFacts).worker)).toEqual(Array(5).fill(`w-${prefix}`));
    const texts = await Promise.all(started.map((task) => tasks.read(task.taskId, trusted)));
    expect(texts.map((read) => read.text)).toEqual(['0\n', '1\n', '2\n', '3\n', '4\n']);
    expect(reads).not.toHaveBeenCalled();
  });

  it('publishes the end at the exit with the pending output in the same step, not after the flush timer', async () => {
    const prefix = `p${++deployment}`;
    // A flush timer far longer than the wait below: only an end sent at the exit arrives in time.
    await worker(prefix, [], undefined, 10_000);
    const { tasks, bash, context } = await runtime(prefix);
    const outputReads = vi.spyOn(context.client, 'xrangeBuffer');
    const started = await bash.start({ command: "printf 'last words\\n'; exit 4" });
    const done = await tasks.wait(started.taskId, 5000, trusted);
    expect(done.status).toBe('failed');
    expect((done.detail as BashFacts).exitCode).toBe(4);
    expect((await tasks.read(started.taskId, trusted)).text).toBe('last words\n');
    // The settled event carried the output too: nothing was read back from its stream.
    expect(outputReads).not.toHaveBeenCalled();
    // Output past what an event carries still goes into the stream with the end, and is read from there.
    const long = await bash.start({ command: "head -c 10000 /dev/zero | tr '\\0' y; exit 0" });
    expect((await tasks.wait(long.taskId, 5000, trusted)).status).toBe('completed');
    expect((await tasks.read(long.taskId, trusted)).text).toBe('y'.repeat(10_000));
    expect(outputReads).toHaveBeenCalled();
  });

  it('foreground commands stay local', async () => {
    const prefix = `p${++deployment}`;
    const { tasks, bash } = await runtime(prefix);
    const started = await bash.start({ command: 'echo $$', background: false });
    const done = await ended(tasks, started.taskId);
    expect(done.status).toBe('completed');
    expect((done.detail as BashFacts).worker).toBeUndefined();
    expect(typeof (done.detail as BashFacts).pid).toBe('number');
  });

  it('a cancel while running kills the whole tree on the worker', async () => {
    const prefix = `p${++deployment}`;
    await worker(prefix);
    const { tasks, bash } = await runtime(prefix);
    const marker = join(home, `${prefix}.pids`);
    const started = await bash.start({
      command: `sleep 60 & echo $! > ${marker}; echo $$ >> ${marker}; wait`,
    });
    // Running once its output file names the pids.
    while (
      !existsSync(marker) ||
      (await import('node:fs')).readFileSync(marker, 'utf8').split('\n').length < 3
    ) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const pids = (await import('node:fs')).readFileSync(marker, 'utf8').trim().split('\n').map(Number);
    await tasks.kill(started.taskId, trusted, 'enough');
    const done = await ended(tasks, started.taskId);
    expect(done.status).toBe('killed');
    expect((done.detail as BashFacts).cancelMessage).toBe('enough');
    for (const pid of pids) expect(alive(pid), `pid ${pid}`).toBe(false);
  });

  it('a cancel before any worker took the job wins: the command never runs', async () => {
    const prefix = `p${++deployment}`;
    const { tasks, bash } = await runtime(prefix, 'later');
    const marker = join(home, `${prefix}.ran`);
    const started = await bash.start({ command: `touch ${marker}` });
    expect(await started.handle.spawned).toBe(true);
    await tasks.kill(started.taskId, trusted, 'changed my mind');
    const done = await ended(tasks, started.taskId);
    expect(done.status).toBe('killed');
    const late = await worker(prefix, ['later']);
    while (late.counts.skipped + late.counts.taken === 0)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(late.counts.taken).toBe(0);
    expect(existsSync(marker)).toBe(false);
  });

  it('a cancel published between the claim and the start is carried out at once, not at the next heartbeat', async () => {
    const prefix = `p${++deployment}`;
    const { tasks, bash } = await runtime(prefix, 'default', 60_000);
    // The worker's claim, interposed: once it answers `run`, the job is cancelled and the worker's
    // subscription has the cancel before the worker goes on to start the command.
    const open = RedisContext.open;
    const interposed = vi.spyOn(RedisContext, 'open').mockImplementation(async (...args) => {
      const context = await open.apply(RedisContext, args);
      const connect = context.connect.bind(context);
      let subscriber: ReturnType<typeof connect> | undefined;
      context.connect = (role) => {
        const client = connect(role);
        if (role === 'cancels') subscriber = client;
        return client;
      };
      const claim = context.client.errandClaim.bind(context.client);
      context.client.errandClaim = async (jobKey, ...rest) => {
        const answer = await claim(jobKey, ...rest);
        // A job is named `<runtime>.<task id>`.
        const job = jobKey.slice(context.keys.job('').length);
        const taskId = job.slice(job.indexOf('.') + 1);
        if (answer === 'run') {
          const heard = new Promise((resolve) => subscriber!.once('message', resolve));
          void tasks.kill(taskId, trusted, 'raced');
          await heard;
        }
        return answer;
      };
      return context;
    });
    // Heartbeats far apart: a cancel the subscription missed would wait 30 s for the next re-read.
    const slow = await ErrandWorker.start({
      url: redis.url,
      prefix,
      name: `w-${prefix}`,
      home,
      heartbeatMs: 30_000,
      heartbeatTtlMs: 60_000,
      logger: quiet,
    });
    interposed.mockRestore();
    closers.push(() => slow.stop());
    const started = await Promise.all(Array.from({ length: 5 }, () => bash.start({ command: 'sleep 30' })));
    const done = await Promise.all(started.map((task) => tasks.wait(task.taskId, 10_000, trusted)));
    expect(done.map((task) => task.status)).toEqual(Array(5).fill('killed'));
    expect(slow.counts.taken).toBe(5);
  });

  it('a job whose queue entry is read again while it runs changes nothing: the command runs on, once', async () => {
    const prefix = `p${++deployment}`;
    const running = await worker(prefix);
    const { tasks, bash, context, dispatcher } = await runtime(prefix);
    const release = join(home, `${prefix}.release`);
    const command = `echo start; while [ ! -e ${release} ]; do sleep 0.02; done; echo done`;
    const started = await bash.start({ command });
    while ((await tasks.read(started.taskId, trusted)).text !== 'start\n') {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // Its entry on the queue again (added twice, or taken over from a stalled reader): read and handled.
    const data = { job: started.handle.id, taskId: started.taskId, runtime: dispatcher.runtimeId, command };
    await context.client.xadd(
      context.keys.queue('default'),
      '*',
      'job',
      started.handle.id,
      'data',
      JSON.stringify({ ...data, cwd: '/', timeoutMs: null }),
    );
    while (running.counts.taken + running.counts.skipped < 2) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(tasks.get(started.taskId, trusted).status).toBe('running');
    writeFileSync(release, '');
    const done = await ended(tasks, started.taskId);
    expect(done.status).toBe('completed');
    expect((await tasks.read(started.taskId, trusted)).text).toBe('done\n');
    expect(running.counts.taken).toBe(1);
  });

  it('an entry a worker read and never claimed (it died in between) is taken over by another worker and runs once', async () => {
    const prefix = `p${++deployment}`;
    const { tasks, bash, context } = await runtime(prefix, 'default', 60_000);
    const queue = context.keys.queue('default');
    await context.client.xgroup('CREATE', queue, 'workers', '0', 'MKSTREAM');
    const started = await bash.start({ command: 'echo taken over' });
    // A worker that reads the entry and dies before its claim: the entry stays pending under its name.
    const read = (await context.client.xreadgroup(
      'GROUP',
      'workers',
      'ghost',
      'COUNT',
      1,
      'STREAMS',
      queue,
      '>',
    )) as Array<[string, unknown[]]> | null;
    expect(read?.[0]?.[1]).toHaveLength(1);
    const live = await worker(prefix);
    const done = await ended(tasks, started.taskId);
    expect(done.status).toBe('completed');
    expect((await tasks.read(started.taskId, trusted)).text).toBe('taken over\n');
    expect(live.counts.taken).toBe(1);
    const [pending] = (await context.client.xpending(queue, 'workers')) as [number];
    expect(pending).toBe(0);
  });

  it('a Redis that lost every key (restarted empty) gets its queue made again: later commands run', async () => {
    const prefix = `p${++deployment}`;
    const live = await worker(prefix);
    const { tasks, bash, context } = await runtime(prefix);
    const first = await bash.start({ command: 'echo before' });
    expect((await ended(tasks, first.taskId)).status).toBe('completed');
    await context.client.flushall();
    // The heartbeats come back with the next beats (100 ms apart here).
    await vi.waitFor(
      async () => expect(await context.client.exists(context.keys.workerAlive(`w-${prefix}`))).toBe(1),
      { timeout: 5000, interval: 20 },
    );
    await vi.waitFor(async () => expect((await context.client.keys(`${prefix}:rt:*:alive`)).length).toBe(1), {
      timeout: 5000,
      interval: 20,
    });
    const second = await bash.start({ command: 'echo after' });
    const done = await ended(tasks, second.taskId);
    expect(done.status).toBe('completed');
    expect((await tasks.read(second.taskId, trusted)).text).toBe('after\n');
    expect(live.counts.taken).toBe(2);
  });

  it('two workers racing to take the same jobs while cancels land: nothing runs once its cancel is acknowledged, each end told once', async () => {
    const prefix = `p${++deployment}`;
    // Heartbeat TTLs with room for a loaded machine: no end here may be a loss.
    const racer = async (name: string) => {
      const started = await ErrandWorker.start({
        url: redis.url,
        prefix,
        name,
        home,
        heartbeatMs: 100,
        heartbeatTtlMs: 5000,
        logger: quiet,
      });
      closers.push(() => started.stop());
      return started;
    };
    const first = await racer(`a-${prefix}`);
    const second = await racer(`b-${prefix}`);
    const { tasks, bash, context, dispatcher } = await runtime(prefix, 'default', 5000);
    const ends = new Map<string, number>();
    tasks.onTaskDone((snapshot) => {
      ends.set(snapshot.id, (ends.get(snapshot.id) ?? 0) + 1);
    });
    const ran = join(home, `${prefix}.ran`);
    writeFileSync(ran, '');
    const token = `errand-race-${process.pid}-${Date.now()}`;
    // Within the ownerless limit (10 live tasks), the probe below included.
    const count = 9;
    const started = await Promise.all(
      Array.from({ length: count }, (_, index) =>
        bash.start({ command: `echo ${index} >> ${ran}; ERRAND_RACE_TOKEN=${token} sleep 30` }),
      ),
    );
    // Every job's entry twice: the two workers race to claim each job, and the cancels race both.
    const duplicates = context.client.pipeline();
    for (const task of started) {
      const command = `echo ${started.indexOf(task)} >> ${ran}; ERRAND_RACE_TOKEN=${token} sleep 30`;
      const data = { job: task.handle.id, taskId: task.taskId, runtime: dispatcher.runtimeId, command };
      duplicates.xadd(
        context.keys.queue('default'),
        '*',
        'job',
        task.handle.id,
        'data',
        JSON.stringify({ ...data, cwd: '/', timeoutMs: null }),
      );
    }
    const kills = started.map(async (task, index) => {
      if (index % 3 === 1) await new Promise((resolve) => setTimeout(resolve, index));
      return tasks.kill(task.taskId, trusted, 'raced');
    });
    await duplicates.exec();
    await Promise.all(kills);
    const done = await Promise.all(started.map((task) => ended(tasks, task.taskId)));
    expect(done.map((task) => task.status)).toEqual(Array(count).fill('killed'));
    // Every entry handled (each job's two), each job claimed at most once.
    await vi.waitFor(
      () => {
        const handled = [first, second].reduce((sum, w) => sum + w.counts.taken + w.counts.skipped, 0);
        expect(handled).toBe(2 * count);
        expect(first.runningCount + second.runningCount).toBe(0);
      },
      { timeout: 15_000, interval: 20 },
    );
    const taken = first.counts.taken + second.counts.taken;
    expect(taken).toBeLessThanOrEqual(count);
    await vi.waitFor(() => expect(processesWith(token)).toEqual([]), { timeout: 10_000, interval: 50 });
    const startsAfterCancels = readFileSync(ran, 'utf8');
    const lines = startsAfterCancels.split('\n').filter(Boolean);
    expect(new Set(lines).size).toBe(lines.length);
    expect(lines.length).toBeLessThanOrEqual(taken);
    // Nothing starts later, however long the workers run on.
    const probe = await bash.start({ command: 'echo probe' });
    expect((await ended(tasks, probe.taskId)).status).toBe('completed');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(readFileSync(ran, 'utf8')).toBe(startsAfterCancels);
    expect(processesWith(token)).toEqual([]);
    for (const task of started) expect(ends.get(task.taskId), task.taskId).toBe(1);
  });

  it('a cancel after the end changes nothing', async () => {
    const prefix = `p${++deployment}`;
    await worker(prefix);
    const { tasks, bash } = await runtime(prefix);
    const started = await bash.start({ command: 'echo done' });
    const done = await ended(tasks, started.taskId);
    expect(done.status).toBe('completed');
    const after = await tasks.kill(started.taskId, trusted, 'too late');
    expect(after.status).toBe('completed');
    expect(tasks.get(started.taskId, trusted).status).toBe('completed');
  });

  it('bounds the stream in Redis and marks what a reader missed', async () => {
    const prefix = `p${++deployment}`;
    await worker(prefix);
    const { tasks, bash } = await runtime(prefix);
    // 3 MiB of output against the default 1 MiB stream: the oldest bytes are gone from Redis.
    const started = await bash.start({ command: 'head -c 3145728 /dev/zero | tr "\\0" x' });
    const done = await ended(tasks, started.taskId);
    expect(done.status).toBe('completed');
    expect((done.detail as BashFacts).outputBytes).toBe(3 * 1024 * 1024);
    const read = await tasks.read(started.taskId, trusted);
    expect(read.text).toMatch(/^\[\.\.\. \d+ bytes skipped/);
    const cursor = await tasks.openCursor(started.taskId, trusted);
    const page = await cursor.read();
    expect(page.missedBytes).toBeGreaterThan(0);
    await cursor.close();
  });

  it('a worker runs a durable job whose runtime is gone by the time it takes it, a non-durable one never', async () => {
    const prefix = `p${++deployment}`;
    const { bash, context } = await runtime(prefix, 'later', 400);
    const durable = await bash.start({ command: 'echo durable', durable: true });
    const plain = await bash.start({ command: 'echo plain' });
    expect(await durable.handle.spawned).toBe(true);
    expect(await plain.handle.spawned).toBe(true);
    // The runtime "dies" before any worker of its label runs: its heartbeat expires.
    context.client.disconnect();
    const observer = await RedisContext.open(redis.url, prefix, quiet);
    closers.push(() => observer.close());
    const runtimeAlive = (await observer.client.keys(`${prefix}:rt:*:alive`))[0]!;
    while ((await observer.client.exists(runtimeAlive)) === 1)
      await new Promise((resolve) => setTimeout(resolve, 20));
    const late = await worker(prefix, ['later']);
    while (late.counts.taken + late.counts.skipped < 2)
      await new Promise((resolve) => setTimeout(resolve, 20));
    const stateOf = async (handle: { id: string }) => {
      for (;;) {
        const record = await observer.client.hgetall(observer.keys.job(handle.id));
        if (record.state !== 'queued' && record.state !== 'running') return record;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const durableRecord = await stateOf(durable.handle);
    expect(durableRecord.state).toBe('ended');
    expect(JSON.parse(durableRecord.facts ?? '{}').reason).toBe('completed');
    const plainRecord = await stateOf(plain.handle);
    expect(plainRecord.state).toBe('lost');
    expect(late.counts.taken).toBe(1);
  });

  it('a runtime that stops beating has its running commands stopped by the worker', async () => {
    const prefix = `p${++deployment}`;
    await worker(prefix);
    const { tasks, bash, context } = await runtime(prefix, 'default', 400);
    const marker = join(home, `${prefix}.pid`);
    const started = await bash.start({ command: `echo $$ > ${marker}; exec sleep 60` });
    while (!existsSync(marker) || readFileSync(marker, 'utf8').trim() === '') {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const pid = Number(readFileSync(marker, 'utf8').trim());
    expect(tasks.get(started.taskId, trusted).status).toBe('running');
    // The runtime "dies": its connections drop without a goodbye, its heartbeat expires.
    for (const client of [context.client]) client.disconnect();
    const observer = await RedisContext.open(redis.url, prefix, quiet);
    closers.push(() => observer.close());
    const jobKey = (await observer.client.keys(`${prefix}:job:*`))[0]!;
    let record: Record<string, string> = {};
    for (let attempt = 0; attempt < 500; attempt += 1) {
      record = await observer.client.hgetall(jobKey);
      if (record.state === 'ended') break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(record.state).toBe('ended');
    const facts = JSON.parse(record.facts ?? '{}') as { reason?: string; cancelMessage?: string };
    expect(facts.reason).toBe('cancelled');
    expect(facts.cancelMessage).toContain('is gone (no heartbeat)');
    expect(alive(pid)).toBe(false);
  });

  it('a runtime that dies leaves nothing in Redis for good: its events stream, the record and the output expire', async () => {
    const prefix = `p${++deployment}`;
    const keepMs = 1500;
    await worker(prefix, [], keepMs);
    const { tasks, bash, context, dispatcher } = await runtime(prefix, 'default', 400, keepMs);
    const started = await bash.start({ command: 'echo hello; exec sleep 60' });
    const observer = await RedisContext.open(redis.url, prefix, quiet);
    closers.push(() => observer.close());
    const events = `${prefix}:rt:${dispatcher.runtimeId}:events`;
    const jobId = `${dispatcher.runtimeId}.${started.taskId}`;
    const output = `${prefix}:out:${jobId}`;
    await vi.waitFor(
      async () => {
        expect(await observer.client.exists(output)).toBe(1);
        // A live runtime's stream has the expiry its beat gives it, at least two heartbeat TTLs.
        expect(await observer.client.pttl(events)).toBeGreaterThan(0);
      },
      { timeout: 10_000, interval: 20 },
    );
    expect(tasks.get(started.taskId, trusted).status).toBe('running');
    // The runtime "dies": its connection drops without a goodbye, and nothing of it deletes its keys.
    context.client.disconnect();
    const job = `${prefix}:job:${jobId}`;
    await vi.waitFor(async () => expect(await observer.client.hget(job, 'state')).toBe('ended'), {
      timeout: 10_000,
      interval: 20,
    });
    // The worker's end set an expiry on every key the job left, the gone runtime's stream included.
    for (const key of [job, output, events]) {
      const ttl = await observer.client.pttl(key);
      expect(ttl, key).toBeGreaterThan(0);
      expect(ttl, key).toBeLessThanOrEqual(keepMs);
    }
    await vi.waitFor(async () => expect(await observer.client.exists(job, output, events)).toBe(0), {
      timeout: 10_000,
      interval: 50,
    });
  });

  it("an event for a gone runtime whose stream had expired makes the stream anew with an expiry; a live one's is left to its beat", async () => {
    const prefix = `p${++deployment}`;
    const observer = await RedisContext.open(redis.url, prefix, quiet);
    closers.push(() => observer.close());
    const settleQueued = async (runtime: string, job: string) => {
      const events = `${prefix}:rt:${runtime}:events`;
      await observer.client.hset(`${prefix}:job:${job}`, 'state', 'queued', 'events', events);
      await observer.client.errandCancel(
        `${prefix}:job:${job}`,
        events,
        'r',
        '{}',
        1500,
        job,
        `${prefix}:cancel`,
      );
      return events;
    };
    // Gone: no heartbeat. The settled event makes its stream, which expires.
    const gone = await settleQueued('gone', 'gone.1');
    expect(await observer.client.xlen(gone)).toBe(1);
    const ttl = await observer.client.pttl(gone);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(1500);
    // Alive: its beat owns its stream's expiry; the script sets none.
    await observer.client.set(`${prefix}:rt:live:alive`, '1', 'PX', 10_000);
    const live = await settleQueued('live', 'live.1');
    expect(await observer.client.xlen(live)).toBe(1);
    expect(await observer.client.pttl(live)).toBe(-1);
  });
});
