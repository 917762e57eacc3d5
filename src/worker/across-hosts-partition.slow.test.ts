/**
 * Across hosts (network namespaces on this machine, `test/support/netns-hosts.ts`): a runtime, Redis and
 * two workers each on a host of its own. Worker w1 is cut off from the switch while it runs commands
 * (its frames dropped, its link up): its heartbeat expires, the runtime settles its running tasks `lost`,
 * w2 runs what is started meanwhile; the link heals, w1's late reports change nothing, and w1 takes work
 * again. Every ending is told exactly once, no command runs twice, every status is true; the times to
 * settle and to recover are printed.
 */

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
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
import { startLabRedis } from '../../test/support/netns-redis.js';
import { findRedisServer } from '../../test/support/redis-server.js';

const netns = findNetns();
const redisServer = netns ? findRedisServer() : undefined;
const HEARTBEAT_MS = 200;
const HEARTBEAT_TTL_MS = 1500;
const print = (line: string) => process.stderr.write(`across hosts (partition): ${line}\n`);

function ledgerSize(lab: Lab, host: string): number {
  try {
    return readFileSync(join(lab.host(host).tmp, 'ran.log'), 'utf8')
      .split('\n')
      .filter(Boolean).length;
  } catch {
    return 0;
  }
}

describe.skipIf(redisServer === undefined)('a worker partitioned from Redis, then healed', () => {
  let lab: Lab;
  let runtime: LabRuntime | undefined;

  beforeAll(async () => {
    lab = await createLab(netns!, ['rt', 'redis', 'w1', 'w2']);
  }, 60_000);
  afterAll(async () => {
    await runtime?.close().catch(() => {});
    lab?.destroy();
  });

  it('settles its running tasks lost once, runs nothing twice, and takes work again after the heal', async () => {
    const redis = await startLabRedis(redisServer!, lab.host('redis'));
    const common = {
      url: redis.url,
      prefix: 'part',
      heartbeatMs: HEARTBEAT_MS,
      heartbeatTtlMs: HEARTBEAT_TTL_MS,
    };
    const workers = new Map([
      ['w1', lab.host('w1')],
      ['w2', lab.host('w2')],
    ]);
    const processes: HostProcess[] = [];
    for (const [name, host] of workers)
      processes.push(await startLabWorker(host, { ...common, name, concurrency: 4 }));
    onTestFailed(() => {
      for (const worker of processes) print(`${worker.host} said:\n${worker.output().slice(-3000)}`);
      print(`redis said:\n${redis.process.output().slice(-2000)}`);
    });
    runtime = await startLabRuntime(lab.host('rt'), common);
    const live = runtime;
    const allEnded = () => [...live.tasks.values()].every((id) => live.ends.has(id));
    const allTold = () => [...live.tasks.values()].every((id) => live.told.has(id));

    // 16 commands of 2 s on 2 workers x 4: w1 runs some of them when it is cut off.
    for (let index = 0; index < 16; index += 1) await live.start(`a${index}`, ledgerCommand(`a${index}`, 2));
    await live.until(() => ledgerSize(lab, 'w1') > 0, 60_000, 'w1 runs a command');
    const cutAt = Date.now();
    lab.partition('w1');
    // While it is cut off: more work, which only w2 can take.
    for (let index = 16; index < 24; index += 1)
      await live.start(`a${index}`, ledgerCommand(`a${index}`, 0.2));
    await live.until(
      () => [...live.ends.values()].some((ends) => ends[0]?.status === 'lost'),
      HEARTBEAT_TTL_MS + 30_000,
      'w1 its running tasks lost',
    );
    const lostAfter = Date.now() - cutAt;
    await live.until(allEnded, 120_000, 'every task of the partition ended');
    const healAt = Date.now();
    lab.heal('w1');
    // After the heal w1 takes work again once its connections come back (TCP retransmits, backed off
    // while the link was cut): work keeps coming until w1 runs some of it.
    const before = ledgerSize(lab, 'w1');
    let next = 24;
    while (ledgerSize(lab, 'w1') === before) {
      if (Date.now() - healAt > 90_000) throw new Error('w1 ran nothing within 90 s of the heal');
      await live.start(`a${next}`, ledgerCommand(`a${next}`, 0.5));
      next += 1;
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    const recoveredAfter = Date.now() - healAt;
    await live.until(() => allEnded() && allTold(), 120_000, 'every task ended and told');
    // w1's late reports of its lost tasks (they ran to their end during the partition) changed nothing.
    await new Promise((resolve) => setTimeout(resolve, HEARTBEAT_MS * 5));

    const books = account(live, workers);
    print(describeAccounting(books));
    print(
      `lost settled ${lostAfter} ms after the cut (heartbeat TTL ${HEARTBEAT_TTL_MS} ms); w1 ran a new command ${recoveredAfter} ms after the heal`,
    );
    expect(books.untrue).toEqual([]);
    expect(books.ended).toBe(next);
    expect(books.lost).toBeGreaterThan(0);
    expect(books.duplicatedEnds).toBe(0);
    expect(books.duplicatedTells).toBe(0);
    expect(books.untold).toBe(0);
    expect(books.ranTwice).toBe(0);
    for (const ends of live.ends.values()) if (ends[0]!.status === 'lost') expect(ends[0]!.worker).toBe('w1');
  }, 300_000);
});
