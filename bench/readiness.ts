/**
 * Readiness benchmark: how late a model learns that a dev server it started is up.
 * A real HTTP dev server (a `node` process) binds its port after a random delay and prints the wall clock
 * at that moment. It is started as a background `bash` task, then waited on:
 *   (a) `task_output` with `wait_for: { port }` — one call;
 *   (b) `task_output` with `wait_for: { url }` — one call, an HTTP 200;
 *   (c) baseline: what a model does without it, a foreground `bash` call running
 *       `until curl -sf URL; do sleep 1; done` (the polling loop; the model's own round trips not counted).
 * Each figure is the time from the server's port opening to the call's answer. The three take turns,
 * trial by trial, on the same machine in the same run. The target: (a) within 100 ms of the port opening.
 */
import { createServer } from 'node:net';
import { BashExecutor, BashProducer, createBashTool } from '../src/producers/bash/index.js';
import { createTaskService } from '../src/registry/index.js';
import { createOwner } from '../src/tasks/index.js';
import { createTaskTools, executeTool, type ToolContext } from '../src/tools/index.js';

const TRIALS = Number(process.env.BENCH_TRIALS ?? 10);
const epochMs = () => performance.timeOrigin + performance.now();

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * A dev server that binds `port` after `delayMs` and then prints `bound <epoch ms>`: the clock read just
 * before `listen()`, the earliest moment the port can accept — so each figure is an upper bound.
 */
function devServer(port: number, delayMs: number): string {
  const program = [
    "const http=require('http');",
    `setTimeout(()=>{const s=http.createServer((q,r)=>r.end('ok'));`,
    'const t=(performance.timeOrigin+performance.now()).toFixed(3);',
    `s.listen(${port},'127.0.0.1',()=>console.log('bound '+t))},${delayMs})`,
  ].join('');
  return `exec node -e "${program}"`;
}

function percentile(values: number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))]!;
}

function describe(values: number[]): string {
  return `p50 ${percentile(values, 0.5).toFixed(1)} ms, p90 ${percentile(values, 0.9).toFixed(1)} ms, max ${Math.max(...values).toFixed(1)} ms`;
}

async function main(): Promise<void> {
  const tasks = createTaskService();
  const tools = createTaskTools({ tasks });
  const executor = new BashExecutor({ killGraceMs: 500 });
  const producer = new BashProducer({ tasks, executor });
  const bash = createBashTool({ producer, autoBackgroundAfterMs: false });
  const owner = createOwner('bench');
  let call = 0;
  const context = (): ToolContext => {
    call += 1;
    return { caller: owner, toolCallId: `call_${call}`, signal: new AbortController().signal };
  };

  /** Starts a server, runs `wait`, and returns the time from the bind to the wait's answer. */
  const trial = async (wait: (port: number, taskId: string) => Promise<string>): Promise<number> => {
    const port = await freePort();
    const delayMs = 300 + Math.floor(Math.random() * 900);
    const started = await executeTool(
      bash,
      { command: devServer(port, delayMs), run_in_background: true },
      context(),
    );
    const taskId = (started.value as { taskId: string }).taskId;
    const answer = await wait(port, taskId);
    const answeredAt = epochMs();
    if (!/ready after|exit code: 0/.test(answer)) throw new Error(`not ready: ${answer}`);
    // The bind's stamp: printed by the server right after the port opened.
    const stamp = await executeTool(
      tools.taskOutput,
      { task_id: taskId, wait_for: { pattern: '^bound ' }, timeout_ms: 10_000 },
      context(),
    );
    const match = /bound (\d+\.\d+)/.exec(stamp.text);
    if (match === null) throw new Error(`no stamp in ${stamp.text}`);
    await tasks.kill(taskId, owner, 'trial over');
    await tasks.wait(taskId, 10_000, owner);
    return answeredAt - Number(match[1]);
  };

  const waitForPort = (port: number, taskId: string) =>
    executeTool(
      tools.taskOutput,
      { task_id: taskId, wait_for: { port }, timeout_ms: 20_000 },
      context(),
    ).then((result) => result.text);
  const waitForUrl = (port: number, taskId: string) =>
    executeTool(
      tools.taskOutput,
      { task_id: taskId, wait_for: { url: `http://127.0.0.1:${port}/`, status: 200 }, timeout_ms: 20_000 },
      context(),
    ).then((result) => result.text);
  const pollingLoop = (port: number) =>
    executeTool(
      bash,
      {
        command: `until curl -sf -o /dev/null http://127.0.0.1:${port}/; do sleep 1; done`,
        timeout_ms: 30_000,
      },
      context(),
    ).then((result) => result.text);

  const port: number[] = [];
  const url: number[] = [];
  const polling: number[] = [];
  try {
    // One warm-up of each, not counted.
    await trial(waitForPort);
    await trial(pollingLoop);
    for (let index = 0; index < TRIALS; index += 1) {
      port.push(await trial(waitForPort));
      url.push(await trial(waitForUrl));
      polling.push(await trial(pollingLoop));
    }
  } finally {
    tools.dispose();
    await producer.dispose();
    await tasks.dispose();
    await executor.dispose();
  }
  const within = port.filter((value) => value <= 100).length;
  console.log(
    `readiness: port opened → the call's answer, ${TRIALS} trials each (server binds after 0.3–1.2 s)`,
  );
  console.log(`  (a) task_output wait_for { port }      ${describe(port)}`);
  console.log(`  (b) task_output wait_for { url, 200 }  ${describe(url)}`);
  console.log(`  (c) baseline: until curl; sleep 1 loop ${describe(polling)}`);
  console.log(
    `  baseline / wait_for port, p50: ${(percentile(polling, 0.5) / percentile(port, 0.5)).toFixed(1)}×; ` +
      `wait_for url: ${(percentile(polling, 0.5) / percentile(url, 0.5)).toFixed(1)}×`,
  );
  console.log(`  target: wait_for port within 100 ms of the port opening: ${within}/${TRIALS} trials`);
}

await main();
