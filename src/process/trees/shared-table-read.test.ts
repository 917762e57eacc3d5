import { describe, expect, it } from 'vitest';
import type { ProcessEntry, ProcessSource } from './process-table.js';
import { withSharedTable } from './shared-table-read.js';

function countingSource(): ProcessSource & { listings: number; reads: number } {
  const entry = (pid: number): ProcessEntry =>
    ({ pid, ppid: 1, pgid: pid, sid: pid, startTime: 10, state: 'S' }) as ProcessEntry;
  const source = {
    listings: 0,
    reads: 0,
    listPids() {
      source.listings += 1;
      return [1, 2, 3];
    },
    read(pid: number) {
      source.reads += 1;
      return entry(pid);
    },
    environmentValue: () => undefined,
    lastPid: () => 3,
    clockTicks: () => 100,
  };
  return source;
}

/** Time stands still: every call after the first comes within the burst window. */
const frozenClock = () => 1000;

const readAll = (table: ProcessSource) => {
  for (const pid of table.listPids()) table.read(pid);
};

describe('withSharedTable', () => {
  it('reads at once when quiet, and lets the sweeps of a burst share the next reading', async () => {
    const source = countingSource();
    const order: string[] = [];
    withSharedTable(
      source,
      (table) => {
        expect(table).toBe(source);
        readAll(table);
        order.push('first');
      },
      frozenClock,
    );
    expect(order).toEqual(['first']);
    const shared = new Set<ProcessSource>();
    const batch = Array.from({ length: 50 }, (_, index) => {
      return new Promise<void>((resolve) => {
        withSharedTable(
          source,
          (table) => {
            shared.add(table);
            readAll(table);
            order.push(`burst ${index}`);
            resolve();
          },
          frozenClock,
        );
      });
    });
    // A burst waits for the next turn of the event loop.
    expect(order).toEqual(['first']);
    await Promise.all(batch);
    expect(shared.size).toBe(1);
    expect(shared.has(source)).toBe(false);
    // One listing and three reads for the first sweep, one of each for all fifty of the burst.
    expect(source.listings).toBe(2);
    expect(source.reads).toBe(6);
  });

  it('a caller that throws does not keep the others of its burst from running', async () => {
    const source = countingSource();
    withSharedTable(source, readAll, frozenClock);
    const ran: number[] = [];
    await new Promise<void>((resolve) => {
      withSharedTable(
        source,
        () => {
          throw new Error('boom');
        },
        frozenClock,
      );
      withSharedTable(
        source,
        () => {
          ran.push(2);
          resolve();
        },
        frozenClock,
      );
    });
    expect(ran).toEqual([2]);
  });
});
