/**
 * What happens to a deployment across hosts (`netns-hosts.ts`), as scenarios the across-hosts suites
 * assert on and `bench:scale-hosts` prints: a worker partitioned from Redis and healed, latency and loss
 * on Redis's link during bursts, a worker's whole host SIGKILLed, a Redis failover under Sentinel, and
 * plain exit → notification latency. Each runs on a lab its caller made with the scenario's hosts (and
 * destroys), and answers its books (`account`), its figures in ms and the lines that describe them. A
 * scenario that fails says what the workers (and sentinels) printed.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  type Accounting,
  account,
  describeAccounting,
  type LabRuntime,
  ledgerCommand,
  startLabRuntime,
  startLabWorker,
} from './netns-errand.js';
import type { HostProcess, Impairment, Lab } from './netns-hosts.js';
import {
  type LabSentinel,
  REDIS_PORT,
  SENTINEL_PORT,
  startLabRedis,
  startLabSentinel,
} from './netns-redis.js';

export interface ScenarioResult {
  readonly books: Accounting;
  /** Named figures, in ms (or counts where the name says so). */
  readonly figures: Readonly<Record<string, number>>;
  readonly lines: readonly string[];
}

export const PARTITION_HOSTS = ['rt', 'redis', 'w1', 'w2'] as const;
export const LATENCY_HOSTS = ['rt', 'redis', 'w1', 'w2'] as const;
export const HOST_DEATH_HOSTS = ['rt', 'redis', 'w1', 'w2'] as const;
export const FAILOVER_HOSTS = ['rt', 'ra', 'rb', 's1', 's2', 's3', 'w1', 'w2'] as const;

export const NETEM: Impairment = { delayMs: 50, jitterMs: 10, lossPercent: 5 };

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function percentile(values: readonly number[], fraction: number): number {
  const sorted = values.filter((value) => Number.isFinite(value)).sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? Number.NaN;
}

function ledgerSize(lab: Lab, host: string): number {
  try {
    return readFileSync(join(lab.host(host).tmp, 'ran.log'), 'utf8')
      .split('\n')
      .filter(Boolean).length;
  } catch {
    return 0;
  }
}

interface Deployment {
  readonly runtime: LabRuntime;
  readonly workers: ReadonlyMap<string, ReturnType<Lab['host']>>;
  readonly processes: HostProcess[];
  readonly common: { url: string; prefix: string; heartbeatMs: number; heartbeatTtlMs: number };
}

/** Runs `body`; a failure carries the tail of what `processes` printed. */
async function explained<T>(processes: readonly HostProcess[], body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (error) {
    const said = processes
      .map((process) => `--- ${process.host} said:\n${process.output().slice(-2500)}`)
      .join('\n');
    if (error instanceof Error) error.message = `${error.message}\n${said}`;
    throw error;
  }
}

/**
 * Workers w1 and w2 (each `concurrency`) and a runtime on `rt`, all on `common.url`, then `body` on
 * them; a failure carries what the workers and `also` (sentinels, replicas) printed.
 */
async function deployed<T>(
  lab: Lab,
  common: Deployment['common'],
  concurrency: number,
  body: (deployment: Deployment) => Promise<T>,
  also: readonly HostProcess[] = [],
): Promise<T> {
  const processes: HostProcess[] = [...also];
  return explained(processes, async () => {
    const workers = new Map(['w1', 'w2'].map((name) => [name, lab.host(name)] as const));
    for (const [name, host] of workers) {
      processes.push(await startLabWorker(host, { ...common, name, concurrency }));
    }
    const runtime = await startLabRuntime(lab.host('rt'), common);
    return body({ runtime, workers, processes, common });
  });
}

const allEnded = (runtime: LabRuntime) => [...runtime.tasks.values()].every((id) => runtime.ends.has(id));
const allTold = (runtime: LabRuntime) => [...runtime.tasks.values()].every((id) => runtime.told.has(id));
/** Whether a task whose key starts with `prefix` ended `lost`. */
const anyLost = (runtime: LabRuntime, prefix: string) =>
  [...runtime.tasks].some(
    ([key, id]) => key.startsWith(prefix) && runtime.ends.get(id)?.[0]?.status === 'lost',
  );

