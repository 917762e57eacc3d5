/**
 * Output directories against the real file system and process table: the name says which process made
 * the directory, and the leftovers sweep removes only old directories of processes that no longer run —
 * never a live process's, a recent one, another shape of name, or anything through a link.
 */
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { procfsSource } from '../trees/process-table.js';
import { OutputDirectory, removeLeftoverOutputDirectories } from './output-directory.js';

const DAY_MS = 24 * 60 * 60 * 1000;
let parents: string[] = [];

afterEach(() => {
  for (const parent of parents) rmSync(parent, { recursive: true, force: true });
  parents = [];
});

function parent(): string {
  const path = mkdtempSync(join(tmpdir(), 'errand-sweep-test-'));
  parents.push(path);
  return path;
}

/** A pid no process has now: one that exited and was reaped. */
function deadPid(): number {
  const { pid } = spawnSync('true');
  if (pid === undefined) throw new Error('could not run true');
  return pid;
}

/** A directory as `OutputDirectory` names it for `pid`/`startTime`, with one file, changed `ageMs` ago. */
function leftover(under: string, prefix: string, pid: number, startTime: number, ageMs: number): string {
  const path = join(under, `${prefix}${pid}-${startTime}-Ab12Cd`);
  mkdirSync(path, { mode: 0o700 });
  writeFileSync(join(path, 'out.log'), 'output\n');
  age(path, ageMs);
  return path;
}

function age(path: string, ageMs: number): void {
  const then = new Date(Date.now() - ageMs);
  for (const entry of readdirSync(path)) utimesSync(join(path, entry), then, then);
  utimesSync(path, then, then);
}

const thisStartTime = () => procfsSource().read(process.pid)!.startTime;

describe('OutputDirectory', () => {
  it('names its directory after the process that made it: prefix, pid, start time', () => {
    const under = parent();
    const directory = new OutputDirectory('errand-bash-', under);
    const path = directory.ensure();
    expect(basename(path)).toMatch(
      new RegExp(`^errand-bash-${process.pid}-${thisStartTime()}-[A-Za-z0-9]{6}$`),
    );
    directory.dispose(false);
    expect(existsSync(path)).toBe(false);
  });
});

describe('removeLeftoverOutputDirectories', () => {
  it('removes an old directory of a process that no longer runs, and only that', () => {
    const under = parent();
    const dead = leftover(under, 'errand-bash-', deadPid(), 12345, 8 * DAY_MS);
    // The pid runs, but another process has it now (its start time differs): the maker is gone.
    const reused = leftover(under, 'errand-pty-', process.pid, thisStartTime() + 1, 8 * DAY_MS);
    const live = leftover(under, 'errand-bash-', process.pid, thisStartTime(), 8 * DAY_MS);
    const recent = leftover(under, 'errand-bash-', deadPid(), 12345, 60_000);
    const otherPrefix = leftover(under, 'errand-durable-', deadPid(), 12345, 8 * DAY_MS);
    const otherShape = join(under, 'errand-bash-Xy12Ab');
    mkdirSync(otherShape);
    age(otherShape, 8 * DAY_MS);

    const sweep = removeLeftoverOutputDirectories({
      parent: under,
      prefixes: ['errand-bash-', 'errand-pty-'],
      maxAgeMs: 7 * DAY_MS,
    });
    expect([...sweep.removed].sort()).toEqual([dead, reused].sort());
    expect(sweep.recent).toBe(1);
    for (const kept of [live, recent, otherPrefix, otherShape]) expect(existsSync(kept)).toBe(true);
  });

  it('keeps a directory in which one entry changed lately, though the directory itself is old', () => {
    const under = parent();
    const path = leftover(under, 'errand-bash-', deadPid(), 7, 8 * DAY_MS);
    writeFileSync(join(path, 'status'), '{"stoppedBy":"lifeline"}\n');
    const sweep = removeLeftoverOutputDirectories({
      parent: under,
      prefixes: ['errand-bash-'],
      maxAgeMs: DAY_MS,
    });
    expect(sweep).toEqual({ removed: [], recent: 1 });
    expect(existsSync(join(path, 'out.log'))).toBe(true);
  });

  it('follows no link and removes no file that has a leftover name', () => {
    const under = parent();
    const target = parent();
    writeFileSync(join(target, 'precious'), 'keep me\n');
    const pid = deadPid();
    const link = join(under, `errand-bash-${pid}-1-Ab12Cd`);
    symlinkSync(target, link);
    const file = join(under, `errand-bash-${pid}-2-Ab12Cd`);
    writeFileSync(file, 'a file\n');
    const sweep = removeLeftoverOutputDirectories({ parent: under, prefixes: ['errand-bash-'], maxAgeMs: 0 });
    expect(sweep.removed).toEqual([]);
    expect(existsSync(join(target, 'precious'))).toBe(true);
    expect(existsSync(link)).toBe(true);
    expect(existsSync(file)).toBe(true);
  });

  it('with an age of 0, removes every directory of a gone process at once; a missing parent is nothing', () => {
    const under = parent();
    const dead = leftover(under, 'errand-bash-', deadPid(), 99, 0);
    expect(
      removeLeftoverOutputDirectories({ parent: under, prefixes: ['errand-bash-'], maxAgeMs: 0 }).removed,
    ).toEqual([dead]);
    expect(
      removeLeftoverOutputDirectories({
        parent: join(under, 'missing'),
        prefixes: ['errand-bash-'],
        maxAgeMs: 0,
      }),
    ).toEqual({ removed: [], recent: 0 });
  });

  it('removes at most maxRemovals directories per sweep', () => {
    const under = parent();
    for (let index = 0; index < 3; index += 1) leftover(under, 'errand-bash-', deadPid(), index, DAY_MS);
    const sweep = removeLeftoverOutputDirectories({
      parent: under,
      prefixes: ['errand-bash-'],
      maxAgeMs: 0,
      maxRemovals: 2,
    });
    expect(sweep.removed).toHaveLength(2);
    expect(readdirSync(under)).toHaveLength(1);
  });
});
