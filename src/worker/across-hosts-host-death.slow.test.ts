/**
 * Across hosts (network namespaces on this machine, `test/support/netns-hosts.ts`): a runtime, Redis and
 * two workers each on a host of its own. Worker w1's host dies mid-command: every process in its
 * namespace — the worker, its lifeline sidecar, the commands — SIGKILLed at once. The runtime settles
 * w1's running tasks `lost` within the heartbeat bound, w2 runs everything else, and a worker started
 * again under the same name on the same host takes work without owning the dead one's jobs. Every
 * ending is told exactly once, no command runs twice, every status is true; the times are printed
 * (`hostDeathScenario`).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createLab, findNetns, type Lab } from '../../test/support/netns-hosts.js';
import { HOST_DEATH_HOSTS, hostDeathScenario } from '../../test/support/netns-scenarios.js';
import { findRedisServer } from '../../test/support/redis-server.js';

const netns = findNetns();
const redisServer = netns ? findRedisServer() : undefined;
const print = (line: string) => process.stderr.write(`across hosts (host death): ${line}\n`);

describe.skipIf(redisServer === undefined)("a worker's whole host SIGKILLed mid-command", () => {
  let lab: Lab | undefined;
  afterAll(() => lab?.destroy());

  it('settles its running tasks lost once, runs nothing twice, and a worker started again takes work', async () => {
    lab = await createLab(netns!, HOST_DEATH_HOSTS);
    const { books, figures, lines } = await hostDeathScenario(lab, redisServer!);
    for (const line of lines) print(line);
    expect(books.untrue).toEqual([]);
    expect(books.ended).toBe(books.started);
    expect(books.duplicatedEnds).toBe(0);
    expect(books.duplicatedTells).toBe(0);
    expect(books.untold).toBe(0);
    expect(books.ranTwice).toBe(0);
    expect(books.lost).toBeGreaterThan(0);
    expect(books.lostOn).toEqual({ w1: books.lost });
    expect(figures.left).toBe(0);
    // The documented bound (the worker's heartbeat TTL plus one runtime check), plus room for a loaded machine.
    expect(figures.lostAfter).toBeLessThanOrEqual(figures.heartbeatTtlMs! + 200 + 10_000);
  }, 400_000);
});
