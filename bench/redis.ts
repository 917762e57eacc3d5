/**
 * Scale-out benchmark (`npm run bench:redis`), all on one redis-server started here (no persistence):
 * (a) throughput: raw BullMQ jobs/s (no-op jobs, and jobs spawning `bash -c true`) against Errand tasks/s
 *     (background `bash -c true` through `createErrandRuntime({ redis })` and one `errand worker`
 *     process), same concurrency, same run;
 * (b) latency from a remote command's exit (a timestamp it prints just before exiting) to its
 *     notification being queued in the runtime's session, across processes, p50/p99.
 * BENCH_TASKS (default 2000) and BENCH_CONCURRENCY (default 50) change the counts.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { createErrandRuntime } from '../src/host/index.js';
import { createMemorySessionStore } from '../src/store/index.js';
import { scriptedModel } from '../src/testing/index.js';

const TASKS = Number(process.env.BENCH_TASKS ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50);
const LATENCY_TASKS = Number(process.env.BENCH_LATENCY_TASKS ?? 200);
const root = new URL('../..', import.meta.url).pathname;
const epochMs = () => performance.timeOrigin + performance.now();

function percentile(values: number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))]!;
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

function waitForLine(child: ChildProcess, stream: 'stdout' | 'stderr', pattern: RegExp): Promise<void> {
  return new Promise((resolve, reject) => {
    let text = '';
    child[stream]!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (pattern.test(text)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`exited early (${code}): ${text}`)));
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

async function rawJobsPerSecond(url: string, mode: 'noop' | 'spawn', count: number): Promise<number> {
  const name = `raw-${mode}`;
  const queue = new Queue(name, { connection: { url, maxRetriesPerRequest: null } });
  const worker = spawn(
    process.execPath,
    [join(root, '.bench/bench/redis-raw-worker.js'), url, name, mode, String(CONCURRENCY)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  try {
    await waitForLine(worker, 'stdout', /ready/);
    const started = epochMs();
    await queue.addBulk(
      Array.from({ length: count }, (_, index) => ({
        name: 'job',
        data: { index },
        opts: { removeOnComplete: true, attempts: 1 },
      })),
    );
    for (;;) {
      const counts = await queue.getJobCounts('wait', 'active', 'delayed', 'prioritized');
      if (Object.values(counts).every((value) => value === 0)) break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    return (count / (epochMs() - started)) * 1000;
  } finally {
    await stop(worker);
    await queue.close();
  }
}

async function main(): Promise<void> {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  const redis = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const home = mkdtempSync(join(tmpdir(), 'errand-bench-redis-'));
  let worker: ChildProcess | undefined;
  try {
    await waitForLine(redis, 'stdout', /Ready to accept connections/);
    const noop = await rawJobsPerSecond(url, 'noop', TASKS);
    const rawSpawn = await rawJobsPerSecond(url, 'spawn', TASKS);

    worker = spawn(
      process.execPath,
      [
        join(root, 'dist/cli/main.js'),
        'worker',
        '--redis',
        url,
        '--name',
        'bench',
        '--home',
        home,
        '--concurrency',
        String(CONCURRENCY),
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    await waitForLine(worker, 'stderr', /takes jobs/);
    const runtime = await createErrandRuntime({
      model: scriptedModel(),
      store: createMemorySessionStore({ maxFieldBytes: 64 * 1024 * 1024 }),
      pty: false,
      subagents: false,
      commandPollMs: false,
      notifications: { wakeBudget: 0 },
      tasks: {
        maxLiveTasks: TASKS + 1,
        maxLiveTasksPerOwner: TASKS + 1,
        maxRetainedTasksPerOwner: TASKS + 1,
      },
      redis: { url },
    });
    try {
      // (a) throughput.
      let ended = 0;
      const allEnded = new Promise<void>((resolve) => {
        runtime.tasks.onTaskDone(() => {
          ended += 1;
          if (ended === TASKS) resolve();
        });
      });
      const started = epochMs();
      await Promise.all(Array.from({ length: TASKS }, () => runtime.bash.start({ command: 'true' })));
      await allEnded;
      const errand = (TASKS / (epochMs() - started)) * 1000;

      // (b) exit → notification queued, one task at a time.
      const session = runtime.createSession({ id: 'bench' });
      const queuedAt = new Map<string, number>();
      session.on((event) => {
        if (event.type === 'notification-queued') queuedAt.set(event.taskId, epochMs());
      });
      const latencies: number[] = [];
      for (let index = 0; index < LATENCY_TASKS; index += 1) {
        const task = await runtime.bash.start({ command: 'date +%s%N', owner: session.owner });
        while (!queuedAt.has(task.taskId)) await new Promise((resolve) => setTimeout(resolve, 1));
        const output = runtime.outputSnapshot(task.taskId)?.text ?? '';
        const stamp = Number(BigInt(/(\d{16,})/.exec(output)![1]!) / 1000n) / 1000;
        latencies.push(queuedAt.get(task.taskId)! - stamp);
      }

      console.log(
        `bench:redis — ${TASKS} tasks, concurrency ${CONCURRENCY}, one worker process, redis-server on 127.0.0.1`,
      );
      console.log(`  raw BullMQ, no-op jobs:            ${noop.toFixed(0)} jobs/s`);
      console.log(`  raw BullMQ, jobs running bash -c true: ${rawSpawn.toFixed(0)} jobs/s`);
      console.log(`  Errand remote bash tasks (bash -c true): ${errand.toFixed(0)} tasks/s`);
      console.log(
        `  ratio Errand / raw BullMQ running the same command: ${(errand / rawSpawn).toFixed(2)} (target >= 0.70)`,
      );
      console.log(`  ratio Errand / raw BullMQ no-op jobs: ${(errand / noop).toFixed(2)}`);
      console.log(
        `  exit -> notification queued (across processes, ${LATENCY_TASKS} tasks): p50 ${percentile(latencies, 0.5).toFixed(2)} ms, p99 ${percentile(latencies, 0.99).toFixed(2)} ms`,
      );
    } finally {
      await runtime.dispose();
    }
  } finally {
    if (worker) await stop(worker);
    await stop(redis);
    rmSync(home, { recursive: true, force: true });
  }
}

await main();
