/** The limits' vocabulary: validation naming field and value, the words, and reading the cgroup tables. */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrandError } from '../../tasks/errors.js';
import { findV1Bases, findV2Base, parseCgroupMemberships, parseCgroupMounts } from './cgroup-layout.js';
import { CgroupNode, keyedValue } from './cgroup-node.js';
import { shimScript } from './limit-shim.js';
import { checkLimitOptions } from './resource-limiter.js';
import { describeBreach, limitsSummaryOf, resolveLimitSet } from './resource-limits.js';

function messageOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(ErrandError.hasCode(error, 'INVALID_ARGUMENT')).toBe(true);
    return (error as Error).message;
  }
  throw new Error('did not throw');
}

describe('checking limits', () => {
  it.each([
    [
      { task: { memoryBytes: 1000 } },
      'Expected `resourceLimits.task.memoryBytes` to be an integer of at least 1048576 (bytes), got 1000 (number)',
    ],
    [{ task: { pids: 0 } }, 'Expected `resourceLimits.task.pids` to be a positive integer, got 0 (number)'],
    [
      { session: { cpuTimeMs: 1.5 } },
      'Expected `resourceLimits.session.cpuTimeMs` to be a positive integer (milliseconds), got 1.5 (number)',
    ],
    [
      { task: { cpus: 0 } },
      'Expected `resourceLimits.task.cpus` to be a number of CPUs from 0.01 to 4096, got 0 (number)',
    ],
    [
      { task: { memory: 5 } },
      'Expected `resourceLimits.task.memory` to be absent (known limits: memoryBytes, cpuTimeMs, cpus, pids), got 5 (number)',
    ],
    [
      { mechanism: 'cgroup' },
      'Expected `resourceLimits.mechanism` to be one of `auto`, `cgroup-v2`, `cgroup-v1`, `rlimit`, got "cgroup" (string)',
    ],
    [{ pollMs: 5 }, 'Expected `resourceLimits.pollMs` to be an integer from 10 to 60000, got 5 (number)'],
    [
      { cgroupRoot: 'relative' },
      'Expected `resourceLimits.cgroupRoot` to be an absolute path, got "relative" (string)',
    ],
    [
      { tasks: {} },
      'Expected `resourceLimits.tasks` to be absent (known: task, session, mechanism, cgroupRoot, pollMs), got an object',
    ],
  ])('refuses %j', (options, message) => {
    expect(messageOf(() => checkLimitOptions(options as never))).toBe(message);
  });

  it('keeps only the limits given', () => {
    expect(resolveLimitSet({ memoryBytes: 2 * 1024 * 1024, cpus: 0.5 }, 'task')).toEqual({
      memoryBytes: 2 * 1024 * 1024,
      cpus: 0.5,
    });
    expect(checkLimitOptions({}).mechanism).toBe('auto');
  });
});

describe('words', () => {
  it('says a breach and a task detail', () => {
    expect(describeBreach({ reason: 'memory_limit', scope: 'task', limit: 64 * 1024 * 1024 })).toBe(
      'exceeding its memory limit of 64 MiB',
    );
    expect(describeBreach({ reason: 'pids_limit', scope: 'session', limit: 32 })).toBe(
      "exceeding its session's process limit of 32",
    );
    expect(
      limitsSummaryOf({
        limits: {
          mechanism: 'cgroup-v1',
          task: { memoryBytes: 512 * 1024 * 1024, pids: 64 },
          session: { cpus: 2 },
        },
      }),
    ).toBe('cgroup-v1: memory 512 MiB, 64 processes; session total 2 CPUs');
    expect(limitsSummaryOf({})).toBeUndefined();
  });
});

