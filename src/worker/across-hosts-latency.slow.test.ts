/**
 * Across hosts (network namespaces on this machine, `test/support/netns-hosts.ts`): a runtime, Redis and
 * two workers each on a host of its own. A burst of remote commands runs on a clean network, then
 * another while Redis's link has 50 ms ± 10 ms of latency and 5% loss each way (`tc netem`, or the
 * user-space shaper on a kernel without it) — every party's traffic crosses it — then the link is
 * cleared and a last burst runs. Every ending of every burst is told exactly once, no command runs
 * twice, every status is true and nothing is lost (the heartbeat TTL outlasts TCP's retransmits);
 * exit → notification of each burst and the time back to clean-network figures are printed
 * (`latencyScenario`).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createLab, findNetns, type Lab } from '../../test/support/netns-hosts.js';
import { LATENCY_HOSTS, latencyScenario } from '../../test/support/netns-scenarios.js';
import { findRedisServer } from '../../test/support/redis-server.js';

const netns = findNetns();
const redisServer = netns ? findRedisServer() : undefined;
const print = (line: string) => process.stderr.write(`across hosts (latency and loss): ${line}\n`);

describe.skipIf(redisServer === undefined)("latency and loss on Redis's link during a burst", () => {
  let lab: Lab | undefined;
  afterAll(() => lab?.destroy());

  it('ends every command of every burst once, told once, run once, none lost', async () => {
    lab = await createLab(netns!, LATENCY_HOSTS);
    const { books, figures, lines } = await latencyScenario(lab, redisServer!);
    for (const line of lines) print(line);
    expect(books.untrue).toEqual([]);
    expect(books.ended).toBe(books.started);
    expect(books.duplicatedEnds).toBe(0);
    expect(books.duplicatedTells).toBe(0);
    expect(books.untold).toBe(0);
    expect(books.ranTwice).toBe(0);
    expect(books.lost).toBe(0);
    expect(books.started).toBe(90);
    expect(figures.impairedP50).toBeGreaterThan(0);
  }, 400_000);
});