/** Starts `count` commands `<prefix><from…>` of `seconds` and resolves once w1 runs one of them. */
async function startWhileW1Runs(
  lab: Lab,
  runtime: LabRuntime,
  keys: { readonly prefix: string; readonly from: number; readonly count: number; readonly seconds: number },
): Promise<void> {
  const before = ledgerSize(lab, 'w1');
  for (let index = keys.from; index < keys.from + keys.count; index += 1) {
    await runtime.start(`${keys.prefix}${index}`, ledgerCommand(`${keys.prefix}${index}`, keys.seconds));
  }
  await runtime.until(() => ledgerSize(lab, 'w1') > before, 60_000, 'w1 runs a command');
}

/** Starts `seconds`-long commands on `runtime` every 150 ms until `worker`'s ledger grows; resolves with how many. */
async function feedUntilRuns(
  lab: Lab,
  runtime: LabRuntime,
  worker: string,
  prefix: string,
  from: number,
  limitMs: number,
): Promise<number> {
  const began = Date.now();
  const before = ledgerSize(lab, worker);
  let next = from;
  while (ledgerSize(lab, worker) === before) {
    if (Date.now() - began > limitMs) throw new Error(`${worker} ran nothing within ${limitMs} ms`);
    await runtime.start(`${prefix}${next}`, ledgerCommand(`${prefix}${next}`, 0.5));
    next += 1;
    await pause(150);
  }
  return next;
}

/**
 * w1 is cut off twice while it runs commands. First for `shortCutMs` (300 ms: well under the heartbeat
 * TTL, so its writes wait in TCP and arrive after the heal): nothing is lost. Then for good while it
 * runs 2 s commands (two workers x 4): its tasks are lost, more work comes meanwhile, the link heals,
 * and work keeps coming until w1 runs some again. Heartbeat 250 ms, TTL 3000 ms.
 */
export async function partitionScenario(lab: Lab, redisServer: string): Promise<ScenarioResult> {
  const shortCutMs = 300;
  const redis = await startLabRedis(redisServer, lab.host('redis'));
  const common = { url: redis.url, prefix: 'part', heartbeatMs: 250, heartbeatTtlMs: 3000 };
  return deployed(lab, common, 4, async (deployment) => {
    const { runtime } = deployment;
    // The short cut.
    await startWhileW1Runs(lab, runtime, { prefix: 'b', from: 0, count: 8, seconds: 1 });
    const shortAt = Date.now();
    lab.partition('w1');
    await pause(shortCutMs);
    lab.heal('w1');
    await runtime.until(() => allEnded(runtime), 120_000, 'every task of the short cut ended');
    const shortEndedAfter = Date.now() - shortAt;
    const shortLost = [...runtime.ends.values()].filter((ends) => ends[0]?.status === 'lost').length;
    // The long one.
    await startWhileW1Runs(lab, runtime, { prefix: 'a', from: 0, count: 16, seconds: 2 });
    const cutAt = Date.now();
    lab.partition('w1');
    for (let index = 16; index < 24; index += 1) {
      await runtime.start(`a${index}`, ledgerCommand(`a${index}`, 0.2));
    }
    await runtime.until(
      () => anyLost(runtime, 'a'),
      common.heartbeatTtlMs + 30_000,
      "w1's running tasks lost",
    );
    const lostAfter = Date.now() - cutAt;
    await runtime.until(() => allEnded(runtime), 120_000, 'every task of the partition ended');
    const healAt = Date.now();
    lab.heal('w1');
    // w1 comes back once its connections do (TCP retransmits, backed off while the link was cut).
    await feedUntilRuns(lab, runtime, 'w1', 'a', 24, 90_000);
    const recoveredAfter = Date.now() - healAt;
    await runtime.until(() => allEnded(runtime) && allTold(runtime), 120_000, 'every task ended and told');
    // w1's late reports of the tasks it ran through the partition have arrived, and changed nothing.
    await pause(1000);
    const books = account(runtime, deployment.workers);
    return {
      books,
      figures: {
        shortCutMs,
        shortLost,
        shortEndedAfter,
        lostAfter,
        recoveredAfter,
        heartbeatTtlMs: common.heartbeatTtlMs,
      },
      lines: [
        describeAccounting(books),
        `a ${shortCutMs} ms cut while w1 ran commands: ${shortLost} lost, the 8 commands all ended ${shortEndedAfter} ms after the cut`,
        `a cut for good: w1's running tasks lost ${lostAfter} ms after it (heartbeat TTL ${common.heartbeatTtlMs} ms); after the heal w1 ran a new command ${recoveredAfter} ms later`,
      ],
    };
  });
}

