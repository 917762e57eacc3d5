/**
 * Across hosts (network namespaces on this machine, `test/support/netns-hosts.ts`): Redis under Sentinel —
 * a primary and a replica on hosts of their own, three sentinels (quorum 2) on three more — and a
 * runtime and two workers that reach it through `redis+sentinel://s1,s2,s3/errand`. The primary is
 * SIGKILLed while commands run; the sentinels promote the replica, and the runtime and the workers
 * follow it: every command started before, during and after ends, is told exactly once, runs once,
 * with its true status. The times to the promotion and to the first ending through the new primary
 * are printed.
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
import { createLab, findNetns, type HostProcess, type Lab } from '../../test/support/netns-hosts.js';
import {
  type LabSentinel,
  REDIS_PORT,
  SENTINEL_PORT,
  startLabRedis,
  startLabSentinel,
} from '../../test/support/netns-redis.js';
import { findRedisServer } from '../../test/support/redis-server.js';

const netns = findNetns();
const redisServer = netns ? findRedisServer() : undefined;
const HEARTBEAT_MS = 500;
/** Above the failover's length (the sentinels' down-after plus their election), so no worker seems gone. */
const HEARTBEAT_TTL_MS = 10_000;
const DOWN_AFTER_MS = 1000;
const print = (line: string) => process.stderr.write(`across hosts (failover): ${line}\n`);

describe.skipIf(redisServer === undefined)('Redis failover under Sentinel', () => {
  let lab: Lab;
  let runtime: LabRuntime | undefined;

  beforeAll(async () => {
    lab = await createLab(netns!, ['rt', 'ra', 'rb', 's1', 's2', 's3', 'w1', 'w2']);
  }, 60_000);
  afterAll(async () => {
    await runtime?.close().catch(() => {});
    lab?.destroy();
  });

  it('the runtime and the workers follow the promoted replica: nothing lost, told twice or run twice', async () => {
    const primary = await startLabRedis(redisServer!, lab.host('ra'));
    const replica = await startLabRedis(redisServer!, lab.host('rb'), { replicaOf: lab.host('ra') });
    const sentinels: LabSentinel[] = [];
    for (const name of ['s1', 's2', 's3']) {
      sentinels.push(
        await startLabSentinel(redisServer!, lab.host(name), lab.host('ra'), {
          masterName: 'errand',
          quorum: 2,
          downAfterMs: DOWN_AFTER_MS,
        }),
      );
    }
    // Each sentinel knows the other two (they find each other through the primary) before the test goes on.
    for (const sentinel of sentinels)
      await sentinel.process.waitFor(/\+sentinel sentinel[^\n]*\n[\s\S]*\+sentinel sentinel/, 30_000);
    const url = `redis+sentinel://${sentinels.map((sentinel) => `${sentinel.host.address}:${SENTINEL_PORT}`).join(',')}/errand`;
    const common = { url, prefix: 'failover', heartbeatMs: HEARTBEAT_MS, heartbeatTtlMs: HEARTBEAT_TTL_MS };
    const workers = new Map([
      ['w1', lab.host('w1')],
      ['w2', lab.host('w2')],
    ]);
    const processes: HostProcess[] = [];
    for (const [name, host] of workers) {
      processes.push(await startLabWorker(host, { ...common, name, concurrency: 4 }));
    }
    onTestFailed(() => {
      for (const worker of processes) print(`${worker.host} said:\n${worker.output().slice(-3000)}`);
      for (const sentinel of sentinels)
        print(`${sentinel.host.name} said:\n${sentinel.process.output().slice(-1500)}`);
      print(`rb said:\n${replica.process.output().slice(-1500)}`);
    });
    runtime = await startLabRuntime(lab.host('rt'), common);
    const live = runtime;
    const allEnded = () => [...live.tasks.values()].every((id) => live.ends.has(id));
    const allTold = () => [...live.tasks.values()].every((id) => live.told.has(id));

    // Commands of 1.5 s, so some run across the failover; a first few end before it.
    for (let index = 0; index < 16; index += 1)
      await live.start(`f${index}`, ledgerCommand(`f${index}`, 1.5));
    await live.until(() => live.ends.size >= 4, 60_000, 'a first few end through the primary');
    const killedAt = Date.now();
    await primary.process.stop('SIGKILL');
    // Started while the primary is gone: they wait for the new one.
    for (let index = 16; index < 24; index += 1)
      await live.start(`f${index}`, ledgerCommand(`f${index}`, 0.5));
    await sentinels[0]!.process.waitFor(
      new RegExp(
        `\\+switch-master errand ${lab.host('ra').address} ${REDIS_PORT} ${lab.host('rb').address} ${REDIS_PORT}`,
      ),
      60_000,
    );
    const promotedAfter = Date.now() - killedAt;
    const endedBefore = live.ends.size;
    await live.until(() => live.ends.size > endedBefore, 60_000, 'an ending through the new primary');
    const firstEndAfter = Date.now() - killedAt;
    // After the failover, more work through the new primary.
    for (let index = 24; index < 32; index += 1)
      await live.start(`f${index}`, ledgerCommand(`f${index}`, 0.2));
    await live.until(() => allEnded() && allTold(), 120_000, 'every task ended and told');
    const lastEndAfter = Math.max(...[...live.ends.values()].map((ends) => ends[0]!.at)) - killedAt;

    const books = account(live, workers);
    print(describeAccounting(books));
    print(
      `primary SIGKILLed: replica promoted ${promotedAfter} ms after (down-after ${DOWN_AFTER_MS} ms), the first ending through it ${firstEndAfter} ms after, the last ${Math.round(lastEndAfter)} ms after`,
    );
    expect(books.untrue).toEqual([]);
    expect(books.ended).toBe(32);
    expect(books.lost).toBe(0);
    expect(books.duplicatedEnds).toBe(0);
    expect(books.duplicatedTells).toBe(0);
    expect(books.untold).toBe(0);
    expect(books.ranTwice).toBe(0);
    expect(replica.host.exec('redis-cli', ['-p', String(REDIS_PORT), 'role']).split('\n')[0]).toBe('master');
  }, 300_000);
});
