/**
 * Bash producer benchmark, all in one run:
 * (a) 200 sequential background `true` through Errand (task service + producer + executor) against raw
 *     `child_process.spawn` with the same options (from this process, and from a small Node process of
 *     its own — bench/raw-spawner.ts — whose fork copies little) and against execa — ms per task and ratios; and through
 *     the assembled runtime (a session, its task records and notifications) on the SQLite store — what a
 *     user gets by default — with the memory store beside it; and the task service with resource limits on
 *     (a cgroup per command, or the setrlimit floor) against the same with limits off;
 * (b) 1 GiB (`head -c 1073741824 /dev/zero`) through a background task against Node piping it into a
 *     file in the temporary directory (the like-for-like baseline and the target's: Errand keeps every
 *     byte in its output file) — MB/s, ratio, peak RSS growth — against Node reading the pipe and throwing
 *     the bytes away, and
 *     `head -c … | cat > /dev/null`, the physical limit;
 * (c) the start cost as the host's heap grows: in a child host with a small heap and in one holding
 *     ~1 GiB of live heap, `echo x` launched directly with a fork (`child_process.spawn` from the host),
 *     and without one (the default launcher, `posix_spawn` through the native helper) — the event loop
 *     blocked by the launch, launch to first byte, launch to exit — and the ratios between the hosts.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { createErrandRuntime, type ErrandRuntime } from '../src/host/index.js';
import {
  createSpawnLauncher,
  type LaunchedProcess,
  type ProcessLauncher,
  type ResourceLimitOptions,
  type Spawner,
} from '../src/process/index.js';
import { BashProducer } from '../src/producers/bash/bash-producer.js';
import { BashExecutor } from '../src/producers/bash/executor.js';
import { createTaskService } from '../src/registry/index.js';
import type { Session } from '../src/session/index.js';
import { createMemorySessionStore, openSqliteSessionStore } from '../src/store/index.js';
import { createTrustedCaller } from '../src/tasks/index.js';
import { scriptedModel } from '../src/testing/index.js';

const STARTS = Number(process.env.BENCH_STARTS ?? 200);
const FLOOD_BYTES = Number(process.env.BENCH_FLOOD_BYTES ?? 1024 * 1024 * 1024);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const FLOOD_ROUNDS = Number(process.env.BENCH_FLOOD_ROUNDS ?? 5);
const MIB = 1024 * 1024;
const START_COST_LAUNCHES = Number(process.env.BENCH_START_COST_LAUNCHES ?? 300);
const BIG_HEAP_MIB = Number(process.env.BENCH_BIG_HEAP_MIB ?? 1024);

const quietLogger = { warn() {} };
const trusted = createTrustedCaller('bench');

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function collect(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc');
  gc();
  gc();
}

/** Resolves once the child exited and both pipes closed (what "finished" means for a raw spawn). */
function finished(child: ChildProcess): Promise<void> {
  const closed = (stream: NodeJS.ReadableStream | null) =>
    stream ? new Promise<void>((resolve) => stream.once('close', () => resolve())) : Promise.resolve();
  return Promise.all([
    new Promise<void>((resolve, reject) => {
      child.once('exit', () => resolve());
      child.once('error', reject);
    }),
    closed(child.stdout),
    closed(child.stderr),
  ]).then(() => undefined);
}

/** Generous limits of every kind, so each command gets a group in every hierarchy the limits use. */
const BENCH_LIMITS = { memoryBytes: 1024 * MIB, pids: 1024, cpuTimeMs: 3_600_000 };

function errand(resourceLimits?: ResourceLimitOptions) {
  const tasks = createTaskService({
    logger: quietLogger,
    maxLiveTasks: 10_000,
    maxLiveOwnerlessTasks: 10_000,
    maxRetainedTasksPerOwner: 100_000,
  });
  tasks.attachController('bench');
  const executor = new BashExecutor({
    logger: quietLogger,
    ...(resourceLimits === undefined ? {} : { resourceLimits }),
  });
  const producer = new BashProducer({ tasks, executor });
  return {
    tasks,
    executor,
    producer,
    async dispose() {
      await tasks.dispose();
      await executor.dispose();
      producer.dispose();
    },
  };
}

