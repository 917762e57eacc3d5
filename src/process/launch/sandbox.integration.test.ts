/**
 * What the sandbox's design rests on, checked against real bwrap: the rewritten request keeps the launch's
 * session, group and tag, and although the command runs in a pid namespace of its own, this process's
 * /proc lists its members with the pids it knows, so the census counts bwrap, the namespace's init, the
 * command and a `setsid` escapee; and when the command's leader dies alone, the namespace's init keeps the
 * rest alive — the census still finds them and the terminator's sweep stops them.
 */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { isAlive } from '../../../test/fixtures/bash/index.js';
import { findBubblewrap } from '../../../test/support/bubblewrap.js';
import { systemClock } from '../../tasks/clock.js';
import { procfsSource } from '../trees/process-table.js';
import { TreeTerminator } from '../trees/process-terminator.js';
import { scanTree } from '../trees/process-tree.js';
import { createSpawnLauncher, type LaunchedProcess, type LaunchRequest } from './process-launcher.js';
import { resolveSandbox } from './sandbox.js';

const bwrap = findBubblewrap();
const launched: LaunchedProcess[] = [];

afterEach(() => {
  for (const child of launched.splice(0)) {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
});

/** Resolves with the lines the process printed once `count` lines arrived. */
function lines(child: LaunchedProcess, count: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    let text = '';
    child.stderr?.resume();
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      const got = text.split('\n').filter((line) => line !== '');
      if (got.length >= count) resolve(got);
    });
    child.once('exit', () => reject(new Error(`exited after printing ${JSON.stringify(text)}`)));
  });
}

function outerPidOf(pattern: RegExp, tag: string): number[] {
  const source = procfsSource();
  return source
    .listPids()
    .filter((pid) => source.environmentValue(pid, 'ERRAND_TEST_TAG') === tag)
    .filter((pid) => {
      try {
        return pattern.test(readFileSync(`/proc/${pid}/cmdline`, 'latin1').replaceAll('\0', ' '));
      } catch {
        return false;
      }
    });
}

describe.skipIf(bwrap === undefined)('the census of a sandboxed tree', () => {
  it('counts bwrap, the command and a setsid escapee: same group and session, tagged', async () => {
    const source = procfsSource();
    const tag = { name: 'ERRAND_TEST_TAG', value: `sandboxed-${process.pid}` };
    const request: LaunchRequest = {
      file: 'bash',
      args: ['-c', 'setsid sleep 1000 & echo escapee; exec sleep 1000'],
      cwd: '/',
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      tag,
    };
    const startTime = source.clockTicks();
    const child = createSpawnLauncher().launch(
      resolveSandbox({ profile: 'read-only', bwrap }).confine(request),
    );
    launched.push(child);
    await lines(child, 1);
    // Both sleeps exist once they exec'd (the echo may come first).
    await expect.poll(() => outerPidOf(/^(setsid )?sleep 1000/, tag.value)).toHaveLength(2);
    const census = scanTree(source, { pid: child.pid!, startTime }, { rootAlive: true, tag });
    const members = census.members.map((member) => member.pid);
    const [escapee] = outerPidOf(/^setsid sleep 1000|^sleep 1000/, tag.value).filter(
      (pid) => source.read(pid)?.sid !== child.pid,
    );
    expect(escapee).toBeDefined();
    expect(members).toEqual(expect.arrayContaining([child.pid, escapee]));
    // bwrap, its namespace's init, the command (exec'd into sleep) and the escapee.
    expect(members.length).toBeGreaterThanOrEqual(4);
    expect(census.groupIsOurs).toBe(true);
  });

  it('when the leader dies alone, the census finds what the namespace kept and the sweep stops it', async () => {
    const source = procfsSource();
    const tag = { name: 'ERRAND_TEST_TAG', value: `leftover-${process.pid}` };
    const startTime = source.clockTicks();
    const request: LaunchRequest = {
      file: 'bash',
      args: ['-c', 'sleep 1000 & echo started; wait'],
      cwd: '/',
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      tag,
    };
    const child = createSpawnLauncher().launch(
      resolveSandbox({ profile: 'read-only', bwrap }).confine(request),
    );
    launched.push(child);
    let reaped = false;
    const exited = new Promise((resolve) => child.once('exit', resolve)).then(() => {
      reaped = true;
    });
    await lines(child, 1);
    // The echo may come before the background job's exec: wait until it is a sleep.
    await expect.poll(() => outerPidOf(/^sleep 1000/, tag.value)).toHaveLength(1);
    const [sleeper] = outerPidOf(/^sleep 1000/, tag.value);
    const [leader] = outerPidOf(/^bash -c/, tag.value);
    process.kill(leader!, 'SIGKILL');
    await exited;
    // bwrap reported the command's end; its namespace's init still holds the sleeper.
    expect(isAlive(sleeper!)).toBe(true);
    const terminator = new TreeTerminator({
      root: { pid: child.pid!, startTime },
      source,
      clock: systemClock,
      killGraceMs: 500,
      tag,
      rootAlive: () => !reaped,
      newerPidsUntil: 0,
      logger: { warn() {} },
    });
    const report = await terminator.sweep();
    expect(report.signalled).toBeGreaterThanOrEqual(2);
    expect(report.escalated).toBe(false);
    expect(isAlive(sleeper!)).toBe(false);
    expect(outerPidOf(/./, tag.value)).toEqual([]);
  });
});
