/**
 * The limiter on this machine: the setrlimit floor on real processes, the groups a killed runtime left
 * behind removed by the next one, a v1/v2 choice that cannot be met refused, and the groups' files.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { capturingLogger } from '../../../test/fixtures/bash/index.js';
import { cgroupSkipReason } from '../../../test/support/cgroups.js';
import { ErrandError } from '../../tasks/errors.js';
import { wrapInLimitShim } from './limit-shim.js';
import { ResourceLimiter } from './resource-limiter.js';

const limiters: ResourceLimiter[] = [];
afterEach(() => {
  for (const limiter of limiters.splice(0)) limiter.dispose();
});

function limiter(settings: ConstructorParameters<typeof ResourceLimiter>[0]): ResourceLimiter {
  const made = new ResourceLimiter({ logger: capturingLogger(), ...settings });
  limiters.push(made);
  return made;
}

/** Runs a launch request to its end (no group: under rlimit nothing is made). */
function run(request: { file: string; args: readonly string[] }): string {
  return execFileSync(request.file, [...request.args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

describe('the setrlimit floor', () => {
  it('sets RLIMIT_AS, RLIMIT_CPU (soft, and hard a second later) and RLIMIT_NPROC before the exec', () => {
    const floor = limiter({
      mechanism: 'rlimit',
      task: { memoryBytes: 256 * 1024 * 1024, cpuTimeMs: 1500, pids: 4000, cpus: 0.5 },
      session: { pids: 10 },
    });
    expect(floor.facts).toEqual({
      mechanism: 'rlimit',
      task: { memoryBytes: 256 * 1024 * 1024, cpuTimeMs: 1500, pids: 4000, cpus: 0.5 },
      session: { pids: 10 },
      unenforced: ['task.cpus', 'session.pids'],
    });
    const request = floor.open('s').confine({ file: 'cat', args: ['/proc/self/limits'], cwd: '/', env: {} });
    const limits = run(request);
    expect(limits).toMatch(/Max cpu time\s+2\s+3\s+seconds/);
    expect(limits).toMatch(/Max address space\s+268435456\s+268435456\s+bytes/);
    expect(limits).toMatch(/Max processes\s+4000\s+4000\s+processes/);
  });

  it('keeps the arguments as they were: nothing of them is read by the shell', () => {
    const request = wrapInLimitShim(
      { file: 'printf', args: ['%s|', '$HOME', '"; echo pwn', '--', ''], cwd: '/', env: {} },
      { procsFiles: [] },
    );
    expect(run(request)).toBe('$HOME|"; echo pwn|--||');
  });

  it('exits 125 without running the command when it cannot join its group', () => {
    const request = wrapInLimitShim(
      { file: 'echo', args: ['ran'], cwd: '/', env: {} },
      { procsFiles: ['/nonexistent/cgroup.procs'] },
    );
    let status: number | null = null;
    try {
      run(request);
    } catch (error) {
      status = (error as { status: number }).status;
      expect(String((error as { stdout: string }).stdout)).toBe('');
    }
    expect(status).toBe(125);
  });
});

describe.skipIf(cgroupSkipReason() !== undefined)('cgroups on this machine', () => {
  it('writes the limits into the command group and the session total into its parent', () => {
    const limits = limiter({
      task: { memoryBytes: 64 * 1024 * 1024, pids: 20, cpus: 0.5, cpuTimeMs: 1000 },
      session: { memoryBytes: 128 * 1024 * 1024, pids: 40 },
    });
    const launch = limits.open('session-1');
    const request = launch.confine({ file: 'true', args: [], cwd: '/', env: {} });
    const procs = request.args.slice(3, request.args.indexOf('--'));
    expect(procs.length).toBeGreaterThan(0);
    const dirs = procs.map((file) => file.slice(0, -'/cgroup.procs'.length));
    const read = (name: string) => {
      const dir = dirs.find((candidate) => existsSync(join(candidate, name)));
      return dir === undefined ? undefined : readFileSync(join(dir, name), 'utf8').trim();
    };
    const readParent = (name: string) => {
      const dir = dirs.find((candidate) => existsSync(join(candidate, '..', name)));
      return dir === undefined ? undefined : readFileSync(join(dir, '..', name), 'utf8').trim();
    };
    if (limits.mechanism === 'cgroup-v1') {
      expect(read('memory.limit_in_bytes')).toBe(String(64 * 1024 * 1024));
      expect(read('cpu.cfs_quota_us')).toBe('50000');
      expect(readParent('memory.limit_in_bytes')).toBe(String(128 * 1024 * 1024));
    } else {
      expect(read('memory.max')).toBe(String(64 * 1024 * 1024));
      expect(read('cpu.max')).toBe('50000 100000');
      expect(readParent('memory.max')).toBe(String(128 * 1024 * 1024));
    }
    expect(read('pids.max')).toBe('20');
    expect(readParent('pids.max')).toBe('40');
    void launch.release();
  });

  it('removes the groups of a runtime that is gone, and only those', () => {
    const first = limiter({ task: { pids: 50 } });
    const [base] = first.directories.map((dir) => join(dir, '..'));
    // A runtime killed with SIGKILL leaves `errand-<pid>-<random>` with its commands' groups in it.
    const dead = join(base!, 'errand-999999999-abcdef');
    mkdirSync(join(dead, 's1', 't1'), { recursive: true });
    const unrelated = join(base!, 'errand-not-a-runtime');
    mkdirSync(unrelated);
    try {
      limiter({ task: { pids: 50 } });
      expect(existsSync(dead)).toBe(false);
      expect(existsSync(unrelated)).toBe(true);
      // A live runtime's group stays.
      expect(first.directories.every((dir) => existsSync(dir))).toBe(true);
    } finally {
      execFileSync('rmdir', [unrelated]);
    }
  });

  it('removes its own groups when disposed', () => {
    const limits = limiter({ task: { memoryBytes: 64 * 1024 * 1024 }, session: { pids: 64 } });
    limits.open('a').confine({ file: 'true', args: [], cwd: '/', env: {} });
    const directories = limits.directories;
    limits.dispose();
    for (const dir of directories) expect(existsSync(dir)).toBe(false);
  });

  it('refuses a mechanism it cannot give, naming it', () => {
    let thrown: unknown;
    try {
      limiter({ task: { pids: 10 }, mechanism: 'cgroup-v2', cgroupRoot: '/nonexistent/cgroup' });
    } catch (error) {
      thrown = error;
    }
    expect(ErrandError.hasCode(thrown, 'LIMITS_UNAVAILABLE')).toBe(true);
    expect(String(thrown)).toContain('cgroup-v2');
  });
});
