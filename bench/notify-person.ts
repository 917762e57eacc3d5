/**
 * Person-notification benchmark: does a webhook receiver that never answers delay the model's
 * notification? Three runtimes take turns task by task in the same run — no webhook (the baseline), a
 * webhook whose receiver accepts connections and never answers, and one whose receiver answers 204 at
 * once — and each measures a background command's exit to its `<task-notification>` being queued for the
 * model. Prints p50/p99 per runtime and the ratios against the baseline (1.0 = no delay).
 */
import { createErrandRuntime, type ErrandRuntime } from '../src/host/index.js';
import { createMemorySessionStore } from '../src/store/index.js';
import { scriptedModel } from '../src/testing/index.js';
import { startWebhookReceiver, type WebhookReceiver } from '../test/support/webhook-receiver.js';

const TASKS = Number(process.env.BENCH_TASKS ?? 100);
const SECRET = 'bench-secret-0123456789abcdef';
const STAMP = 'date +%s%N';
const epochMs = () => performance.timeOrigin + performance.now();

function percentile(values: number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] as number;
}

function stampOf(text: string): number {
  const match = /(\d{16,})/.exec(text);
  if (!match) throw new Error(`no timestamp in output: ${JSON.stringify(text)}`);
  return Number(BigInt(match[1] as string) / 1000n) / 1000;
}

interface Run {
  readonly name: string;
  readonly runtime: ErrandRuntime;
  readonly session: ReturnType<ErrandRuntime['createSession']>;
  readonly latencies: number[];
  onQueued: ((taskId: string, at: number) => void) | undefined;
}

async function startRun(name: string, receiver: WebhookReceiver | undefined): Promise<Run> {
  const model = scriptedModel([], { name: 'bench' });
  for (let index = 0; index < TASKS + 10; index += 1) model.push({ text: 'noted' });
  const runtime = await createErrandRuntime({
    model,
    store: createMemorySessionStore(),
    pty: false,
    notifications: { wakeBudget: Number.POSITIVE_INFINITY },
    ...(receiver
      ? {
          notifyPerson: {
            // Every notice is kept waiting (a long timeout, many attempts, a deep queue): the worst case.
            webhook: {
              url: receiver.url,
              secret: SECRET,
              timeoutMs: 600_000,
              maxQueue: TASKS + 10,
              // Every notice goes out: the rate limit would otherwise hold most of them back.
              rateLimit: { perMinute: 100_000, burst: 100_000 },
            },
            browser: false as const,
          },
        }
      : {}),
  });
  const session = runtime.createSession({ id: name });
  const run: Run = { name, runtime, session, latencies: [], onQueued: undefined };
  session.on((event) => {
    if (event.type === 'notification-queued') run.onQueued?.(event.taskId, epochMs());
  });
  return run;
}

async function oneTask(run: Run): Promise<void> {
  let taskId = '';
  const queued = new Promise<number>((resolve) => {
    run.onQueued = (id, at) => {
      if (id === taskId) resolve(at);
    };
  });
  const started = await run.runtime.bash.start({
    command: STAMP,
    owner: run.session.owner,
    background: true,
  });
  taskId = started.taskId;
  const at = await queued;
  const output = run.runtime.outputSnapshot(taskId)?.text ?? '';
  run.latencies.push(at - stampOf(output));
  await run.session.whenIdle();
}

async function main(): Promise<void> {
  const dead = await startWebhookReceiver(() => 'hang');
  const live = await startWebhookReceiver(() => 204);
  const runs = [
    await startRun('none', undefined),
    await startRun('dead', dead),
    await startRun('live', live),
  ];
  try {
    for (let index = 0; index < TASKS; index += 1) for (const run of runs) await oneTask(run);
    const [baseline] = runs as [Run, Run, Run];
    const base50 = percentile(baseline.latencies, 0.5);
    const base99 = percentile(baseline.latencies, 0.99);
    console.log(`exit -> model notification queued, ${TASKS} tasks per runtime, taking turns`);
    for (const run of runs) {
      const p50 = percentile(run.latencies, 0.5);
      const p99 = percentile(run.latencies, 0.99);
      console.log(
        `  ${run.name.padEnd(5)} p50 ${p50.toFixed(2)} ms (x${(p50 / base50).toFixed(2)}), p99 ${p99.toFixed(2)} ms (x${(p99 / base99).toFixed(2)})`,
      );
    }
    console.log(`  requests the dead receiver holds open: ${dead.requests.length}`);
    console.log(`  notices the live receiver took: ${live.requests.length}`);
  } finally {
    for (const run of runs) await run.runtime.dispose();
    await dead.close();
    await live.close();
  }
}

await main();
