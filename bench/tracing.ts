/**
 * Tracing benchmark: what tracing costs a task's start + settle and a tool call, with it off (what a
 * runtime without `@opentelemetry/api` runs: `NOOP_TRACING`), with the API installed but no SDK
 * registered (spans that record nothing), and with the SDK recording every span (in-memory exporter).
 * Also the one-time cost of loading the API, and the heap per live task. Prints figures and ratios
 * against tracing off, measured in the same run: a warm-up pass, then rounds whose mode order rotates and
 * reverses (printed), so no mode always runs first or after another.
 */
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { createTaskService } from '../src/registry/index.js';
import type { TaskHooks, TaskOutcome, TaskSpec } from '../src/tasks/index.js';
import { defineTool, executeTool } from '../src/tools/index.js';
import { defaultTracing, NOOP_TRACING, openTelemetryTracing, type Tracing } from '../src/tracing/index.js';

const TASKS = Number(process.env.BENCH_TASKS ?? 20_000);
const CALLS = Number(process.env.BENCH_CALLS ?? 20_000);
const LIVE = Number(process.env.BENCH_LIVE ?? 10_000);
const ROUNDS = 5;

const completed: TaskOutcome = Object.freeze({ status: 'completed' });
const noop = () => {};
const spec: TaskSpec = {
  kind: 'noop',
  label: 'no-op',
  run: (): TaskHooks => ({ cancel: noop, done: Promise.resolve(completed) }),
};

async function tasksPerSecond(tracing: Tracing, count: number): Promise<number> {
  const tasks = createTaskService({
    maxLiveTasks: count + 1,
    maxLiveOwnerlessTasks: count + 1,
    tracing,
    requireController: false,
  });
  let settled = 0;
  let allSettled!: () => void;
  const finished = new Promise<void>((resolve) => {
    allSettled = resolve;
  });
  tasks.onTaskDone(() => {
    settled += 1;
    if (settled === count) allSettled();
  });
  const began = performance.now();
  for (let index = 0; index < count; index += 1) await tasks.start(spec);
  await finished;
  const elapsed = performance.now() - began;
  await tasks.dispose();
  return count / (elapsed / 1000);
}

const echo = defineTool({
  name: 'echo',
  description: 'Echoes.',
  inputSchema: z.object({ text: z.string() }),
  execute: async ({ text }) => ({ text, isError: false }),
});

async function callsPerSecond(tracing: Tracing, count: number): Promise<number> {
  const signal = new AbortController().signal;
  const began = performance.now();
  for (let index = 0; index < count; index += 1) {
    await executeTool(
      echo,
      { text: 'x' },
      { caller: undefined, toolCallId: `call_${index}`, signal },
      { tracing },
    );
  }
  return count / ((performance.now() - began) / 1000);
}

function collect(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc');
  gc();
  gc();
}

async function heapPerLiveTask(tracing: Tracing, count: number): Promise<number> {
  const tasks = createTaskService({
    maxLiveTasks: count + 1,
    maxLiveOwnerlessTasks: count + 1,
    tracing,
    requireController: false,
  });
  const stops: Array<() => void> = [];
  const run = (): TaskHooks => {
    let stop!: () => void;
    const done = new Promise<TaskOutcome>((resolve) => {
      stop = () => resolve({ status: 'killed' });
    });
    stops.push(stop);
    return { cancel: stop, done };
  };
  collect();
  const before = process.memoryUsage().heapUsed;
  for (let index = 0; index < count; index += 1)
    await tasks.start({ kind: 'noop', label: `task ${index}`, run });
  collect();
  // The cancel functions are the bench's, not the task's: counted in every mode alike.
  const bytes = (process.memoryUsage().heapUsed - before) / count;
  await tasks.dispose();
  return bytes;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

const format = (value: number) => Math.round(value).toLocaleString('en-US');

async function main(): Promise<void> {
  console.log(
    `errand bench:tracing — node ${process.version}, ${TASKS} tasks and ${CALLS} tool calls per round`,
  );
  // Nothing has loaded the API yet: this is the one-time price of having it installed.
  const loadBegan = performance.now();
  const global = defaultTracing();
  const loadMs = performance.now() - loadBegan;
  if (!global.enabled) throw new Error('@opentelemetry/api is not installed (it is a dev dependency)');
  const api = await import('@opentelemetry/api');
  const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = await import(
    '@opentelemetry/sdk-trace-base'
  );
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const modes: Array<[string, Tracing]> = [
    ['off (no @opentelemetry/api, or tracing: false)', NOOP_TRACING],
    ['API installed, no SDK registered', global],
    ['SDK recording every span', openTelemetryTracing({ api, tracer: provider.getTracer('bench') })],
  ];
  const taskRates = new Map<string, number[]>();
  const callRates = new Map<string, number[]>();
  // One pass of every mode to warm up (not counted), then rounds whose order rotates and reverses, so
  // no mode always runs first (on a cold JIT) or right after the recording one (with its garbage).
  for (const [, tracing] of modes) {
    await tasksPerSecond(tracing, Math.min(TASKS, 2000));
    await callsPerSecond(tracing, Math.min(CALLS, 2000));
    exporter.reset();
  }
  const orders: string[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    const rotated = modes.map((_, index) => modes[(index + round) % modes.length]!);
    const order = round % 2 === 0 ? rotated : rotated.reverse();
    orders.push(order.map(([name]) => modes.findIndex(([other]) => other === name) + 1).join(''));
    for (const [name, tracing] of order) {
      taskRates.set(name, [...(taskRates.get(name) ?? []), await tasksPerSecond(tracing, TASKS)]);
      callRates.set(name, [...(callRates.get(name) ?? []), await callsPerSecond(tracing, CALLS)]);
      exporter.reset();
    }
  }
  console.log(`mode order per round (1 off, 2 API, 3 SDK): ${orders.join(' ')}`);
  console.log(`loading @opentelemetry/api (once per process): ${loadMs.toFixed(2)} ms`);
  const offTasks = median(taskRates.get(modes[0]![0])!);
  const offCalls = median(callRates.get(modes[0]![0])!);
  console.log('\nstart + settle, median of rounds:');
  for (const [name] of modes) {
    const rate = median(taskRates.get(name)!);
    console.log(
      `  ${name.padEnd(48)} ${format(rate).padStart(9)} tasks/s   ×${(offTasks / rate).toFixed(2)} the time of off`,
    );
  }
  console.log('\nexecuteTool of a trivial tool, median of rounds:');
  for (const [name] of modes) {
    const rate = median(callRates.get(name)!);
    console.log(
      `  ${name.padEnd(48)} ${format(rate).padStart(9)} calls/s   ×${(offCalls / rate).toFixed(2)} the time of off`,
    );
  }
  console.log(`\nheap per live task (${LIVE} live):`);
  for (const [name, tracing] of modes) {
    console.log(`  ${name.padEnd(48)} ${format(await heapPerLiveTask(tracing, LIVE)).padStart(9)} bytes`);
    exporter.reset();
  }
  await provider.shutdown();
}

await main();
