/**
 * Across-hosts benchmark (`npm run bench:scale-hosts`): network namespaces as hosts on this machine
 * (`test/support/netns-hosts.ts`; root, iproute2 and redis-server needed).
 * (a) exit → notification of a remote command, one at a time, with the runtime, Redis and a worker on
 *     three hosts of their own (across the switch), against the same three programs on one host (over
 *     loopback), in the same run: both deployments live side by side, BENCH_ROUNDS rounds of
 *     BENCH_LATENCY_TASKS commands alternate which goes first (after a warm-up), and the p50 and p99 of
 *     every round's commands are compared as a ratio.
 * (b) the scenarios the across-hosts suites assert on (`test/support/netns-scenarios.ts`): a worker
 *     partitioned from Redis and healed, 50 ms ± 10 ms and 5% loss each way on Redis's link during a
 *     burst, a worker's whole host SIGKILLed, a Redis failover under Sentinel — each with its times to
 *     recover and its books: tasks settled lost (what a partition or a death means), endings untold,
 *     endings or notifications duplicated, commands run twice.
 * The load average is printed at the start and at the end: the machine may be shared.
 */
import { loadavg } from 'node:os';
import type { Accounting } from '../test/support/netns-errand.js';
import { createLab, findNetns, type Lab } from '../test/support/netns-hosts.js';
import { exitLatency, percentile, SCENARIOS } from '../test/support/netns-scenarios.js';
import { findRedisServer } from '../test/support/redis-server.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const LATENCY_TASKS = Number(process.env.BENCH_LATENCY_TASKS ?? 100);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 20);

const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');

async function withLab<T>(names: readonly string[], body: (lab: Lab) => Promise<T>): Promise<T> {
  const lab = await createLab(netns!, names);
  try {
    return await body(lab);
  } finally {
    lab.destroy();
  }
}

function counts(books: Accounting): string {
  return `lost (settled lost) ${books.lost}, untold ${books.untold}, duplicated ${books.duplicatedEnds + books.duplicatedTells}, run twice ${books.ranTwice}, untrue ${books.untrue.length}`;
}

const netns = findNetns((line) => console.log(line));
const redisServer = netns ? findRedisServer({ write: (line) => console.log(line) }) : undefined;
if (netns === undefined || redisServer === undefined) process.exit(2);

console.log(
  `bench:scale-hosts — network namespaces as hosts on one machine (${netns.netem ? 'tc netem' : 'no sch_netem: the user-space link shaper'}), redis-server from ${redisServer}`,
);
console.log(`  load average at start: ${load()}`);

// (a) exit → notification: across hosts against one host, side by side.
const oneHost = await createLab(netns, ['one']);
const acrossHosts = await createLab(netns, ['rt', 'redis', 'w1']);
try {
  const one = await exitLatency(
    oneHost,
    redisServer,
    { runtime: 'one', worker: 'one', redis: 'one' },
    WARMUP,
    'one',
  );
  const across = await exitLatency(
    acrossHosts,
    redisServer,
    { runtime: 'rt', worker: 'w1', redis: 'redis' },
    WARMUP,
    'across',
  );
  const oneAll: number[] = [];
  const acrossAll: number[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    const first = round % 2 === 0 ? 'one host' : 'across hosts';
    let a: number[];
    let b: number[];
    if (round % 2 === 0) {
      a = await one.again(LATENCY_TASKS);
      b = await across.again(LATENCY_TASKS);
    } else {
      b = await across.again(LATENCY_TASKS);
      a = await one.again(LATENCY_TASKS);
    }
    oneAll.push(...a);
    acrossAll.push(...b);
    console.log(
      `  round ${round + 1} (${first} first): one host p50 ${percentile(a, 0.5).toFixed(2)} ms, across hosts p50 ${percentile(b, 0.5).toFixed(2)} ms, ratio ${(percentile(b, 0.5) / percentile(a, 0.5)).toFixed(2)}`,
    );
  }
  const p = (values: number[], fraction: number) => percentile(values, fraction).toFixed(2);
  console.log(
    `  exit -> notification, one host (runtime, worker, Redis on one namespace, loopback; ${oneAll.length} commands): p50 ${p(oneAll, 0.5)} ms, p99 ${p(oneAll, 0.99)} ms`,
  );
  console.log(
    `  exit -> notification, across hosts (runtime, worker, Redis on three namespaces through a bridge; ${acrossAll.length} commands): p50 ${p(acrossAll, 0.5)} ms, p99 ${p(acrossAll, 0.99)} ms`,
  );
  console.log(
    `  ratio across / one host: p50 ${(percentile(acrossAll, 0.5) / percentile(oneAll, 0.5)).toFixed(2)}, p99 ${(percentile(acrossAll, 0.99) / percentile(oneAll, 0.99)).toFixed(2)}`,
  );
  await one.close();
  await across.close();
} finally {
  oneHost.destroy();
  acrossHosts.destroy();
}

// (b) the scenarios.
for (const scenario of SCENARIOS) {
  const result = await withLab(scenario.hosts, (lab) => scenario.run(lab, redisServer));
  console.log(`  ${scenario.title}:`);
  for (const line of result.lines) console.log(`    ${line}`);
  console.log(`    counts: ${counts(result.books)}`);
}
console.log(`  load average at end: ${load()}`);
