import { describe, expect, it } from 'vitest';
import {
  exitOfStatus,
  findEnvironmentValue,
  type ProcessEntry,
  type ProcessSource,
  parseProcessStat,
} from './process-table.js';
import { censusTree, scanTree } from './process-tree.js';

function entry(
  pid: number,
  ppid: number,
  pgid: number,
  sid: number,
  startTime: number,
  state = 'S',
): ProcessEntry {
  return { pid, ppid, pgid, sid, startTime, state };
}

const root = { pid: 100, startTime: 5000 };
const pids = (entries: readonly ProcessEntry[]) => entries.map((member) => member.pid).sort((a, b) => a - b);

describe('parseProcessStat', () => {
  it('reads pid, ppid, group, session, state and start time, whatever the command name holds', () => {
    const line =
      '4242 (my (odd) name) S 4000 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 200 18446744073709551615';
    expect(parseProcessStat(line)).toEqual({
      pid: 4242,
      ppid: 4000,
      pgid: 4242,
      sid: 4242,
      state: 'S',
      startTime: 987654,
    });
    expect(parseProcessStat('garbage')).toBeUndefined();
  });

  it("reads a zombie's wait status (field 52) and tells an exit code from a signal", () => {
    const tail = (state: string, status: number) =>
      `4242 (bash) ${state} 4000 4242 4242 0 -1 4227084 0 0 0 0 0 0 0 0 20 0 1 0 987654 0 0 18446744073709551615 0 0 0 0 0 0 0 0 65536 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 ${status}`;
    expect(parseProcessStat(tail('Z', 7 << 8))?.exitStatus).toBe(1792);
    expect(exitOfStatus(1792)).toEqual({ code: 7, signal: null });
    expect(exitOfStatus(15)).toEqual({ code: null, signal: 'SIGTERM' });
    // A core dump sets bit 7; the signal is the low seven bits.
    expect(exitOfStatus(0x80 | 11)).toEqual({ code: null, signal: 'SIGSEGV' });
    // A process that runs has no status worth reading, and an old kernel's line has no field 52.
    expect(parseProcessStat(tail('S', 0))?.exitStatus).toBeUndefined();
    expect(
      parseProcessStat('4242 (bash) Z 4000 4242 4242 0 -1 1 0 0 0 0 0 0 0 0 20 0 1 0 987654 0 0'),
    ).toEqual({ pid: 4242, ppid: 4000, pgid: 4242, sid: 4242, state: 'Z', startTime: 987654 });
  });
});

describe('findEnvironmentValue', () => {
  it('finds a whole variable, not a suffix of another', () => {
    const block = Buffer.from('XERRAND_TAG=no\0ERRAND_TAG=yes\0OTHER=1\0');
    expect(findEnvironmentValue(block, 'ERRAND_TAG')).toBe('yes');
    expect(findEnvironmentValue(block, 'MISSING')).toBeUndefined();
    expect(findEnvironmentValue(Buffer.from('A=1'), 'A')).toBe('1');
  });
});

