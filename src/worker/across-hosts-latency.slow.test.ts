/**
 * Across hosts (network namespaces on this machine, `test/support/netns-hosts.ts`): a runtime, Redis and
 * two workers each on a host of its own. A burst of remote commands runs on a clean network, then
 * another while Redis's link has 50 ms ± 10 ms of latency and 5% loss each way (`tc netem`, or the
 * user-space shaper on a kernel without it) — every party's traffic crosses it — then the link is
 * cleared and a last burst runs. Every ending of every burst is told exactly once, no command runs
 * twice, every status is true and nothing is lost (the heartbeat TTL outlasts TCP's retransmits); exit →
 * notification for each burst and the time back to clean-network figures are printed.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import {
  account,
  describeAccounting,
  type LabRuntime,
  ledgerCommand,
  startLabRuntime,
  startLabWorker,
} from '../../test/support/netns-errand.js';
import {
  createLab,
  findNetns,
  type HostProcess,
  type Impairment,
  type Lab,
} from '../../test/support/netns-hosts.js';
import { startLabRedis } from '../../test/support/netns-redis.js';
import { findRedisServer } from '../../test/support/redis-server.js';

const netns = findNetns();
const redisServer = netns ? findRedisServer() : undefined;
const HEARTBEAT_MS = 1000;
const HEARTBEAT_TTL_MS = 5000;
const BURST = 30;
const IMPAIRMENT: Impairment = { delayMs: 50, jitterMs: 10, lossPercent: 5 };
const print = (line: string) => process.stderr.write(`across hosts (latency and loss): ${line}\n`);

function percentile(values: readonly number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? Number.NaN;
}

describe.skipIf(redisServer === undefined)("latency and loss on Redis's link during a burst", () => {
  let lab: Lab;
  let runtime: LabRuntime | undefined;

  beforeAll(async () => {
    lab = await createLab(netns!, ['rt', 'redis', 'w1', 'w2']);
  }, 60_000);
  afterAll(async () => {
    await runtime?.close().catch(() => {});
    lab?.destroy();
  });

  it('ends every command of the burst once, told once, run once, none lost', async () => {
    const redis = await startLabRedis(redisServer!, lab.host('redis'));
    const common = {
      url: redis.url,
      prefix: 'netem',
      heartbeatMs: HEARTBEAT_MS,
      heartbeatTtlMs: HEARTBEAT_TTL_MS,
    };
    const workers = new Map([
      ['w1', lab.host('w1')],
      ['w2', lab.host('w2')],
    ]);
    const processes: HostProcess[] = [];
    for (const [name, host] of workers) {
      processes.push(await startLabWorker(host, { ...common, name, concurrency: 8 }));
    }
    onTestFailed(() => {
      for (const worker of processes) print(`${worker.host} said:\n${worker.output().slice(-3000)}`);
    });
    runtime = await startLabRuntime(lab.host('rt'), common);
    const live = runtime;
    let next = 0;
    /** Starts BURST commands at once and resolves with their exit → notification times, once all are told. */
    const burst = async (seconds: number): Promise<{ latencies: number[]; ms: number }> => {
      const startedAt = Date.now();
      const keys: string[] = [];
      const starts: Promise<string>[] = [];
      for (let index = 0; index < BURST; index += 1) {
        const key = `l${next}`;
        next += 1;
        keys.push(key);
        starts.push(live.start(key, ledgerCommand(key, seconds)));
      }
      const ids = await Promise.all(starts);
      await live.until(
        () => ids.every((id) => live.told.has(id)),
        180_000,
        'every command of the burst told',
      );
      const latencies = ids.map((id) => {
        const tell = live.told.get(id)![0]!;
        return tell.stamp === null ? Number.NaN : tell.at - tell.stamp;
      });
      return { latencies, ms: Date.now() - startedAt };
    };
    const line = (what: string, result: { latencies: number[]; ms: number }) =>
      `${what}: ${BURST} commands in ${result.ms} ms; exit → notification p50 ${percentile(result.latencies, 0.5).toFixed(1)} ms, p99 ${percentile(result.latencies, 0.99).toFixed(1)} ms`;

    const clean = await burst(0.2);
    await lab.impair('redis', IMPAIRMENT);
    const impaired = await burst(0.2);
    const clearedAt = Date.now();
    await lab.unimpair('redis');
    const after = await burst(0.2);
    const recoveredAfter = Date.now() - clearedAt;
    await live.until(
      () => [...live.tasks.values()].every((id) => live.ends.has(id) && live.told.has(id)),
      60_000,
      'every task ended and told',
    );

    const books = account(live, workers);
    print(describeAccounting(books));
    print(
      `${lab.ability.netem ? 'tc netem' : 'the user-space shaper (no sch_netem here)'}: ${IMPAIRMENT.delayMs} ms ± ${IMPAIRMENT.jitterMs} ms, ${IMPAIRMENT.lossPercent}% loss each way on Redis's link`,
    );
    print(line('clean network', clean));
    print(line('impaired', impaired));
    print(`${line('cleared', after)} (the burst after clearing told in ${recoveredAfter} ms)`);
    expect(books.untrue).toEqual([]);
    expect(books.ended).toBe(3 * BURST);
    expect(books.lost).toBe(0);
    expect(books.duplicatedEnds).toBe(0);
    expect(books.duplicatedTells).toBe(0);
    expect(books.untold).toBe(0);
    expect(books.ranTwice).toBe(0);
  }, 400_000);
});
