/**
 * Across hosts (network namespaces on this machine, `test/support/netns-hosts.ts`): a runtime, Redis and
 * two workers each on a host of its own. Worker w1 is cut off from the switch (its frames dropped, its
 * link up) for 300 ms while it runs commands: nothing is lost. Then for good: its heartbeat expires, the runtime settles its running tasks `lost`,
 * w2 runs what is started meanwhile; the link heals, w1's late reports change nothing, and w1 takes work
 * again. Every ending is told exactly once, no command runs twice, every status is true; the times to
 * settle and to recover are printed (`partitionScenario`).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createLab, findNetns, type Lab } from '../../test/support/netns-hosts.js';
import { PARTITION_HOSTS, partitionScenario } from '../../test/support/netns-scenarios.js';
import { findRedisServer } from '../../test/support/redis-server.js';

const netns = findNetns();
const redisServer = netns ? findRedisServer() : undefined;
const print = (line: string) => process.stderr.write(`across hosts (partition): ${line}\n`);

describe.skipIf(redisServer === undefined)('a worker partitioned from Redis, then healed', () => {
  let lab: Lab | undefined;
  afterAll(() => lab?.destroy());

  it('settles its running tasks lost once, runs nothing twice, and takes work again after the heal', async () => {
    lab = await createLab(netns!, PARTITION_HOSTS);
    const { books, figures, lines } = await partitionScenario(lab, redisServer!);
    for (const line of lines) print(line);
    expect(books.untrue).toEqual([]);
    expect(books.ended).toBe(books.started);
    expect(books.duplicatedEnds).toBe(0);
    expect(books.duplicatedTells).toBe(0);
    expect(books.untold).toBe(0);
    expect(books.ranTwice).toBe(0);
    // A cut shorter than the heartbeat TTL loses nothing; after the long one only w1's tasks are lost.
    expect(figures.shortLost).toBe(0);
    expect(books.lost).toBeGreaterThan(0);
    expect(books.lostOn).toEqual({ w1: books.lost });
    expect(figures.recoveredAfter).toBeGreaterThan(0);
  }, 400_000);
});
