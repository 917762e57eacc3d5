/**
 * Scale-out benchmark (`npm run bench:redis`), all on one redis-server started here (no persistence):
 * (a) throughput: raw BullMQ jobs/s (no-op jobs, and jobs spawning `bash -c true` with its output read)
 *     against Errand tasks/s (background `bash -c true` through `createErrandRuntime({ redis })` and one
 *     `errand worker` process), same concurrency, same command, same Redis. Each side is warmed up first
 *     (processes started, connections open, code compiled); then BENCH_ROUNDS rounds alternate which side
 *     goes first, and the medians are compared. Redis's own count of commands (scripts' inner commands
 *     included) and their time per task are printed beside.
 * (b) latency from a remote command's exit (a timestamp it prints just before exiting) to its
 *     notification being queued in the runtime's session, across processes, p50/p99, alternating with
 *     the same for raw BullMQ (a job running `date +%s%N` with Errand's launcher, to its completed event
 *     at the producer), printed as ratios.
 *     So is the CPU time per task of every process of each side (Redis, the worker processes and the
 *     commands they reaped, and this process: the runtime, or the raw side's queue polling), which moves
 *     less than the rates when the machine is shared.
 * The load average is printed at the start and at the end: the machine may be shared.
 * BENCH_TASKS (default 2000), BENCH_CONCURRENCY (50), BENCH_ROUNDS (3), BENCH_WARMUP (200) and
 * BENCH_LATENCY_TASKS (200) change the counts.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import { createErrandRuntime, type ErrandRuntime } from '../src/host/index.js';
import { scriptedModel } from '../src/testing/index.js';

const TASKS = Number(process.env.BENCH_TASKS ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 200);
const LATENCY_TASKS = Number(process.env.BENCH_LATENCY_TASKS ?? 200);
const root = new URL('../..', import.meta.url).pathname;
const epochMs = () => performance.timeOrigin + performance.now();

function percentile(values: number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))]!;
}

function median(values: number[]): number {
  return percentile(values, 0.5);
}

function load(): string {
  return loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
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

/** Redis's command count and time (microseconds) so far, scripts' inner commands included. */
async function commandStats(admin: Redis): Promise<{ calls: number; usec: number }> {
  const text = await admin.info('commandstats');
  let calls = 0;
  let usec = 0;
  for (const match of text.matchAll(/^cmdstat_(\w+(?:\|\w+)?):calls=(\d+),usec=(\d+)/gm)) {
    if (match[1] === 'info') continue;
    calls += Number(match[2]);
    usec += Number(match[3]);
  }
  return { calls, usec };
}

/** CPU seconds used by `pids` and the children they reaped (Linux `/proc`), plus this process's own. */
function cpuSeconds(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // utime, stime, cutime, cstime: fields 14 to 17.
      ticks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    } catch {
      // Gone: counted up to its last read.
    }
  }
  const own = process.cpuUsage();
  return ticks / 100 + (own.user + own.system) / 1e6;
}

/** The pids whose parent is `pid` (the worker's lifeline sidecar, which forks its commands). */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) children.push(Number(name));
    } catch {
      // Gone meanwhile.
    }
  }
  return children;
}

interface Measured {
  readonly perSecond: number;
  readonly calls: number;
  readonly usec: number;
  /** CPU milliseconds per task, every process of the side. */
  readonly cpuMs: number;
}

async function measure(
  admin: Redis,
  pids: readonly number[],
  count: number,
  run: () => Promise<void>,
): Promise<Measured> {
  const before = await commandStats(admin);
  const cpuBefore = cpuSeconds(pids);
  const started = epochMs();
  await run();
  const perSecond = (count / (epochMs() - started)) * 1000;
  const cpuMs = ((cpuSeconds(pids) - cpuBefore) * 1000) / count;
  const after = await commandStats(admin);
  return {
    perSecond,
    calls: (after.calls - before.calls) / count,
    usec: (after.usec - before.usec) / count,
    cpuMs,
  };
}