async function startRaw(shell: string): Promise<void> {
  const child = spawn(shell, ['-c', 'true'], {
    cwd: process.cwd(),
    env: { ...process.env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  await finished(child);
}

async function startExeca(shell: string): Promise<void> {
  await execa(shell, ['-c', 'true'], {
    cwd: process.cwd(),
    env: { ...process.env },
    extendEnv: false,
    detached: true,
    stdin: 'ignore',
  });
}

interface AssembledRuntime {
  readonly runtime: ErrandRuntime;
  readonly session: Session;
  dispose(): Promise<void>;
}

/** The assembled runtime on `kind`'s store, with a session whose model notes every ending. */
async function assembled(kind: 'sqlite' | 'memory'): Promise<AssembledRuntime> {
  const home = mkdtempSync(join(tmpdir(), 'errand-bench-bash-'));
  const store = kind === 'sqlite' ? openSqliteSessionStore({ home }) : createMemorySessionStore();
  const model = scriptedModel([], { name: 'bench' });
  const runtime = await createErrandRuntime({
    model,
    store,
    pty: false,
    logger: quietLogger,
    tasks: { maxRetainedTasksPerOwner: 100_000, maxLiveTasksPerOwner: 1000 },
    limits: { maxQueuedCommands: 100_000 },
  });
  const session = runtime.createSession({ id: 'bench' });
  for (let index = 0; index < 100_000; index += 1) model.push({ text: 'noted' });
  return {
    runtime,
    session,
    async dispose() {
      await session.whenIdle();
      await runtime.dispose();
      store.close();
      rmSync(home, { recursive: true, force: true });
    },
  };
}

async function startAssembled(assembledRuntime: AssembledRuntime): Promise<void> {
  const { runtime, session } = assembledRuntime;
  const { taskId } = await runtime.bash.start({ command: 'true', owner: session.owner, background: true });
  const task = await runtime.tasks.wait(taskId, 60_000, trusted);
  if (task.status !== 'completed') throw new Error(`task ${taskId} ended ${task.status}`);
}

async function startErrand(runtime: ReturnType<typeof errand>): Promise<void> {
  const { taskId } = await runtime.producer.start({ command: 'true' });
  const task = await runtime.tasks.wait(taskId, 60_000, trusted);
  if (task.status !== 'completed') throw new Error(`task ${taskId} ended ${task.status}`);
}

/**
 * The three ways take turns task by task, so a change in the machine's load affects all of them alike.
 * Returns the mean milliseconds per task of each.
 */
type StartTotals = {
  raw: number;
  execa: number;
  errand: number;
  sqlite: number;
  memory: number;
  limited: number;
  rlimit: number;
};

/** The mechanism `errand({ task })` gets here (cgroup-v2, cgroup-v1, or rlimit). */
let limitedMechanism = '';

async function starts(count: number, shell: string): Promise<StartTotals> {
  const runtime = errand();
  // The same stack with resource limits: a cgroup per command where the host allows it, and the floor.
  const limited = errand({ task: BENCH_LIMITS });
  limitedMechanism = limited.executor.limitFacts?.mechanism ?? 'none';
  const floor = errand({ task: BENCH_LIMITS, mechanism: 'rlimit' });
  const sqlite = await assembled('sqlite');
  const memory = await assembled('memory');
  const totals: StartTotals = { raw: 0, execa: 0, errand: 0, sqlite: 0, memory: 0, limited: 0, rlimit: 0 };
  const timed = async (key: keyof typeof totals, work: () => Promise<void>) => {
    const began = performance.now();
    await work();
    totals[key] += performance.now() - began;
  };
  for (let index = 0; index < count; index += 1) {
    // Rotate the order too, so none always runs right after another.
    const order = [
      () => timed('raw', () => startRaw(shell)),
      () => timed('execa', () => startExeca(shell)),
      () => timed('errand', () => startErrand(runtime)),
      () => timed('sqlite', () => startAssembled(sqlite)),
      () => timed('memory', () => startAssembled(memory)),
      () => timed('limited', () => startErrand(limited)),
      () => timed('rlimit', () => startErrand(floor)),
    ];
    for (let turn = 0; turn < order.length; turn += 1) await order[(index + turn) % order.length]!();
  }
  await runtime.dispose();
  await limited.dispose();
  await floor.dispose();
  await sqlite.dispose();
  await memory.dispose();
  return {
    limited: totals.limited / count,
    rlimit: totals.rlimit / count,
    raw: totals.raw / count,
    execa: totals.execa / count,
    errand: totals.errand / count,
    sqlite: totals.sqlite / count,
    memory: totals.memory / count,
  };
}

/** The raw baseline run in a small Node process of its own (bench/raw-spawner.ts). */
function smallSpawner(): { perSpawn(count: number, shell: string): Promise<number>; close(): void } {
  const child = spawn(process.execPath, [new URL('./raw-spawner.js', import.meta.url).pathname], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let buffered = '';
  const waiting: Array<(ms: number) => void> = [];
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    for (let end = buffered.indexOf('\n'); end >= 0; end = buffered.indexOf('\n')) {
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 1);
      waiting.shift()?.(Number(line));
    }
  });
  return {
    perSpawn(count, shell) {
      return new Promise((resolve) => {
        waiting.push(resolve);
        child.stdin!.write(`${count} ${shell}\n`);
      });
    },
    close() {
      child.stdin!.end();
    },
  };
}

/** Runs `work` while sampling RSS every 5 ms; returns its duration and the peak RSS growth. */
async function measured(work: () => Promise<void>): Promise<{ ms: number; rssGrowth: number }> {
  collect();
  const baseline = process.memoryUsage.rss();
  let peak = baseline;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 5);
  const began = performance.now();
  await work();
  const ms = performance.now() - began;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage.rss());
  return { ms, rssGrowth: peak - baseline };
}

