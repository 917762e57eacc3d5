/**
 * Across hosts: network namespaces on this machine as hosts (`test/support/netns-hosts.ts`) — a runtime,
 * Redis (or a Sentinel group) and two workers, each on a host of its own with its own file system view
 * and HOME. Each scenario (`test/support/netns-scenarios.ts`) runs on a lab of its own and is judged by
 * its books, per ending: told exactly once, ended once, no command run twice (every worker's ledger),
 * the status true (exit codes and workers as they were; lost only where a worker was cut off or died,
 * and run at most once there). The times to recover are printed.
 *
 * - a worker cut off from the switch (its frames dropped, its link up) for 300 ms while it runs
 *   commands (nothing lost), then for good: its running tasks `lost`, the rest on the other worker,
 *   and after the heal it takes work again;
 * - 50 ms ± 10 ms and 5% loss each way on Redis's link during a burst (`tc netem`, or the user-space
 *   shaper on a kernel without it): nothing lost;
 * - a worker's whole host SIGKILLed mid-command (the worker, its lifeline, the commands): its running
 *   tasks `lost` within the heartbeat bound; a worker started again under its name takes work;
 * - the Redis primary SIGKILLed under Sentinel (a replica, three sentinels, quorum 2): the replica is
 *   promoted, the runtime and the workers follow it through `redis+sentinel://`, nothing lost.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Accounting } from '../../test/support/netns-errand.js';
import { createLab, findNetns, type Lab } from '../../test/support/netns-hosts.js';
import {
  FAILOVER_HOSTS,
  failoverScenario,
  HOST_DEATH_HOSTS,
  hostDeathScenario,
  LATENCY_HOSTS,
  latencyScenario,
  PARTITION_HOSTS,
  partitionScenario,
  type ScenarioResult,
} from '../../test/support/netns-scenarios.js';
import { findRedisServer } from '../../test/support/redis-server.js';

const netns = findNetns();
const redisServer = netns ? findRedisServer() : undefined;

/** Every ending told once and ended once, nothing run twice, every status true. */
function expectHonest(books: Accounting): void {
  expect(books.untrue).toEqual([]);
  expect(books.ended).toBe(books.started);
  expect(books.duplicatedEnds).toBe(0);
  expect(books.duplicatedTells).toBe(0);
  expect(books.untold).toBe(0);
  expect(books.ranTwice).toBe(0);
}

describe.skipIf(redisServer === undefined)('across hosts', () => {
  let lab: Lab | undefined;
  afterEach(() => {
    lab?.destroy();
    lab = undefined;
  });

  const run = async (
    what: string,
    hosts: readonly string[],
    scenario: (lab: Lab, redisServer: string) => Promise<ScenarioResult>,
  ): Promise<ScenarioResult> => {
    lab = await createLab(netns!, hosts);
    const result = await scenario(lab, redisServer!);
    for (const line of result.lines) process.stderr.write(`across hosts (${what}): ${line}\n`);
    return result;
  };

  it('a worker partitioned from Redis: its running tasks lost once, nothing run twice, it takes work after the heal', async () => {
    const { books, figures } = await run('partition', PARTITION_HOSTS, partitionScenario);
    expectHonest(books);
    // A cut shorter than the heartbeat TTL loses nothing; after the long one only w1's tasks are lost.
    expect(figures.shortLost).toBe(0);
    expect(books.lost).toBeGreaterThan(0);
    expect(books.lostOn).toEqual({ w1: books.lost });
  }, 400_000);

  it("latency and loss on Redis's link during a burst: every command ends once, told once, run once, none lost", async () => {
    const { books } = await run('latency and loss', LATENCY_HOSTS, (lab, server) =>
      latencyScenario(lab, server),
    );
    expectHonest(books);
    expect(books.started).toBe(90);
    expect(books.lost).toBe(0);
  }, 400_000);

  it("a worker's whole host SIGKILLed mid-command: its tasks lost once within the bound, a worker started again takes work", async () => {
    const { books, figures } = await run('host death', HOST_DEATH_HOSTS, hostDeathScenario);
    expectHonest(books);
    expect(books.lost).toBeGreaterThan(0);
    expect(books.lostOn).toEqual({ w1: books.lost });
    expect(figures.left).toBe(0);
    // The documented bound (the worker's heartbeat TTL plus one runtime check), plus room for a loaded machine.
    expect(figures.lostAfter).toBeLessThanOrEqual(figures.heartbeatTtlMs! + 200 + 10_000);
  }, 400_000);

  it('a Redis failover under Sentinel: the runtime and the workers follow the promoted replica, nothing lost', async () => {
    const { books, figures } = await run('failover', FAILOVER_HOSTS, failoverScenario);
    expectHonest(books);
    expect(books.started).toBe(32);
    expect(books.lost).toBe(0);
    expect(figures.replicaIsPrimary).toBe(1);
  }, 400_000);
});
