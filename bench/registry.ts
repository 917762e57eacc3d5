/**
 * Registry benchmark: start + settle no-op tasks through the task service against a bare baseline
 * (a promise in a Map), then the heap cost of live tasks. The target is what a user pays on top of the
 * process itself: the service's start and settle plus the SQLite store's two task records (the start and
 * the ending, written as the runtime writes them) against the spawn a background command makes (a shell in
 * its own process group with two pipes) by Errand's own launcher, measured in the same run — at most 5 %;
 * Node's `child_process.spawn` of it and a bare `spawn('true')` with no pipes are printed beside it. The bare-promise ratio stays printed as a reference, without a target. The heap per live
 * task is printed for the bare service and for the assembled runtime.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createErrandRuntime } from '../src/host/index.js';
import { createSpawnLauncher, nativeSpawnAvailable } from '../src/process/index.js';
import { createTaskService } from '../src/registry/index.js';
import { TASK_ID_BLOCK_SIZE } from '../src/session/index.js';
import { createMemorySessionStore, openSqliteSessionStore } from '../src/store/index.js';
import type { TaskHooks, TaskOutcome, TaskSpec } from '../src/tasks/index.js';
import { scriptedModel } from '../src/testing/index.js';

const TASKS = Number(process.env.BENCH_TASKS ?? 100_000);
const LIVE = Number(process.env.BENCH_LIVE ?? 10_000);
const ROUNDS = 5;

const completed: TaskOutcome = Object.freeze({ status: 'completed' });
const noop = () => {};

async function baseline(count: number): Promise<number> {
  const pending = new Map<number, Promise<void>>();
  const began = performance.now();
  for (let index = 0; index < count; index += 1) {
    let resolve!: () => void;
    const promise = new Promise<void>((done) => {
      resolve = done;
    });
    pending.set(index, promise);
    resolve();
    await promise;
    pending.delete(index);
  }
  return performance.now() - began;
}

/**
 * A reference point between the two: the least any registry with this API shape does — an async start,
 * the producer's hooks and done promise, a Map entry, settlement through `done.then` — and nothing else
 * (no validation, ownership, snapshots, retention or listeners).
 */
async function minimalRegistry(count: number): Promise<number> {
  const records = new Map<string, { status: string }>();
  let sequence = 0;
  const start = async (spec: TaskSpec) => {
    const id = `${spec.kind}-${++sequence}`;
    const hooks = spec.run({ taskId: id as never, updateDetail: noop });
    const record = { status: 'running' };
    records.set(id, record);
    hooks.done.then((outcome) => {
      record.status = outcome.status;
      records.delete(id);
    });
    return { id, status: record.status };
  };
  const spec: TaskSpec = {
    kind: 'noop',
    label: 'no-op',
    run: (): TaskHooks => ({ cancel: noop, done: Promise.resolve(completed) }),
  };
  const began = performance.now();
  for (let index = 0; index < count; index += 1) await start(spec);
  await Promise.resolve();
  return performance.now() - began;
}

async function throughService(count: number): Promise<number> {
  const tasks = createTaskService({ maxLiveTasks: count + 1, maxLiveOwnerlessTasks: count + 1 });
  tasks.attachController('bench');
  let settled = 0;
  let allSettled!: () => void;
  const finished = new Promise<void>((resolve) => {
    allSettled = resolve;
  });
  tasks.onTaskDone(() => {
    settled += 1;
    if (settled === count) allSettled();
  });
  const spec: TaskSpec = {
    kind: 'noop',
    label: 'no-op',
    run: (): TaskHooks => ({ cancel: noop, done: Promise.resolve(completed) }),
  };
  const began = performance.now();
  for (let index = 0; index < count; index += 1) await tasks.start(spec);
  await finished;
  const elapsed = performance.now() - began;
  await tasks.dispose();
  return elapsed;
}

function collect(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc');
  gc();
  gc();
}

async function heapPerLiveTask(count: number): Promise<number> {
  const tasks = createTaskService({ maxLiveTasks: count + 1, maxLiveOwnerlessTasks: count + 1 });
  tasks.attachController('bench');
  const never = new Promise<TaskOutcome>(() => {});
  collect();
  const before = process.memoryUsage().heapUsed;
  for (let index = 0; index < count; index += 1) {
    await tasks.start({ kind: 'noop', label: `task ${index}`, run: () => ({ cancel: noop, done: never }) });
  }
  collect();
  const after = process.memoryUsage().heapUsed;
  if (tasks.list().length !== count) throw new Error('live tasks went missing');
  return (after - before) / count;
}

