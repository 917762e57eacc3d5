import { describe, expect, it } from 'vitest';
import { capturingLogger } from '../../../test/fixtures/bash/index.js';
import { createManualClock } from '../../tasks/clock.js';
import type { ProcessEntry, ProcessSource } from './process-table.js';
import { TreeTerminator } from './process-terminator.js';

/** A process table that obeys signals: SIGKILL always kills, SIGTERM kills unless the pid ignores it. */
function fakeSystem(entries: ProcessEntry[], ignoresTerm: number[] = []) {
  const alive = new Map(entries.map((candidate) => [candidate.pid, candidate]));
  const signals: Array<[number, string]> = [];
  const source: ProcessSource = {
    listPids: () => [...alive.keys()],
    read: (pid) => alive.get(pid),
    environmentValue: () => undefined,
    lastPid: () => undefined,
    clockTicks: () => 0,
  };
  const sendSignal = (pid: number, signal: NodeJS.Signals) => {
    signals.push([pid, signal]);
    const targets =
      pid < 0 ? [...alive.values()].filter((candidate) => candidate.pgid === -pid) : [alive.get(pid)];
    for (const target of targets) {
      if (!target) continue;
      if (signal === 'SIGKILL' || (signal === 'SIGTERM' && !ignoresTerm.includes(target.pid)))
        alive.delete(target.pid);
    }
  };
  return { source, sendSignal, signals, alive };
}

function entry(pid: number, ppid: number, pgid: number, sid: number, startTime: number): ProcessEntry {
  return { pid, ppid, pgid, sid, startTime, state: 'S' };
}

const root = { pid: 100, startTime: 5000 };

describe('TreeTerminator', () => {
  it('sends SIGTERM to the group and to members outside it, and stops there when that suffices', async () => {
    const system = fakeSystem([
      entry(100, 1, 100, 100, 5000),
      entry(101, 100, 100, 100, 5001),
      entry(102, 100, 102, 102, 5002),
    ]);
    const clock = createManualClock();
    const terminator = new TreeTerminator({
      root,
      source: system.source,
      sendSignal: system.sendSignal,
      clock,
      killGraceMs: 1000,
      rootAlive: () => true,
      newerPidsUntil: 0,
      logger: capturingLogger(),
    });
    const report = await terminator.terminate();
    expect(system.signals).toEqual([
      [-100, 'SIGTERM'],
      [-100, 'SIGCONT'],
      [102, 'SIGTERM'],
      [102, 'SIGCONT'],
    ]);
    expect(report).toEqual({ signalled: 3, escalated: false, survivors: [] });
  });

  it('decides the tree is gone on a fresh read of the table, not on what its source kept', async () => {
    const system = fakeSystem([entry(100, 1, 100, 100, 5000)]);
    // A source that keeps its first answers until refreshed, as a memoized one does within its window.
    let kept: number[] | undefined;
    const refreshed: string[] = [];
    const source: ProcessSource = {
      ...system.source,
      listPids: () => {
        kept ??= system.source.listPids();
        return kept;
      },
      refresh: () => {
        kept = undefined;
        refreshed.push('refresh');
      },
    };
    const clock = createManualClock();
    const terminator = new TreeTerminator({
      root,
      source,
      sendSignal: (pid, signal) => {
        system.sendSignal(pid, signal);
        // The shell forked a child just as it was told to stop: the child missed the group's signal.
        if (pid === -100 && signal === 'SIGTERM') system.alive.set(101, entry(101, 1, 100, 100, 5001));
      },
      clock,
      killGraceMs: 1000,
      rootAlive: () => system.alive.has(100),
      newerPidsUntil: 0,
      logger: capturingLogger(),
    });
    let done = false;
    const stopped = terminator.terminate().finally(() => {
      done = true;
    });
    for (let step = 0; step < 100 && !done; step += 1) {
      await new Promise((resolve) => setImmediate(resolve));
      clock.advance(5);
    }
    await stopped;
    expect(refreshed.length).toBeGreaterThan(0);
    expect(system.signals).toContainEqual([101, 'SIGTERM']);
    expect(system.alive.size).toBe(0);
  });

  it('escalates to SIGKILL after the grace when SIGTERM is ignored', async () => {
    const system = fakeSystem([entry(100, 1, 100, 100, 5000), entry(101, 100, 100, 100, 5001)], [101]);
    const clock = createManualClock();
    const terminator = new TreeTerminator({
      root,
      source: system.source,
      sendSignal: system.sendSignal,
      clock,
      killGraceMs: 1000,
      rootAlive: () => true,
      newerPidsUntil: 0,
      logger: capturingLogger(),
    });
    const stopping = terminator.terminate();
    await Promise.resolve();
    expect(system.alive.has(101)).toBe(true);
    for (let step = 0; step < 30 && system.alive.size > 0; step += 1) {
      clock.advance(50);
      await new Promise((resolve) => setImmediate(resolve));
    }
    const report = await stopping;
    expect(report.escalated).toBe(true);
    expect(system.signals.at(-1)).toEqual([-100, 'SIGKILL']);
    expect(clock.now()).toBeGreaterThanOrEqual(1000);
  });

  it('signals nothing in a group whose leader pid was reused', async () => {
    const system = fakeSystem([entry(100, 1, 100, 100, 9999), entry(101, 100, 100, 100, 10000)]);
    const terminator = new TreeTerminator({
      root,
      source: system.source,
      sendSignal: system.sendSignal,
      clock: createManualClock(),
      killGraceMs: 1000,
      rootAlive: () => false,
      newerPidsUntil: 0,
      logger: capturingLogger(),
    });
    expect(await terminator.sweep()).toEqual({ signalled: 0, escalated: false, survivors: [] });
    expect(system.signals).toEqual([]);
  });

  it('reports survivors when even SIGKILL does not remove a process', async () => {
    const system = fakeSystem([entry(101, 1, 100, 100, 5001)]);
    const logger = capturingLogger();
    const clock = createManualClock();
    const terminator = new TreeTerminator({
      root,
      source: system.source,
      // The signals are recorded but have no effect: the process is stuck.
      sendSignal: (pid, signal) => {
        system.signals.push([pid, signal]);
      },
      clock,
      killGraceMs: 100,
      rootAlive: () => false,
      newerPidsUntil: 0,
      logger,
    });
    const stopping = terminator.terminate();
    for (let step = 0; step < 40; step += 1) {
      clock.advance(50);
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(await stopping).toMatchObject({ escalated: true, survivors: [101] });
    expect(logger.warnings).toHaveLength(1);
  });

  it('sends the polite signals it is given in order, each target then continued, and never continues after SIGKILL', async () => {
    const system = fakeSystem([entry(100, 1, 100, 100, 5000)], [100]);
    const clock = createManualClock();
    const terminator = new TreeTerminator({
      root,
      source: system.source,
      sendSignal: system.sendSignal,
      clock,
      killGraceMs: 100,
      rootAlive: () => true,
      newerPidsUntil: 0,
      logger: capturingLogger(),
      politeSignals: ['SIGHUP', 'SIGTERM'],
    });
    const stopping = terminator.terminate();
    for (let step = 0; step < 20 && system.alive.size > 0; step += 1) {
      clock.advance(50);
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(await stopping).toMatchObject({ escalated: true, survivors: [] });
    expect(system.signals).toEqual([
      [-100, 'SIGHUP'],
      [-100, 'SIGTERM'],
      [-100, 'SIGCONT'],
      [-100, 'SIGKILL'],
    ]);
  });
});