/** A bare BullMQ worker process and its queue; `run(n)` adds n jobs and resolves once all are done. */
async function rawSide(url: string, mode: 'noop' | 'spawn' | 'launch') {
  const name = `raw-${mode}`;
  const queue = new Queue(name, { connection: { url, maxRetriesPerRequest: null } });
  // The producer learns each end as Errand's runtime does: from the queue's events stream, not by polling.
  const events = new QueueEvents(name, { connection: { url, maxRetriesPerRequest: null } });
  await events.waitUntilReady();
  let completed = 0;
  let wake: (() => void) | undefined;
  let stamped: ((value: string, at: number) => void) | undefined;
  events.on('completed', ({ returnvalue }: { returnvalue: unknown }) => {
    const at = epochMs();
    completed += 1;
    if (stamped && typeof returnvalue === 'string' && returnvalue.length > 0) stamped(returnvalue, at);
    wake?.();
  });
  const worker = spawn(
    process.execPath,
    [join(root, '.bench/bench/redis-raw-worker.js'), url, name, mode, String(CONCURRENCY)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await waitForLine(worker, 'stdout', /ready/);
  return {
    pid: worker.pid!,
    async run(count: number): Promise<void> {
      const target = completed + count;
      const allCompleted = new Promise<void>((resolve) => {
        wake = () => {
          if (completed >= target) resolve();
        };
      });
      await queue.addBulk(
        Array.from({ length: count }, (_, index) => ({
          name: 'job',
          data: { index },
          opts: { removeOnComplete: true, attempts: 1 },
        })),
      );
      await allCompleted;
      wake = undefined;
    },
    /** One job running `date +%s%N`: ms from the stamp it printed (just before its exit) to its completed event. */
    async stamp(): Promise<number> {
      const heard = new Promise<number>((resolve) => {
        stamped = (value, at) => {
          const match = /(\d{16,})/.exec(value);
          if (match) resolve(at - Number(BigInt(match[1]!) / 1000n) / 1000);
        };
      });
      await queue.add('job', { stamp: true }, { removeOnComplete: true, attempts: 1 });
      const latency = await heard;
      stamped = undefined;
      return latency;
    },
    async close(): Promise<void> {
      await stop(worker);
      await events.close();
      await queue.close();
    },
  };
}

/** `count` background `true` at once through the runtime; resolves once every one ended. */
async function errandRun(runtime: ErrandRuntime, count: number): Promise<void> {
  let ended = 0;
  let stopListening = () => {};
  const allEnded = new Promise<void>((resolve) => {
    stopListening = runtime.tasks.onTaskDone(() => {
      ended += 1;
      if (ended === count) resolve();
    });
  });
  await Promise.all(Array.from({ length: count }, () => runtime.bash.start({ command: 'true' })));
  await allEnded;
  stopListening();
}

async function main(): Promise<void> {
  const loadAtStart = load();
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  const redis = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const home = mkdtempSync(join(tmpdir(), 'errand-bench-redis-'));
  let worker: ChildProcess | undefined;
  try {
    await waitForLine(redis, 'stdout', /Ready to accept connections/);
    const admin = new Redis(url);
    const noop = await rawSide(url, 'noop');
    const rawSpawn = await rawSide(url, 'spawn');
    const rawLaunch = await rawSide(url, 'launch');
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
    const everyTask = WARMUP + ROUNDS * TASKS + LATENCY_TASKS + 1;
    const runtime = await createErrandRuntime({
      model: scriptedModel(),
      // The SQLite store in a data directory of its own: what `errand mcp --redis` runs on.
      home: join(home, 'runtime'),
      pty: false,
      subagents: false,
      commandPollMs: false,
      notifications: { wakeBudget: 0 },
      // Every task of the run is retained: no eviction (and its Redis cleanup) happens inside a round.
      tasks: {
        maxLiveTasks: everyTask,
        maxLiveTasksPerOwner: everyTask,
        maxRetainedTasksPerOwner: everyTask,
      },
      redis: { url },
    });
    try {
      // (a) throughput: warm-up, then rounds alternating which side goes first.
      await noop.run(WARMUP);
      await rawSpawn.run(WARMUP);
      await rawLaunch.run(WARMUP);
      await errandRun(runtime, WARMUP);
      const errandPids = [redis.pid!, worker.pid!, ...childrenOf(worker.pid!)];
      const noops: Measured[] = [];
      const raws: Measured[] = [];
      const launches: Measured[] = [];
      const errands: Measured[] = [];
      const rounds: string[] = [];
      for (let round = 0; round < ROUNDS; round += 1) {
        noops.push(await measure(admin, [redis.pid!, noop.pid], TASKS, () => noop.run(TASKS)));
        const runRaw = async () => {
          raws.push(await measure(admin, [redis.pid!, rawSpawn.pid], TASKS, () => rawSpawn.run(TASKS)));
          launches.push(await measure(admin, [redis.pid!, rawLaunch.pid], TASKS, () => rawLaunch.run(TASKS)));
        };
        const runErrand = async () =>
          errands.push(await measure(admin, errandPids, TASKS, () => errandRun(runtime, TASKS)));
        if (round % 2 === 0) {
          await runRaw();
          await runErrand();
        } else {
          await runErrand();
          await runRaw();
        }
        const raw = raws[round]!.perSecond;
        const errand = errands[round]!.perSecond;
        const launch = launches[round]!.perSecond;
        rounds.push(
          `  round ${round + 1} (${round % 2 === 0 ? 'raw first' : 'Errand first'}): raw (Node spawn) ${raw.toFixed(0)} jobs/s, raw (Errand's launcher) ${launch.toFixed(0)} jobs/s, Errand ${errand.toFixed(0)} tasks/s, ratios ${(errand / raw).toFixed(2)} / ${(errand / launch).toFixed(2)}; CPU per task raw ${raws[round]!.cpuMs.toFixed(2)} / ${launches[round]!.cpuMs.toFixed(2)} ms, Errand ${errands[round]!.cpuMs.toFixed(2)} ms`,
        );
      }
      const noopRate = median(noops.map((entry) => entry.perSecond));
      const rawRate = median(raws.map((entry) => entry.perSecond));
      const launchRate = median(launches.map((entry) => entry.perSecond));
      const errandRate = median(errands.map((entry) => entry.perSecond));

      // (b) exit → notification queued, one task at a time.
      const session = runtime.createSession({ id: 'bench' });
      const queuedAt = new Map<string, number>();
      session.on((event) => {
        if (event.type === 'notification-queued') queuedAt.set(event.taskId, epochMs());
      });
      const latencies: number[] = [];
      const rawLatencies: number[] = [];
      for (let index = 0; index < LATENCY_TASKS; index += 1) {
        // Alternating with the raw side's same measurement: raw BullMQ, its producer told by its events.
        rawLatencies.push(await rawLaunch.stamp());
        const task = await runtime.bash.start({ command: 'date +%s%N', owner: session.owner });
        while (!queuedAt.has(task.taskId)) await new Promise((resolve) => setTimeout(resolve, 1));
        const output = runtime.outputSnapshot(task.taskId)?.text ?? '';
        const stamp = Number(BigInt(/(\d{16,})/.exec(output)![1]!) / 1000n) / 1000;
        latencies.push(queuedAt.get(task.taskId)! - stamp);
      }

      const perTask = (entries: Measured[]) =>
        `${median(entries.map((entry) => entry.calls)).toFixed(1)} commands, ${median(entries.map((entry) => entry.usec)).toFixed(0)} µs`;
      console.log(
        `bench:redis — ${TASKS} tasks x ${ROUNDS} rounds (after ${WARMUP} to warm up), concurrency ${CONCURRENCY}, one worker process, redis-server on 127.0.0.1`,
      );
      console.log(`  load average at start: ${loadAtStart}`);
      for (const line of rounds) console.log(line);
      console.log(`  raw BullMQ, no-op jobs:            ${noopRate.toFixed(0)} jobs/s (median)`);
      console.log(`  raw BullMQ, jobs running bash -c true: ${rawRate.toFixed(0)} jobs/s (median)`);
      console.log(
        `  raw BullMQ, jobs running bash -c true with Errand's launcher (no fork): ${launchRate.toFixed(0)} jobs/s (median)`,
      );
      console.log(`  Errand remote bash tasks (bash -c true): ${errandRate.toFixed(0)} tasks/s (median)`);
      console.log(
        `  ratio Errand / raw BullMQ running the same command: ${(errandRate / rawRate).toFixed(2)} (medians; target >= 0.70)`,
      );
      console.log(
        `  ratio Errand / raw BullMQ with the same launcher: ${(errandRate / launchRate).toFixed(2)} (medians)`,
      );
      console.log(`  ratio Errand / raw BullMQ no-op jobs: ${(errandRate / noopRate).toFixed(2)}`);
      const calls = (entries: Measured[]) => median(entries.map((entry) => entry.calls));
      const usec = (entries: Measured[]) => median(entries.map((entry) => entry.usec));
      console.log(
        `  Redis per task (both producers learn each end from an events stream): raw no-op ${perTask(noops)}; raw spawn ${perTask(raws)}; raw launch ${perTask(launches)}; Errand ${perTask(errands)}`,
      );
      console.log(
        `  Redis commands per task, Errand / raw BullMQ (same command, same launcher): ${(calls(errands) / calls(launches)).toFixed(2)}x (${calls(errands).toFixed(1)} / ${calls(launches).toFixed(1)}; target <= 1); against raw with Node's spawn ${(calls(errands) / calls(raws)).toFixed(2)}x`,
      );
      console.log(
        `  Redis time per task, Errand / raw BullMQ (same launcher): ${(usec(errands) / usec(launches)).toFixed(2)}x (${usec(errands).toFixed(0)} / ${usec(launches).toFixed(0)} µs)`,
      );
      const rawCpu = median(raws.map((entry) => entry.cpuMs));
      const errandCpu = median(errands.map((entry) => entry.cpuMs));
      console.log(
        `  CPU per task, every process of the side: raw spawn ${rawCpu.toFixed(2)} ms, Errand ${errandCpu.toFixed(2)} ms (raw / Errand ${(rawCpu / errandCpu).toFixed(2)})`,
      );
      const [p50, p99] = [percentile(latencies, 0.5), percentile(latencies, 0.99)];
      const [rawP50, rawP99] = [percentile(rawLatencies, 0.5), percentile(rawLatencies, 0.99)];
      console.log(
        `  exit -> notification queued (across processes, ${LATENCY_TASKS} tasks): p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms (target p50 <= 4 ms)`,
      );
      console.log(
        `  exit -> completed event, raw BullMQ (same launcher, alternating with the above): p50 ${rawP50.toFixed(2)} ms, p99 ${rawP99.toFixed(2)} ms; Errand / raw p50 ${(p50 / rawP50).toFixed(2)}x, p99 ${(p99 / rawP99).toFixed(2)}x`,
      );
      console.log(`  load average at end: ${load()}`);
    } finally {
      await runtime.dispose();
      await noop.close();
      await rawSpawn.close();
      await rawLaunch.close();
      admin.disconnect();
    }
  } finally {
    if (worker) await stop(worker);
    await stop(redis);
    rmSync(home, { recursive: true, force: true });
  }
}

await main();