describe('the cgroup tables', () => {
  const mountinfo = [
    '30 25 0:26 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory',
    '31 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:10 - cgroup cgroup rw,cpu,cpuacct',
    '32 25 0:28 /docker/abc /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids',
    '33 25 0:29 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
    '34 25 0:30 / /proc rw - proc proc rw',
  ].join('\n');

  it('reads mounts and memberships, hybrid and container roots included', () => {
    const mounts = parseCgroupMounts(mountinfo);
    expect(mounts).toEqual([
      { version: 1, root: '/', mountPoint: '/sys/fs/cgroup/memory', controllers: ['memory'] },
      { version: 1, root: '/', mountPoint: '/sys/fs/cgroup/cpu,cpuacct', controllers: ['cpu', 'cpuacct'] },
      { version: 1, root: '/docker/abc', mountPoint: '/sys/fs/cgroup/pids', controllers: ['pids'] },
      { version: 2, root: '/', mountPoint: '/sys/fs/cgroup/unified', controllers: [] },
    ]);
    const memberships = parseCgroupMemberships(
      '4:memory:/user/1\n3:cpu,cpuacct:/\n2:pids:/docker/abc/x\n0::/\n',
    );
    expect(memberships).toEqual([
      { version: 1, controllers: ['memory'], path: '/user/1' },
      { version: 1, controllers: ['cpu', 'cpuacct'], path: '/' },
      { version: 1, controllers: ['pids'], path: '/docker/abc/x' },
      { version: 2, controllers: [], path: '/' },
    ]);
    // A controller without a hierarchy: no v1 layout.
    expect(findV1Bases(['memory', 'cpu'], mounts.slice(2), memberships)).toBeUndefined();
  });

  it('reads flat-keyed counters', () => {
    expect(keyedValue('oom_kill_disable 0\nunder_oom 0\noom_kill 2\n', 'oom_kill')).toBe(2);
    expect(keyedValue('max 0\n', 'max')).toBe(0);
    expect(keyedValue(undefined, 'max')).toBe(0);
  });

  it('splices only integers into the shim', () => {
    expect(shimScript({ addressSpaceKiB: 1024.7, cpuSeconds: 2, processes: 9 })).toContain(
      'ulimit -S -t 2 ||',
    );
    expect(shimScript({ addressSpaceKiB: 1024.7 })).toContain('ulimit -v 1024 ||');
  });
});

describe('cgroup v2 files (on a plain directory standing in for a delegated subtree)', () => {
  it('finds a base that enables the controllers, writes the limits, reads the counters', () => {
    const base = mkdtempSync(join(tmpdir(), 'errand-v2-'));
    try {
      writeFileSync(join(base, 'cgroup.controllers'), 'cpuset cpu io memory pids\n');
      expect(findV2Base(['memory', 'pids', 'cpu'], [], [], base)).toBe(base);
      writeFileSync(join(base, 'cgroup.controllers'), 'cpu io\n');
      expect(findV2Base(['memory'], [], [], base)).toBeUndefined();

      const root = CgroupNode.at({ version: 2, dir: base, controllers: ['memory', 'pids', 'cpu'] });
      const session = root.child('s1', { pids: 100 }, false);
      const read = (...path: string[]) => readFileSync(join(base, ...path), 'utf8');
      expect(read('s1', 'cgroup.subtree_control')).toBe('+memory +pids +cpu');
      expect(read('s1', 'pids.max')).toBe('100');
      const command = session.child('t1', { memoryBytes: 64 * 1024 * 1024, pids: 20, cpus: 0.25 }, true);
      expect(read('s1', 't1', 'memory.max')).toBe(String(64 * 1024 * 1024));
      expect(read('s1', 't1', 'memory.oom.group')).toBe('1');
      expect(read('s1', 't1', 'pids.max')).toBe('20');
      expect(read('s1', 't1', 'cpu.max')).toBe('25000 100000');
      expect(command.procsFiles).toEqual([join(base, 's1', 't1', 'cgroup.procs')]);
      writeFileSync(join(base, 's1', 't1', 'memory.events'), 'low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n');
      writeFileSync(join(base, 's1', 't1', 'pids.events'), 'max 2\n');
      writeFileSync(join(base, 's1', 't1', 'cpu.stat'), 'usage_usec 1500\nuser_usec 1000\n');
      expect(command.counters()).toEqual({ oomKills: 1, forkFailures: 2, cpuMicros: 1500 });
      expect(command.memoryLimitHits()).toBe(3);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });
});