describe('censusTree', () => {
  it('counts the root, its group, its session and descendants through ppid links', () => {
    const census = censusTree(
      root,
      [
        entry(100, 1, 100, 100, 5000),
        entry(101, 100, 100, 100, 5001), // a child in the group
        entry(102, 101, 102, 100, 5002), // its own group (job control), same session
        entry(103, 102, 103, 103, 5003), // setsid'd, but its parent is a member
        entry(104, 1, 104, 104, 5004), // unrelated
        entry(50, 1, 50, 50, 10), // older than the root: never a member
      ],
      { rootAlive: true },
    );
    expect(pids(census.members)).toEqual([100, 101, 102, 103]);
    expect(census.groupIsOurs).toBe(true);
  });

  it('leaves out zombies but follows links through live members', () => {
    const census = censusTree(root, [entry(100, 1, 100, 100, 5000, 'Z'), entry(101, 100, 100, 100, 5001)], {
      rootAlive: true,
    });
    expect(pids(census.members)).toEqual([101]);
  });

  it('trusts neither the group nor the session of a reaped root pid that now names another process', () => {
    const census = censusTree(root, [
      entry(100, 1, 100, 100, 9000), // pid 100 reused by a newer process
      entry(101, 100, 100, 100, 9001),
    ]);
    expect(census.members).toEqual([]);
    expect(census.groupIsOurs).toBe(false);
  });

  it('keeps the group signalable after the root is gone while members remain', () => {
    const census = censusTree(root, [entry(101, 1, 100, 100, 5001)]);
    expect(pids(census.members)).toEqual([101]);
    expect(census.groupIsOurs).toBe(true);
  });

  it('recognises processes recorded earlier only with the same start time', () => {
    const known = new Map([
      [200, 6000],
      [201, 6001],
    ]);
    const census = censusTree(root, [entry(200, 1, 200, 200, 6000), entry(201, 1, 201, 201, 7777)], {
      known,
    });
    expect(pids(census.members)).toEqual([200]);
  });

  it('asks for tags only about otherwise unmatched candidates, then follows their children', () => {
    const asked: number[] = [];
    const census = censusTree(
      root,
      [
        entry(100, 1, 100, 100, 5000),
        entry(300, 1, 300, 300, 6000),
        entry(301, 300, 300, 300, 6001),
        entry(302, 1, 302, 302, 6002),
      ],
      {
        rootAlive: true,
        isTagged: (pid) => {
          asked.push(pid);
          return pid === 300;
        },
      },
    );
    expect(pids(census.members)).toEqual([100, 300, 301]);
    expect(asked.sort()).toEqual([300, 301, 302]);
  });
});

describe('scanTree', () => {
  function source(entries: ProcessEntry[], lastPid: number | undefined): ProcessSource & { reads: number[] } {
    const reads: number[] = [];
    return {
      reads,
      listPids: () => entries.map((candidate) => candidate.pid),
      read: (pid) => {
        reads.push(pid);
        return entries.find((candidate) => candidate.pid === pid);
      },
      environmentValue: () => undefined,
      lastPid: () => lastPid,
      clockTicks: () => 0,
    };
  }

  it('reads only pids handed out after the root when asked to', () => {
    const table = source(
      [
        entry(90, 1, 90, 90, 10),
        entry(100, 1, 100, 100, 5000),
        entry(101, 100, 100, 100, 5001),
        entry(150, 1, 150, 150, 5100),
      ],
      120,
    );
    const census = scanTree(table, root, { newerPidsOnly: true, rootAlive: true });
    expect(pids(census.members)).toEqual([100, 101]);
    // Few pids since the root: they are probed one by one, and nothing older or newer is read.
    expect(Math.min(...table.reads)).toBe(100);
    expect(Math.max(...table.reads)).toBe(120);
  });

  it('lists /proc when many pids were handed out since the root', () => {
    const table = source(
      [
        entry(90, 1, 90, 90, 10),
        entry(100, 1, 100, 100, 5000),
        entry(101, 100, 100, 100, 5001),
        entry(150, 1, 150, 150, 5100),
      ],
      1000,
    );
    const census = scanTree(table, root, { newerPidsOnly: true, rootAlive: true });
    expect(pids(census.members)).toEqual([100, 101]);
    expect(table.reads.sort((a, b) => a - b)).toEqual([100, 101, 150]);
  });

  it('handles a pid counter that wrapped around', () => {
    const table = source(
      [entry(5, 100, 100, 100, 5005), entry(100, 1, 100, 100, 5000), entry(60, 1, 60, 60, 4)],
      10,
    );
    const census = scanTree(table, root, { newerPidsOnly: true, rootAlive: true });
    expect(pids(census.members)).toEqual([5, 100]);
    expect(table.reads).not.toContain(60);
  });

  it('finds no member and no group to signal when all it read is dead (a quick shell, a zombie still)', () => {
    let lookedUp = 0;
    const table = {
      ...source([entry(100, 1, 100, 100, 5000, 'Z'), entry(101, 1, 101, 101, 5001, 'Z')], 101),
      environmentValue: () => {
        lookedUp += 1;
        return undefined;
      },
    };
    const census = scanTree(table, root, {
      newerPidsOnly: true,
      rootAlive: true,
      tag: { name: 'T', value: 'v' },
    });
    expect(census).toEqual({ members: [], groupIsOurs: false });
    expect(lookedUp).toBe(0);
  });
});
