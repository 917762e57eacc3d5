import { describe, expect, it } from 'vitest';
import { memoizedSource, type ProcessEntry, type ProcessSource } from './process-table.js';

/** A process table held in memory, counting what reaches it. */
function fakeTable() {
  const processes = new Map<number, ProcessEntry>();
  const environments = new Map<number, Record<string, string>>();
  let last = 100;
  const calls = { list: 0, read: 0, environment: 0 };
  const source: ProcessSource = {
    listPids: () => {
      calls.list += 1;
      return [...processes.keys()];
    },
    read: (pid) => {
      calls.read += 1;
      return processes.get(pid);
    },
    environmentValue: (pid, name) => {
      calls.environment += 1;
      return environments.get(pid)?.[name];
    },
    lastPid: () => last,
    clockTicks: () => 0,
  };
  const start = (pid: number, environment: Record<string, string> = {}) => {
    processes.set(pid, { pid, ppid: 1, pgid: pid, sid: pid, state: 'S', startTime: 5 });
    environments.set(pid, environment);
    last = Math.max(last, pid);
  };
  return { source, calls, start, environments };
}

describe('memoizedSource', () => {
  // A window no test outlasts: what it keeps is dropped only by the rules under test.
  const WINDOW_MS = 60_000;

  it('lists the pids again once a pid was handed out since, and keeps the list otherwise', () => {
    const table = fakeTable();
    table.start(101);
    const source = memoizedSource(table.source, WINDOW_MS);
    expect(source.listPids()).toEqual([101]);
    expect(source.listPids()).toEqual([101]);
    expect(table.calls.list).toBe(1);
    // A fork in the window: the list it kept would miss the new process.
    table.start(102);
    expect(source.listPids()).toEqual([101, 102]);
    expect(table.calls.list).toBe(2);
  });

  it('keeps an environment value found, and looks again for one not found once the window is over', () => {
    const table = fakeTable();
    table.start(101, {});
    const source = memoizedSource(table.source, WINDOW_MS);
    // Caught in an exec: no environment yet.
    expect(source.environmentValue(101, 'TAG')).toBeUndefined();
    expect(source.environmentValue(101, 'TAG')).toBeUndefined();
    expect(table.calls.environment).toBe(1);
    table.environments.set(101, { TAG: 'x' });
    source.refresh?.();
    expect(source.environmentValue(101, 'TAG')).toBe('x');
    // Found: kept for the process's life, across windows.
    table.environments.set(101, {});
    source.refresh?.();
    expect(source.environmentValue(101, 'TAG')).toBe('x');
    expect(table.calls.environment).toBe(2);
  });

  it('reads a forgotten pid again, and everything again after a refresh', () => {
    const table = fakeTable();
    table.start(101);
    table.start(102);
    const source = memoizedSource(table.source, WINDOW_MS);
    source.read(101);
    source.read(102);
    source.read(101);
    expect(table.calls.read).toBe(2);
    source.forget?.(101);
    source.read(101);
    source.read(102);
    expect(table.calls.read).toBe(3);
    source.refresh?.();
    source.read(102);
    expect(table.calls.read).toBe(4);
  });
});
