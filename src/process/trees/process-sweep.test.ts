import { describe, expect, it } from 'vitest';
import { capturingLogger } from '../../../test/fixtures/bash/index.js';
import { createManualClock } from '../../tasks/clock.js';
import { ProcessSweep } from './process-sweep.js';
import type { ProcessEntry } from './process-table.js';

function entry(pid: number, startTime: number): ProcessEntry {
  return { pid, ppid: 1, pgid: pid, sid: pid, startTime, state: 'S' };
}

/** A table that obeys signals: SIGKILL kills, SIGTERM kills unless the pid ignores it. */
function system(entries: ProcessEntry[], ignoresTerm: number[] = []) {
  const alive = new Map(entries.map((candidate) => [candidate.pid, candidate]));
  const signals: Array<[number, string]> = [];
  return {
    alive,
    signals,
    census: () => [...alive.values()],
    sendSignal(pid: number, signal: NodeJS.Signals) {
      signals.push([pid, signal]);
      if (signal === 'SIGKILL' || (signal === 'SIGTERM' && !ignoresTerm.includes(pid))) alive.delete(pid);
    },
  };
}

/** Runs the sweep on a manual clock, moving time on until it is done. */
async function sweep(table: ReturnType<typeof system>, killGraceMs = 100) {
  const clock = createManualClock();
  let finished = false;
  const running = new ProcessSweep({ ...table, clock, killGraceMs, logger: capturingLogger() })
    .run()
    .finally(() => {
      finished = true;
    });
  for (let step = 0; step < 1000 && !finished; step += 1) {
    await Promise.resolve();
    clock.advance(5);
    await Promise.resolve();
  }
  return running;
}

describe('ProcessSweep', () => {
  it('sends SIGTERM and SIGCONT to each member and stops there when that suffices', async () => {
    const table = system([entry(10, 1), entry(11, 2)]);
    const report = await sweep(table);
    expect(table.signals).toEqual([
      [10, 'SIGTERM'],
      [10, 'SIGCONT'],
      [11, 'SIGTERM'],
      [11, 'SIGCONT'],
    ]);
    expect(report).toEqual({ signalled: 2, escalated: false, survivors: [] });
  });

  it('escalates to SIGKILL after the grace for members that ignore SIGTERM, signalling each once per step', async () => {
    const table = system([entry(10, 1), entry(11, 2)], [11]);
    const report = await sweep(table);
    expect(report).toEqual({ signalled: 2, escalated: true, survivors: [] });
    expect(table.signals.filter(([pid]) => pid === 11).map(([, signal]) => signal)).toEqual([
      'SIGTERM',
      'SIGCONT',
      'SIGKILL',
    ]);
  });

  it('reports what survives SIGKILL (a process stuck in the kernel) and gives up after the second grace', async () => {
    const table = system([entry(10, 1)]);
    const stuck = {
      ...table,
      sendSignal: (pid: number, signal: NodeJS.Signals) => void table.signals.push([pid, signal]),
    };
    const report = await sweep(stuck);
    expect(report).toEqual({ signalled: 1, escalated: true, survivors: [10] });
  });
});
