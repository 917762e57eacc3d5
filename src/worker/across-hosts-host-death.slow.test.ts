/**
 * Across hosts (network namespaces on this machine, `test/support/netns-hosts.ts`): a runtime, Redis and
 * two workers each on a host of its own. Worker w1's host dies mid-command: every process in its
 * namespace — the worker, its lifeline sidecar, the commands — SIGKILLed at once. The runtime settles
 * w1's running tasks `lost` within the heartbeat bound, w2 runs everything else, and a worker started
 * again under the same name on the same host takes work without owning the dead one's jobs. Every
 * ending is told exactly once, no command runs twice, every status is true; the times are printed.
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
/** The documented bound (the worker's heartbeat TTL plus one runtime check), plus room for a loaded machine. */
const LOST_BOUND_MS = HEARTBEAT_TTL_MS + HEARTBEAT_MS + 10_000;
const print = (line: string) => process.stderr.write(`across hosts (host death): ${line}\n`);

function ledgerSize(lab: Lab, host: string): number {
  try {
    return readFileSync(join(lab.host(host).tmp, 'ran.log'), 'utf8')
      .split('\n')
      .filter(Boolean).length;
  } catch {
    return 0;
  }
}

describe.skipIf(redisServer === undefined)("a worker's whole host SIGKILLed mid-command", () => {
  let lab: Lab;
  let runtime: LabRuntime | undefined;

  beforeAll(async () => {
    lab = await createLab(netns!, ['rt', 'redis', 'w1', 'w2']);
  }, 60_000);
  afterAll(async () => {
    await runtime?.close().catch(() => {});
    lab?.destroy();
  });

  it('settles its running tasks lost once, runs nothing twice, and a worker started again takes work', async () => {
    const redis = await startLabRedis(redisServer!, lab.host('redis'));
    const common = {
      url: redis.url,
      prefix: 'death',
      heartbeatMs: HEARTBEAT_MS,
      heartbeatTtlMs: HEARTBEAT_TTL_MS,
    };
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
    });
    runtime = await startLabRuntime(lab.host('rt'), common);
    const live = runtime;
    const allEnded = () => [...live.tasks.values()].every((id) => live.ends.has(id));
    const allTold = () => [...live.tasks.values()].every((id) => live.told.has(id));

    for (let index = 0; index < 16; index += 1) await live.start(`d${index}`, ledgerCommand(`d${index}`, 3));
    await live.until(() => ledgerSize(lab, 'w1') > 0, 60_000, 'w1 runs a command');
    const onW1 = lab.processesOn('w1').length;
    const killedAt = Date.now();
    const killed = await lab.killHost('w1');
    expect(lab.processesOn('w1')).toEqual([]);
    await live.until(
      () => [...live.ends.values()].some((ends) => ends[0]?.status === 'lost'),
      LOST_BOUND_MS,
      "w1's running tasks lost",
    );
    const lostAfter = Date.now() - killedAt;
    await live.until(allEnded, 120_000, 'every task started before the death ended');
    const lastEndAfter = Math.max(...[...live.ends.values()].map((ends) => ends[0]!.at)) - killedAt;

    // The host comes back: a worker of the same name, a new instance, on the same host and data directory.
    const restartedAt = Date.now();
    processes.push(await startLabWorker(lab.host('w1'), { ...common, name: 'w1', concurrency: 4 }));
    const before = ledgerSize(lab, 'w1');
    let next = 16;
    while (ledgerSize(lab, 'w1') === before) {
      if (Date.now() - restartedAt > 90_000) throw new Error('the restarted w1 ran nothing within 90 s');
      await live.start(`d${next}`, ledgerCommand(`d${next}`, 0.5));
      next += 1;
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    const backAfter = Date.now() - restartedAt;
    await live.until(() => allEnded() && allTold(), 120_000, 'every task ended and told');

    const books = account(live, workers);
    print(describeAccounting(books));
    print(
      `SIGKILLed ${killed} processes on w1 (${onW1} there); its tasks lost ${lostAfter} ms after (heartbeat TTL ${HEARTBEAT_TTL_MS} ms), the last task started before ended ${Math.round(lastEndAfter)} ms after; a worker started again ran a command ${backAfter} ms after its start`,
    );
    expect(books.untrue).toEqual([]);
    expect(books.ended).toBe(next);
    expect(books.lost).toBeGreaterThan(0);
    expect(books.duplicatedEnds).toBe(0);
    expect(books.duplicatedTells).toBe(0);
    expect(books.untold).toBe(0);
    expect(books.ranTwice).toBe(0);
    for (const ends of live.ends.values()) {
      if (ends[0]!.status !== 'lost') continue;
      expect(ends[0]!.worker).toBe('w1');
      expect(ends[0]!.error).toContain('w1');
    }
  }, 300_000);
});