/** Exit → notification of each command of `ids`, once all are told, in ms. */
function latenciesOf(runtime: LabRuntime, ids: readonly string[]): number[] {
  return ids.map((id) => {
    const tell = runtime.told.get(id)![0]!;
    return tell.stamp === null ? Number.NaN : tell.at - tell.stamp;
  });
}

/**
 * Bursts of `burst` commands (0.2 s) on a clean network, with `impairment` on Redis's link (every party's
 * traffic crosses it), and after it is cleared. Heartbeat 1000 ms, TTL 5000 ms.
 */
export async function latencyScenario(
  lab: Lab,
  redisServer: string,
  options: { readonly burst?: number; readonly impairment?: Impairment } = {},
): Promise<ScenarioResult> {
  const size = options.burst ?? 30;
  const impairment = options.impairment ?? NETEM;
  const redis = await startLabRedis(redisServer, lab.host('redis'));
  const common = { url: redis.url, prefix: 'netem', heartbeatMs: 1000, heartbeatTtlMs: 5000 };
  return deployed(lab, common, 8, async (deployment) => {
    const { runtime } = deployment;
    let next = 0;
    const burst = async () => {
      const startedAt = Date.now();
      const starts: Promise<string>[] = [];
      for (let index = 0; index < size; index += 1) {
        const key = `l${next}`;
        next += 1;
        starts.push(runtime.start(key, ledgerCommand(key, 0.2)));
      }
      const ids = await Promise.all(starts);
      await runtime.until(
        () => ids.every((id) => runtime.told.has(id)),
        180_000,
        'every command of a burst told',
      );
      return { latencies: latenciesOf(runtime, ids), ms: Date.now() - startedAt };
    };
    const clean = await burst();
    await lab.impair('redis', impairment);
    const impaired = await burst();
    const clearedAt = Date.now();
    await lab.unimpair('redis');
    const after = await burst();
    const recoveredAfter = Date.now() - clearedAt;
    await runtime.until(() => allEnded(runtime) && allTold(runtime), 60_000, 'every task ended and told');
    const books = account(runtime, deployment.workers);
    const line = (what: string, result: { latencies: number[]; ms: number }) =>
      `${what}: ${size} commands in ${result.ms} ms; exit → notification p50 ${percentile(result.latencies, 0.5).toFixed(1)} ms, p99 ${percentile(result.latencies, 0.99).toFixed(1)} ms`;
    return {
      books,
      figures: {
        cleanP50: percentile(clean.latencies, 0.5),
        cleanP99: percentile(clean.latencies, 0.99),
        impairedP50: percentile(impaired.latencies, 0.5),
        impairedP99: percentile(impaired.latencies, 0.99),
        clearedP50: percentile(after.latencies, 0.5),
        cleanBurstMs: clean.ms,
        impairedBurstMs: impaired.ms,
        recoveredAfter,
      },
      lines: [
        describeAccounting(books),
        `${lab.ability.netem ? 'tc netem' : 'the user-space shaper (no sch_netem here)'}: ${impairment.delayMs} ms ± ${impairment.jitterMs ?? 0} ms, ${impairment.lossPercent ?? 0}% loss each way on Redis's link`,
        line('clean network', clean),
        line('impaired', impaired),
        `${line('cleared', after)} (that burst told ${recoveredAfter} ms after the clearing)`,
      ],
    };
  });
}

/**
 * w1's host dies whole (every process SIGKILLed) while it runs commands (16 of 3 s); a worker of the same
 * name is started again there and work keeps coming until it runs some. Heartbeat 200 ms, TTL 1500 ms.
 */