/**
 * Heap per live background task in the assembled runtime on the memory store (its session, the records
 * it keeps and persists, the delivery policy's state): what a user pays, not the bare service.
 */
async function heapPerAssembledTask(count: number): Promise<number> {
  const runtime = await createErrandRuntime({
    model: scriptedModel([]),
    store: createMemorySessionStore(),
    pty: false,
    lifeline: false,
    tasks: { maxLiveTasks: count + 1, maxLiveTasksPerOwner: count + 1 },
  });
  try {
    const session = runtime.createSession({ id: 'bench' });
    let settle!: (outcome: TaskOutcome) => void;
    const later = new Promise<TaskOutcome>((resolve) => {
      settle = resolve;
    });
    collect();
    const before = process.memoryUsage().heapUsed;
    for (let index = 0; index < count; index += 1) {
      await runtime.tasks.start({
        kind: 'noop',
        label: `task ${index}`,
        owner: session.owner,
        background: true,
        run: () => ({ cancel: noop, done: later }),
      });
    }
    collect();
    const after = process.memoryUsage().heapUsed;
    if (runtime.tasks.list(session.owner).length !== count) throw new Error('live tasks went missing');
    settle(completed);
    return (after - before) / count;
  } finally {
    await runtime.dispose();
  }
}

/** What `spawnMs` times: a child process, or one Errand's launcher started. */
type Spawned = Pick<ChildProcess, 'stdout' | 'stderr'> & {
  once(event: 'exit', listener: () => void): unknown;
};

/** Milliseconds per spawn, to its exit (and its pipes closed), median of `count`. */
async function spawnMs(count: number, start: () => Spawned): Promise<number> {
  const times: number[] = [];
  for (let index = 0; index < count; index += 1) {
    const began = performance.now();
    const child = start();
    const closed = [child.stdout, child.stderr].map((stream) =>
      stream ? new Promise((resolve) => stream.once('close', resolve)) : undefined,
    );
    child.stdout?.resume();
    child.stderr?.resume();
    await Promise.all([new Promise<void>((resolve) => child.once('exit', () => resolve())), ...closed]);
    times.push(performance.now() - began);
  }
  return median(times);
}

