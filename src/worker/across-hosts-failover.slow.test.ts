/**
 * Across hosts (network namespaces on this machine, `test/support/netns-hosts.ts`): Redis under Sentinel —
 * a primary and a replica on hosts of their own, three sentinels (quorum 2) on three more — and a
 * runtime and two workers that reach it through `redis+sentinel://s1,s2,s3/errand`. The primary is
 * SIGKILLed while commands run; the sentinels promote the replica, and the runtime and the workers
 * follow it: every command started before, during and after ends, is told exactly once, runs once,
 * with its true status, none lost. The times to the promotion and to the first ending through the new
 * primary are printed (`failoverScenario`).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createLab, findNetns, type Lab } from '../../test/support/netns-hosts.js';
import { FAILOVER_HOSTS, failoverScenario } from '../../test/support/netns-scenarios.js';
import { findRedisServer } from '../../test/support/redis-server.js';

const netns = findNetns();
const redisServer = netns ? findRedisServer() : undefined;
const print = (line: string) => process.stderr.write(`across hosts (failover): ${line}\n`);

describe.skipIf(redisServer === undefined)('Redis failover under Sentinel', () => {
  let lab: Lab | undefined;
  afterAll(() => lab?.destroy());

  it('the runtime and the workers follow the promoted replica: nothing lost, told twice or run twice', async () => {
    lab = await createLab(netns!, FAILOVER_HOSTS);
    const { books, figures, lines } = await failoverScenario(lab, redisServer!);
    for (const line of lines) print(line);
    expect(books.untrue).toEqual([]);
    expect(books.ended).toBe(books.started);
    expect(books.duplicatedEnds).toBe(0);
    expect(books.duplicatedTells).toBe(0);
    expect(books.untold).toBe(0);
    expect(books.ranTwice).toBe(0);
    expect(books.lost).toBe(0);
    expect(books.started).toBe(32);
    expect(figures.replicaIsPrimary).toBe(1);
  }, 400_000);
});