async function floodRaw(shell: string): Promise<{ ms: number; rssGrowth: number }> {
  return measured(async () => {
    const child = spawn(shell, ['-c', `head -c ${FLOOD_BYTES} /dev/zero`], {
      cwd: process.cwd(),
      env: { ...process.env },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // Node simply reading the pipe and dropping what it reads: a write stream to /dev/null is slower.
    child.stdout!.on('data', () => {});
    child.stderr!.resume();
    await finished(child);
  });
}

/**
 * Node reading the pipe and appending every chunk to a file in the temporary directory (as Errand keeps
 * a command's output file there), with the pipe's backpressure: what the file's writes cost by themselves.
 */
async function floodRawToFile(shell: string): Promise<{ ms: number; rssGrowth: number }> {
  const directory = mkdtempSync(join(tmpdir(), 'errand-bench-flood-'));
  try {
    return await measured(async () => {
      const child = spawn(shell, ['-c', `head -c ${FLOOD_BYTES} /dev/zero`], {
        cwd: process.cwd(),
        env: { ...process.env },
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const file = createWriteStream(join(directory, 'output.log'), { flags: 'wx', mode: 0o600 });
      child.stdout!.pipe(file);
      child.stderr!.resume();
      await Promise.all([finished(child), once(file, 'close')]);
    });
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

/** `head | cat > /dev/null`: the pipe with no Node on either end, the physical limit here. */
async function floodShell(shell: string): Promise<number> {
  const began = performance.now();
  await finished(
    spawn(shell, ['-c', `head -c ${FLOOD_BYTES} /dev/zero | cat > /dev/null`], { stdio: 'ignore' }),
  );
  return performance.now() - began;
}

async function floodErrand(): Promise<{ ms: number; rssGrowth: number }> {
  const runtime = errand();
  const result = await measured(async () => {
    const { taskId } = await runtime.producer.start({ command: `head -c ${FLOOD_BYTES} /dev/zero` });
    const task = await runtime.tasks.wait(taskId, 600_000, trusted);
    if (task.detail.outputBytes !== FLOOD_BYTES)
      throw new Error(`lost output: ${String(task.detail.outputBytes)}`);
  });
  await runtime.dispose();
  return result;
}

function fixed(value: number, digits = 2): string {
  return value.toFixed(digits);
}

interface StartCost {
  /** The event loop blocked inside `launch()`, ms. */
  readonly blockedMs: number;
  readonly firstByteMs: number;
  readonly exitMs: number;
}

interface HostStartCosts {
  readonly heapMiB: number;
  readonly rssMiB: number;
  /** `child_process.spawn` from the host: a fork. */
  readonly direct: StartCost;
  /** The default direct launcher: `posix_spawn` from the host through the native helper, no fork. */
  readonly unforked: StartCost;
}

/** One launch of `echo x`: the blocked time, to the first byte, to the exit with both pipes closed. */
async function timedLaunch(launcher: ProcessLauncher, shell: string): Promise<StartCost> {
  const began = performance.now();
  const child: LaunchedProcess = launcher.launch({
    file: shell,
    args: ['-c', 'echo x'],
    cwd: process.cwd(),
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
  });
  const blockedMs = performance.now() - began;
  let firstByteMs = Number.NaN;
  const closed = (stream: NodeJS.ReadableStream | null) =>
    stream ? new Promise<void>((resolve) => stream.once('close', () => resolve())) : Promise.resolve();
  child.stdout?.once('data', () => {
    firstByteMs = performance.now() - began;
  });
  child.stdout?.resume();
  child.stderr?.resume();
  await Promise.all([
    new Promise<void>((resolve, reject) => {
      child.once('exit', () => resolve());
      child.on('error', reject);
    }),
    closed(child.stdout),
    closed(child.stderr),
  ]);
  return { blockedMs, firstByteMs, exitMs: performance.now() - began };
}

function medianCost(costs: StartCost[]): StartCost {
  return {
    blockedMs: median(costs.map((cost) => cost.blockedMs)),
    firstByteMs: median(costs.map((cost) => cost.firstByteMs)),
    exitMs: median(costs.map((cost) => cost.exitMs)),
  };
}

/** In a child host: hold `heapMiB` of live heap, then time forked and unforked launches in turn. */
async function startCostHost(heapMiB: number, shell: string): Promise<HostStartCosts> {
  // Arrays of doubles live on the JS heap (8 bytes an element): 1 MiB each, all kept alive.
  const held: number[][] = [];
  for (let mib = 0; mib < heapMiB; mib += 1) held.push(new Array<number>(131_072).fill(mib + 0.5));
  collect();
  const launchers = {
    direct: createSpawnLauncher(spawn as Spawner),
    unforked: createSpawnLauncher(),
  };
  const ways = Object.keys(launchers) as (keyof typeof launchers)[];
  const costs = { direct: [] as StartCost[], unforked: [] as StartCost[] };
  for (let index = 0; index < 20; index += 1) {
    for (const way of ways) await timedLaunch(launchers[way], shell);
  }
  for (let index = 0; index < START_COST_LAUNCHES; index += 1) {
    // Rotated, so none always runs right after another.
    for (let turn = 0; turn < ways.length; turn += 1) {
      const way = ways[(index + turn) % ways.length]!;
      costs[way].push(await timedLaunch(launchers[way], shell));
    }
  }
  const result: HostStartCosts = {
    heapMiB: process.memoryUsage().heapUsed / MIB,
    rssMiB: process.memoryUsage.rss() / MIB,
    direct: medianCost(costs.direct),
    unforked: medianCost(costs.unforked),
  };
  if (held.length !== heapMiB) throw new Error('the heap was not held');
  return result;
}

/** Runs `startCostHost` in a fresh Node process (its heap is the host's heap), and reads its JSON line. */
async function startCostChild(heapMiB: number, shell: string): Promise<HostStartCosts> {
  const script = new URL(import.meta.url).pathname;
  const child = spawn(
    process.execPath,
    [`--max-old-space-size=${heapMiB + 1024}`, '--expose-gc', script, '--start-cost', String(heapMiB), shell],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let text = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`the start-cost host exited ${code}`);
  return JSON.parse(text.trim().split('\n').pop()!) as HostStartCosts;
}

async function startCosts(shell: string): Promise<void> {
  const small = await startCostChild(0, shell);
  const big = await startCostChild(BIG_HEAP_MIB, shell);
  console.log(
    `(c) start cost of \`echo x\` as the host grows, ${START_COST_LAUNCHES} launches each way in turn (medians; blocked / first byte / exit ms):`,
  );
  const line = (cost: StartCost) =>
    `${fixed(cost.blockedMs, 3)} / ${fixed(cost.firstByteMs, 3)} / ${fixed(cost.exitMs, 3)}`;
  for (const host of [small, big]) {
    console.log(
      `    host with ${fixed(host.heapMiB, 0)} MiB heap, ${fixed(host.rssMiB, 0)} MiB RSS: fork ${line(host.direct)}; without fork (default) ${line(host.unforked)}`,
    );
  }
  const ratio = (pick: (host: HostStartCosts) => number) => pick(big) / pick(small);
  const defaultRatio = ratio((host) => host.unforked.exitMs);
  console.log(
    `    big host / small host, launch to exit: fork ${fixed(
      ratio((host) => host.direct.exitMs),
      3,
    )}x, without fork (default) ${fixed(defaultRatio, 3)}x (target <= 1.2x: ${defaultRatio <= 1.2 ? 'met' : 'MISSED'})`,
  );
  console.log(
    `    big host / small host, event loop blocked per launch: fork ${fixed(
      ratio((host) => host.direct.blockedMs),
      2,
    )}x, without fork (default) ${fixed(
      ratio((host) => host.unforked.blockedMs),
      2,
    )}x`,
  );
  for (const host of [small, big]) {
    const to = (way: StartCost) =>
      `${fixed(way.exitMs / host.direct.exitMs, 3)}x to exit, ${fixed(way.firstByteMs / host.direct.firstByteMs, 3)}x to first byte`;
    console.log(
      `    ÷ fork in the ${host === small ? 'small' : 'big'} host: without fork ${to(host.unforked)}`,
    );
  }
}

async function main(): Promise<void> {
  const probe = new BashExecutor();
  const shell = probe.resolve({ command: 'true' }).shell;
  await probe.dispose();
  console.log(
    `errand bench:bash — node ${process.version}, shell ${shell}, load average ${loadavg()
      .map((value) => fixed(value, 2))
      .join(' ')} (${availableParallelism()} cores)`,
  );

  if (process.env.BENCH_ONLY_START_COST === '1') {
    await startCosts(shell);
    return;
  }
  // (a) starts
  await starts(20, shell);
  const spawner = smallSpawner();
  await spawner.perSpawn(20, shell);
  const rounds: StartTotals[] = [];
  const small: number[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    // The small process's round goes first in even rounds, last in odd ones.
    if (round % 2 === 0) small.push(await spawner.perSpawn(STARTS, shell));
    rounds.push(await starts(STARTS, shell));
    if (round % 2 === 1) small.push(await spawner.perSpawn(STARTS, shell));
  }
  spawner.close();
  const smallMs = median(small);
  const rawMs = median(rounds.map((round) => round.raw));
  const execaMs = median(rounds.map((round) => round.execa));
  const errandMs = median(rounds.map((round) => round.errand));
  console.log(
    `(a) ${STARTS} sequential background \`true\` each, task by task in turn, ${ROUNDS} rounds (medians):`,
  );
  console.log(
    `    per round (raw / execa / errand ms): ${rounds.map((round) => `${fixed(round.raw)}/${fixed(round.execa)}/${fixed(round.errand)}`).join('  ')}`,
  );
  console.log(
    `    raw child_process.spawn: ${fixed(rawMs, 3)} ms/task (from this process, Errand's runtimes loaded)`,
  );
  console.log(
    `    raw, from a small process: ${fixed(smallMs, 3)} ms/task (nothing else loaded: a fork copies little)`,
  );
  console.log(
    `    execa:                   ${fixed(execaMs, 3)} ms/task  (${fixed(execaMs / rawMs, 3)}x raw)`,
  );
  const startRatio = median(rounds.map((round) => round.errand / round.raw));
  console.log(
    `    errand task service:     ${fixed(errandMs, 3)} ms/task  (median per-round ratio ${fixed(startRatio, 3)}x raw, ${fixed(errandMs / execaMs, 3)}x execa)`,
  );
  for (const kind of ['sqlite', 'memory'] as const) {
    const ms = median(rounds.map((round) => round[kind]));
    const ratio = median(rounds.map((round) => round[kind] / round.raw));
    const target = kind === 'sqlite' ? `; target <= 1.15x raw: ${ratio <= 1.15 ? 'met' : 'MISSED'}` : '';
    console.log(
      `    errand runtime, ${kind} store: ${fixed(ms, 3)} ms/task  (median per-round ratio ${fixed(ratio, 3)}x raw${target}; ${fixed(ms / smallMs, 3)}x raw from a small process)`,
    );
  }
  for (const kind of ['limited', 'rlimit'] as const) {
    const ms = median(rounds.map((round) => round[kind]));
    const ratio = median(rounds.map((round) => round[kind] / round.errand));
    const name = kind === 'limited' ? `limits on (${limitedMechanism})` : 'limits on (rlimit)';
    console.log(
      `    errand task service, ${name}: ${fixed(ms, 3)} ms/task  (median per-round ratio ${fixed(ratio, 3)}x limits off, ${fixed(median(rounds.map((round) => round[kind] / round.raw)), 3)}x raw)`,
    );
  }
  if (process.env.BENCH_ONLY_STARTS === '1') return;

  // (b) stream: the three take turns (and rotate their order each round) so load changes hit all alike.
  type Flood = { ms: number; rssGrowth: number };
  const floods: Array<{ raw: Flood; toFile: Flood; errand: Flood }> = [];
  for (let round = 0; round < FLOOD_ROUNDS; round += 1) {
    const results: Partial<Record<'raw' | 'toFile' | 'errand', Flood>> = {};
    const order = [
      async () => {
        results.raw = await floodRaw(shell);
      },
      async () => {
        results.toFile = await floodRawToFile(shell);
      },
      async () => {
        results.errand = await floodErrand();
      },
    ];
    for (let turn = 0; turn < order.length; turn += 1) await order[(round + turn) % order.length]!();
    floods.push({ raw: results.raw!, toFile: results.toFile!, errand: results.errand! });
  }
  const rate = (ms: number) => FLOOD_BYTES / MIB / (ms / 1000);
  const rawRate = median(floods.map((flood) => rate(flood.raw.ms)));
  const toFileRate = median(floods.map((flood) => rate(flood.toFile.ms)));
  const errandRate = median(floods.map((flood) => rate(flood.errand.ms)));
  const streamRatio = median(floods.map((flood) => flood.raw.ms / flood.errand.ms));
  const fileRatio = median(floods.map((flood) => flood.toFile.ms / flood.errand.ms));
  const rssGrowth = Math.max(...floods.map((flood) => flood.errand.rssGrowth));
  const rawRssGrowth = Math.max(...floods.map((flood) => flood.raw.rssGrowth));
  const shellRate = rate(
    median(
      await Promise.resolve([await floodShell(shell), await floodShell(shell), await floodShell(shell)]),
    ),
  );
  console.log(
    `(b) ${fixed(FLOOD_BYTES / MIB, 0)} MiB of output, ${FLOOD_ROUNDS} rounds in rotating order (medians):`,
  );
  console.log(
    `    head | cat > /dev/null:  ${fixed(shellRate, 0)} MB/s  (no Node on either end: the physical limit)`,
  );
  console.log(
    `    raw: Node reads the pipe: ${fixed(rawRate, 0)} MB/s  (peak RSS growth ${fixed(rawRssGrowth / MIB, 1)} MiB)`,
  );
  console.log(
    `    Node reads the pipe into a file: ${fixed(toFileRate, 0)} MB/s  (what the output file's writes allow)`,
  );
  console.log(
    `    errand background task:  ${fixed(errandRate, 0)} MB/s  (median per-round ratio ${fixed(fileRatio, 3)}x Node keeping the bytes in a file, as Errand does; target >= 0.8: ${fileRatio >= 0.8 ? 'met' : 'MISSED'}; ${fixed(streamRatio, 3)}x Node throwing them away)`,
  );
  console.log(
    `    errand peak RSS growth:  ${fixed(rssGrowth / MIB, 1)} MiB  (target <= 64 MiB: ${rssGrowth <= 64 * MIB ? 'met' : 'MISSED'})`,
  );
  console.log(
    `    per round (raw / into a file / errand MB/s): ${floods.map((flood) => `${fixed(rate(flood.raw.ms), 0)}/${fixed(rate(flood.toFile.ms), 0)}/${fixed(rate(flood.errand.ms), 0)}`).join('  ')}`,
  );
  await startCosts(shell);
  console.log(
    `load average at the end: ${loadavg()
      .map((value) => fixed(value, 2))
      .join(' ')} (${availableParallelism()} cores)`,
  );
}

const startCostAt = process.argv.indexOf('--start-cost');
if (startCostAt >= 0) {
  const heapMiB = Number(process.argv[startCostAt + 1]);
  const shell = process.argv[startCostAt + 2]!;
  console.log(JSON.stringify(await startCostHost(heapMiB, shell)));
  process.exit(0);
} else {
  await main();
}