/** What a background command's spawn is: a shell in its own process group, with two pipes. */
const commandSpawn = () =>
  spawn('bash', ['-c', 'true'], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
const bareSpawn = () => spawn('true', { stdio: 'ignore', detached: true });
/** The same command as Errand spawns it by default: without a fork where its native helper is built. */
const launcher = createSpawnLauncher();
const errandSpawn = () =>
  launcher.launch({
    file: 'bash',
    args: ['-c', 'true'],
    cwd: process.cwd(),
    env: process.env as Record<string, string>,
  }) as Spawned;

/**
 * Milliseconds of the SQLite store's work for one background command's records, as the runtime writes
 * them (deferred durability): its start (the tree's tag, boot and status file, the pid when the runtime
 * spawned it itself) and its ending with the process facts. A command running longer than
 * `limits.processFactsDelayMs` (1 s) writes its facts once more in between; `true` does not. The event
 * loop turns between tasks as it does in a runtime.
 */
async function storeMsPerTask(count: number): Promise<number> {
  const home = mkdtempSync(join(tmpdir(), 'errand-bench-registry-'));
  const store = openSqliteSessionStore({ home });
  try {
    store.createSession({ id: 's', cwd: '/' });
    const pid = 4242;
    const bootId = 'b0a1c2d3-e4f5-4677-8899-aabbccddeeff';
    const tag = 'ERRAND_PROCESS_TAG=6f1c0a52-7d1e-4a7b-9c55-0d7f4f2b9e10.1';
    const start = (index: number) => {
      const statusFile = `/tmp/outputs/bash-${index + 1}.status`;
      return {
        id: `bash-${index + 1}`,
        sessionId: 's',
        kind: 'bash',
        label: 'true',
        status: 'running' as const,
        detail: {
          command: 'true',
          cwd: '/',
          description: null,
          toolUseId: null,
          pid,
          pgid: pid,
          outputFile: null,
          outputBytes: 0,
          durable: false,
          statusFile,
          processTag: tag,
          bootId,
        },
        isBackgrounded: true,
        branchGeneration: 0,
        startedAt: 1,
        reported: false,
        statusFile,
        process: { pid, pgid: pid, bootId, tag },
      };
    };
    const ended = (index: number) => {
      const running = start(index);
      return {
        ...running,
        status: 'completed' as const,
        endedAt: 2,
        detail: { ...running.detail, processStartTime: 123_456, exitCode: 0, signal: null },
        process: { ...running.process, startTime: 123_456 },
      };
    };
    let spent = 0;
    for (let index = 0; index < count; index += 1) {
      const began = performance.now();
      // Ids come from blocks a runtime reserves in the store, a commit per block.
      if (index % TASK_ID_BLOCK_SIZE === 0) store.reserveTaskSequences('bash', index, TASK_ID_BLOCK_SIZE);
      for (const record of [start(index), ended(index)]) {
        store.upsertTask(record, { durability: 'deferred' });
      }
      spent += performance.now() - began;
      await new Promise((resolve) => setImmediate(resolve));
    }
    return spent / count;
  } finally {
    store.close();
    rmSync(home, { recursive: true, force: true });
  }
}

function rate(count: number, milliseconds: number): string {
  return `${Math.round(count / (milliseconds / 1000)).toLocaleString('en-US')}/s`;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function main(): Promise<void> {
  console.log(
    `errand bench:registry — node ${process.version}, ${TASKS.toLocaleString('en-US')} tasks per round`,
  );
  // Warm up both paths so the JIT has seen them.
  await baseline(10_000);
  await minimalRegistry(10_000);
  await throughService(10_000);
  const baselineTimes: number[] = [];
  const minimalTimes: number[] = [];
  const serviceTimes: number[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    baselineTimes.push(await baseline(TASKS));
    minimalTimes.push(await minimalRegistry(TASKS));
    serviceTimes.push(await throughService(TASKS));
  }
  const baselineMs = median(baselineTimes);
  const minimalMs = median(minimalTimes);
  const serviceMs = median(serviceTimes);
  console.log(
    `minimal registry (reference): ${rate(TASKS, minimalMs)}  (ratio to baseline ${(baselineMs / minimalMs).toFixed(3)})`,
  );
  console.log(
    `baseline (promise + Map):   ${rate(TASKS, baselineMs)}  (${baselineMs.toFixed(1)} ms, median of ${ROUNDS})`,
  );
  console.log(
    `task service start+settle:  ${rate(TASKS, serviceMs)}  (${serviceMs.toFixed(1)} ms, median of ${ROUNDS})`,
  );
  const ratio = baselineMs / serviceMs;
  console.log(`ratio service/baseline:     ${ratio.toFixed(3)}  (a reference: no target)`);
  const spawnCost = await spawnMs(200, commandSpawn);
  const bareSpawnCost = await spawnMs(200, bareSpawn);
  const errandSpawnCost = await spawnMs(200, errandSpawn);
  const storeCost = median([
    await storeMsPerTask(2000),
    await storeMsPerTask(2000),
    await storeMsPerTask(2000),
  ]);
  const serviceCost = serviceMs / TASKS;
  // The target divides by the spawn Errand itself makes (its launcher), not by Node's fork-based one.
  const overhead = (serviceCost + storeCost) / errandSpawnCost;
  console.log(
    `registry + store per task:  ${(serviceCost * 1000).toFixed(1)} µs + ${(storeCost * 1000).toFixed(1)} µs against ${errandSpawnCost.toFixed(3)} ms per spawn of a background command (bash -c true, own group, two pipes) by Errand's launcher (${nativeSpawnAvailable() ? 'without a fork' : 'child_process: no native helper'}): ${(overhead * 100).toFixed(1)} % (target <= 5 %: ${overhead <= 0.05 ? 'met' : 'MISSED'})`,
  );
  console.log(
    `                            against ${spawnCost.toFixed(3)} ms per Node child_process.spawn of the same command: ${(((serviceCost + storeCost) / spawnCost) * 100).toFixed(1)} % (a reference)`,
  );
  console.log(
    `                            against ${bareSpawnCost.toFixed(3)} ms per bare spawn('true') with no pipes: ${(((serviceCost + storeCost) / bareSpawnCost) * 100).toFixed(1)} % (a reference)`,
  );
  const bytes = await heapPerLiveTask(LIVE);
  console.log(
    `heap per live task:         ${Math.round(bytes)} bytes with ${LIVE.toLocaleString('en-US')} live (target <= 1024: ${bytes <= 1024 ? 'met' : 'MISSED'})`,
  );
  const assembledBytes = await heapPerAssembledTask(Math.min(LIVE, 2000));
  console.log(
    `heap per live task, assembled runtime: ${Math.round(assembledBytes)} bytes with ${Math.min(LIVE, 2000).toLocaleString('en-US')} live background tasks (memory store; what a user pays)`,
  );
}

await main();
