import { describe, expect, it } from 'vitest';
import { parseEnvironmentTag, recognizeTree } from './process-identity.js';
import type { ProcessEntry, ProcessSource } from './process-table.js';

function entry(pid: number, pgid: number, startTime: number, state = 'S'): ProcessEntry {
  return { pid, ppid: 1, pgid, sid: pgid, startTime, state };
}

function table(entries: ProcessEntry[], tags: Record<number, string> = {}, bootId = 'boot-a'): ProcessSource {
  const byPid = new Map(entries.map((candidate) => [candidate.pid, candidate]));
  return {
    listPids: () => [...byPid.keys()],
    read: (pid) => byPid.get(pid),
    environmentValue: (pid, name) => (name === 'TAG' ? tags[pid] : undefined),
    lastPid: () => undefined,
    clockTicks: () => 10_000,
    bootId: () => bootId,
  };
}

const tag = { name: 'TAG', value: 't1' };

describe('recognizeTree', () => {
  it('knows the root by pid and start time, in the same boot', () => {
    const source = table([entry(100, 100, 500), entry(101, 100, 501)], { 100: 't1', 101: 't1' });
    const found = recognizeTree({ pid: 100, startTime: 500, bootId: 'boot-a', tag }, source);
    expect(found).toMatchObject({ state: 'running', root: { pid: 100, startTime: 500 } });
    expect(found.state === 'running' && found.members.map((member) => member.pid)).toEqual([100, 101]);
  });

  it('finds what a root left behind, and calls a root whose pid another process took gone', () => {
    const leftovers = table([entry(101, 100, 501)], { 101: 't1' });
    expect(recognizeTree({ pid: 100, startTime: 500, tag }, leftovers).state).toBe('leftovers');
    const reused = table([entry(100, 100, 900)]);
    expect(recognizeTree({ pid: 100, startTime: 500, tag }, reused)).toEqual({
      state: 'gone',
      pidReused: true,
    });
    expect(recognizeTree({ pid: 100, startTime: 500 }, table([]))).toEqual({
      state: 'gone',
      pidReused: false,
    });
    // A zombie root has exited: its parent only has not reaped it yet.
    expect(recognizeTree({ pid: 100, startTime: 500 }, table([entry(100, 100, 500, 'Z')])).state).toBe(
      'gone',
    );
  });

  it('never judges across a reboot, or without a process table', () => {
    const source = table([entry(100, 100, 500)], {}, 'boot-b');
    expect(recognizeTree({ pid: 100, startTime: 500, bootId: 'boot-a' }, source)).toEqual({
      state: 'other_boot',
    });
    const noProc = { ...table([entry(100, 100, 500)]), clockTicks: () => 0 };
    expect(recognizeTree({ pid: 100, startTime: 500 }, noProc)).toEqual({ state: 'unknown' });
  });

  it('without a start time, trusts only the tree tag (tag values are never reused)', () => {
    const source = table([entry(100, 100, 500), entry(200, 200, 600)], { 100: 't1' });
    expect(recognizeTree({ pid: 100, tag }, source)).toMatchObject({
      state: 'running',
      root: { pid: 100, startTime: 500 },
    });
    expect(recognizeTree({ pid: 200, tag }, source).state).toBe('leftovers');
    expect(recognizeTree({ pid: 200 }, source)).toEqual({ state: 'unknown' });
  });

  it('without a pid (recorded before its spawn was answered), takes the first session leader carrying the tag as the root', () => {
    // The root (300) leads its session; a child (301) in it, and a daemon (302) that left for a session
    // of its own later; an untagged process (100) is no member.
    const child = { ...entry(301, 300, 710), sid: 300 };
    const daemon = entry(302, 302, 720);
    const source = table([entry(100, 100, 500), entry(300, 300, 700), child, daemon], {
      300: 't1',
      301: 't1',
      302: 't1',
    });
    const found = recognizeTree({ tag, bootId: 'boot-a' }, source);
    expect(found).toMatchObject({ state: 'running', root: { pid: 300, startTime: 700 } });
    expect(found.state === 'running' && found.members.map((member) => member.pid)).toEqual([300, 301, 302]);
    // The root gone, what it left is leftovers; nothing left, gone (no pid, so none reused).
    const left = table([child], { 301: 't1' });
    expect(recognizeTree({ tag }, left).state).toBe('leftovers');
    expect(recognizeTree({ tag }, table([entry(100, 100, 500)]))).toEqual({
      state: 'gone',
      pidReused: false,
    });
    // Neither pid nor tag: nothing to recognise it by; another boot: nothing of it runs.
    expect(recognizeTree({}, source)).toEqual({ state: 'unknown' });
    expect(recognizeTree({ tag, bootId: 'boot-b' }, source)).toEqual({ state: 'other_boot' });
  });
});

describe('parseEnvironmentTag', () => {
  it('reads NAME=value and nothing else', () => {
    expect(parseEnvironmentTag('A=b=c')).toEqual({ name: 'A', value: 'b=c' });
    for (const text of [undefined, '', '=x', 'A=', 'plain'])
      expect(parseEnvironmentTag(text)).toBeUndefined();
  });
});