export async function hostDeathScenario(lab: Lab, redisServer: string): Promise<ScenarioResult> {
  const redis = await startLabRedis(redisServer, lab.host('redis'));
  const common = { url: redis.url, prefix: 'death', heartbeatMs: 200, heartbeatTtlMs: 1500 };
  return deployed(lab, common, 4, async (deployment) => {
    const { runtime } = deployment;
    await startWhileW1Runs(lab, runtime, { prefix: 'd', from: 0, count: 16, seconds: 3 });
    const there = lab.processesOn('w1').length;
    const killedAt = Date.now();
    const killed = await lab.killHost('w1');
    const left = lab.processesOn('w1').length;
    await runtime.until(
      () => anyLost(runtime, 'd'),
      common.heartbeatTtlMs + 30_000,
      "w1's running tasks lost",
    );
    const lostAfter = Date.now() - killedAt;
    await runtime.until(() => allEnded(runtime), 120_000, 'every task started before the death ended');
    const restartedAt = Date.now();
    deployment.processes.push(
      await startLabWorker(lab.host('w1'), { ...common, name: 'w1', concurrency: 4 }),
    );
    await feedUntilRuns(lab, runtime, 'w1', 'd', 16, 90_000);
    const backAfter = Date.now() - restartedAt;
    await runtime.until(() => allEnded(runtime) && allTold(runtime), 120_000, 'every task ended and told');
    const books = account(runtime, deployment.workers);
    return {
      books,
      figures: { killed, there, left, lostAfter, backAfter, heartbeatTtlMs: common.heartbeatTtlMs },
      lines: [
        describeAccounting(books),
        `SIGKILL to every process on w1 (${there} there, ${killed} signals sent, ${left} left); its tasks lost ${lostAfter} ms after (heartbeat TTL ${common.heartbeatTtlMs} ms); a worker started again there ran a command ${backAfter} ms after its start`,
      ],
    };
  });
}

/**
 * Redis under Sentinel: a primary on `ra`, its replica on `rb`, sentinels on s1–s3 (quorum 2, down after
 * 1 s), runtime and workers on `redis+sentinel://s1,s2,s3/errand`. The primary is SIGKILLed while
 * commands run (16 of 1.5 s), 8 more are started while it is gone and 8 after the promotion.
 * Heartbeat 500 ms, TTL 30 s (far above the failover's length, even on a loaded machine).
 */
export async function failoverScenario(lab: Lab, redisServer: string): Promise<ScenarioResult> {
  const downAfterMs = 1000;
  const primary = await startLabRedis(redisServer, lab.host('ra'));
  const replica = await startLabRedis(redisServer, lab.host('rb'), { replicaOf: lab.host('ra') });
  const sentinels: LabSentinel[] = [];
  for (const name of ['s1', 's2', 's3']) {
    sentinels.push(
      await startLabSentinel(redisServer, lab.host(name), lab.host('ra'), {
        masterName: 'errand',
        quorum: 2,
        downAfterMs,
      }),
    );
  }
  // Each sentinel knows the other two (they find each other through the primary) before it goes on.
  for (const sentinel of sentinels) {
    await sentinel.process.waitFor(/\+sentinel sentinel[^\n]*\n[\s\S]*\+sentinel sentinel/, 30_000);
  }
  const url = `redis+sentinel://${sentinels.map((sentinel) => `${sentinel.host.address}:${SENTINEL_PORT}`).join(',')}/errand`;
  const common = { url, prefix: 'failover', heartbeatMs: 500, heartbeatTtlMs: 30_000 };
  return deployed(
    lab,
    common,
    4,
    async (deployment) => {
      const { runtime } = deployment;
      for (let index = 0; index < 16; index += 1)
        await runtime.start(`f${index}`, ledgerCommand(`f${index}`, 1.5));
      await runtime.until(() => runtime.ends.size >= 4, 60_000, 'a first few end through the primary');
      const killedAt = Date.now();
      await primary.process.stop('SIGKILL');
      for (let index = 16; index < 24; index += 1)
        await runtime.start(`f${index}`, ledgerCommand(`f${index}`, 0.5));
      const switched = new RegExp(
        `\\+switch-master errand ${lab.host('ra').address} ${REDIS_PORT} ${lab.host('rb').address} ${REDIS_PORT}`,
      );
      await sentinels[0]!.process.waitFor(switched, 60_000);
      const promotedAfter = Date.now() - killedAt;
      const endedBefore = runtime.ends.size;
      await runtime.until(() => runtime.ends.size > endedBefore, 60_000, 'an ending through the new primary');
      const firstEndAfter = Date.now() - killedAt;
      for (let index = 24; index < 32; index += 1)
        await runtime.start(`f${index}`, ledgerCommand(`f${index}`, 0.2));
      await runtime.until(() => allEnded(runtime) && allTold(runtime), 120_000, 'every task ended and told');
      const lastEndAfter = Math.max(...[...runtime.ends.values()].map((ends) => ends[0]!.at)) - killedAt;
      const role = replica.host.exec('redis-cli', ['-p', String(REDIS_PORT), 'role']).split('\n')[0] ?? '';
      const books = account(runtime, deployment.workers);
      return {
        books,
        figures: {
          promotedAfter,
          firstEndAfter,
          lastEndAfter,
          downAfterMs,
          replicaIsPrimary: role === 'master' ? 1 : 0,
        },
        lines: [
          describeAccounting(books),
          `primary SIGKILLed: replica promoted ${promotedAfter} ms after (down-after ${downAfterMs} ms), the first ending through it ${firstEndAfter} ms after, the last ${Math.round(lastEndAfter)} ms after; the replica's role now: ${role}`,
          // Why a task was lost in a failover is worth the workers' own words.
          ...(books.lost > 0
            ? deployment.processes.map((worker) => `${worker.host} said: ${worker.output().slice(-2000)}`)
            : []),
        ],
      };
    },
    [...sentinels.map((sentinel) => sentinel.process), replica.process],
  );
}

/**
 * Exit → notification, one command at a time (`count` of them), for a runtime on `runtimeHost`, a
 * worker on `workerHost` and Redis on `redisHost` (all three the same host for the one-host baseline).
 */
export async function exitLatency(
  lab: Lab,
  redisServer: string,
  hosts: { readonly runtime: string; readonly worker: string; readonly redis: string },
  count: number,
  prefix: string,
): Promise<{ latencies: number[]; close(): Promise<void>; again(count: number): Promise<number[]> }> {
  const redis = await startLabRedis(redisServer, lab.host(hosts.redis));
  // On one host everything reaches Redis over loopback; across hosts over the switch.
  const url =
    hosts.redis === hosts.runtime && hosts.redis === hosts.worker ? 'redis://127.0.0.1:6379' : redis.url;
  const common = { url, prefix, heartbeatMs: 1000, heartbeatTtlMs: 5000 };
  const worker = await startLabWorker(lab.host(hosts.worker), {
    ...common,
    name: `${prefix}-w`,
    concurrency: 8,
  });
  const runtime = await startLabRuntime(lab.host(hosts.runtime), common);
  let next = 0;
  const run = async (n: number) => {
    const ids: string[] = [];
    for (let index = 0; index < n; index += 1) {
      const key = `${prefix}${next}`;
      next += 1;
      const id = await runtime.start(key, `echo ran ${key}; echo STAMP $(date +%s%N)`);
      await runtime.until(() => runtime.told.has(id), 60_000, `${key} told`);
      ids.push(id);
    }
    return latenciesOf(runtime, ids);
  };
  const latencies = await explained([worker], () => run(count));
  return {
    latencies,
    again: (n) => explained([worker], () => run(n)),
    async close() {
      await runtime.close();
      await worker.stop();
    },
  };
}

/** The scenarios in the order `bench:scale-hosts` runs them: a title, the lab's hosts, the run. */
export const SCENARIOS: ReadonlyArray<{
  readonly title: string;
  readonly hosts: readonly string[];
  readonly run: (lab: Lab, redisServer: string) => Promise<ScenarioResult>;
}> = [
  {
    title: 'partition (w1 cut off from the switch while it runs commands, then healed)',
    hosts: PARTITION_HOSTS,
    run: partitionScenario,
  },
  {
    title: "latency and loss (50 ms ± 10 ms, 5% each way on Redis's link, bursts of 30)",
    hosts: LATENCY_HOSTS,
    run: (lab, redisServer) => latencyScenario(lab, redisServer),
  },
  {
    title: "host death (every process on w1's host SIGKILLed mid-command, a worker started again)",
    hosts: HOST_DEATH_HOSTS,
    run: hostDeathScenario,
  },
  {
    title: 'Redis failover (Sentinel: primary SIGKILLed, replica promoted)',
    hosts: FAILOVER_HOSTS,
    run: failoverScenario,
  },
];
