/**
 * Resource limits on real commands in real cgroups: a memory hog, a fork bomb and a CPU spinner are each
 * stopped with their limit's reason; a command within its limits is unaffected; every group is removed
 * once its command has stopped, and the runtime's when the executor is disposed.
 */
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { capturingLogger, isAlive } from '../../../test/fixtures/bash/index.js';
import { findBubblewrap } from '../../../test/support/bubblewrap.js';
import { cgroupSkipReason } from '../../../test/support/cgroups.js';
import { BashExecutor } from './executor.js';
import type { BashExecutorOptions } from './executor-options.js';

const skip = cgroupSkipReason();
const MiB = 1024 * 1024;

let executors: BashExecutor[] = [];

function executor(options: BashExecutorOptions = {}): BashExecutor {
  const created = new BashExecutor({ logger: capturingLogger(), killGraceMs: 500, ...options });
  executors.push(created);
  return created;
}

/** Every directory under a runtime group (its sessions' and commands'), innermost last. */
function groupsUnder(directories: readonly string[]): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    if (!existsSync(dir)) return;
    found.push(dir);
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(`${dir}/${entry.name}`);
    }
  };
  for (const dir of directories) walk(dir);
  return found;
}

afterEach(async () => {
  await Promise.all(executors.map((created) => created.dispose()));
  executors = [];
});

const HOG = `python3 -c 'a = []
while True: a.append(bytearray(1 << 20))'`;

describe.skipIf(skip !== undefined)('resource limits in cgroups', () => {
  it('stops a memory hog with memory_limit and removes its group', async () => {
    const run = executor({ resourceLimits: { task: { memoryBytes: 64 * MiB } } });
    expect(run.limitFacts?.mechanism).toMatch(/^cgroup-v[12]$/);
    const handle = run.start({ command: HOG });
    const facts = await handle.stopped;
    expect(facts.reason).toBe('memory_limit');
    expect(facts.limitBreach).toEqual({ reason: 'memory_limit', scope: 'task', limit: 64 * MiB });
    // Only the runtime's own group is left once the command stopped.
    expect(groupsUnder(limiterDirectories(run))).toEqual(limiterDirectories(run));
  });

  it('bounds a fork bomb with pids_limit and leaves none of its processes', async () => {
    const run = executor({ resourceLimits: { task: { pids: 32 } } });
    const handle = run.start({ command: 'bomb() { bomb | bomb & }; bomb; wait' });
    const facts = await handle.stopped;
    expect(facts.reason).toBe('pids_limit');
    expect(facts.limitBreach).toEqual({ reason: 'pids_limit', scope: 'task', limit: 32 });
    expect(facts.survivors).toEqual([]);
    expect(groupsUnder(limiterDirectories(run))).toEqual(limiterDirectories(run));
  });

  it('stops a CPU spinner with cpu_limit after its CPU time', async () => {
    const run = executor({ resourceLimits: { task: { cpuTimeMs: 300 }, pollMs: 20 } });
    // CPU time needs no controller: on a hybrid host (v1 controllers, an empty v2) this is the v2 path.
    expect(run.limitFacts?.mechanism).toMatch(/^cgroup-v[12]$/);
    const handle = run.start({ command: 'while :; do :; done' });
    const facts = await handle.stopped;
    expect(facts.reason).toBe('cpu_limit');
    expect(facts.limitBreach).toEqual({ reason: 'cpu_limit', scope: 'task', limit: 300 });
  });

  it('leaves a command within its limits alone', async () => {
    const run = executor({
      resourceLimits: { task: { memoryBytes: 256 * MiB, pids: 64, cpuTimeMs: 60_000, cpus: 1 } },
    });
    const handle = run.start({
      command: `python3 -c 'a = bytearray(16 << 20); print(len(a))'; for i in 1 2 3; do echo $i & done; wait`,
    });
    const facts = await handle.stopped;
    expect(facts).toMatchObject({ reason: 'completed', exitCode: 0, signal: null });
    expect(facts.limitBreach ?? null).toBeNull();
    expect(handle.read().text.split('\n').sort()).toEqual(['', '1', '16777216', '2', '3']);
  });

  it('puts the command in its group before it runs: /proc/self/cgroup names the group', async () => {
    const run = executor({ resourceLimits: { task: { memoryBytes: 128 * MiB } } });
    const handle = run.start({ command: 'cat /proc/self/cgroup' });
    await handle.stopped;
    const name = limiterDirectories(run)[0]!.split('/').pop()!;
    expect(handle.read().text).toMatch(new RegExp(`${name}/t\\d+\\n`));
  });

  it('holds a session total across the commands of one limit group', async () => {
    const run = executor({ resourceLimits: { session: { pids: 12 } } });
    const sleeper = run.start({
      command: 'for i in 1 2 3 4 5 6 7 8; do sleep 30 & done; echo started; wait',
      limitGroup: 'session-a',
    });
    await expect.poll(() => sleeper.read().text, { timeout: 10_000 }).toContain('started');
    // Another session's commands are not counted against it.
    const other = run.start({
      command: 'for i in 1 2 3 4 5 6; do true & done; wait',
      limitGroup: 'session-b',
    });
    expect((await other.stopped).reason).toBe('completed');
    const second = run.start({
      command: 'for i in 1 2 3 4 5 6; do sleep 30 & done; wait',
      limitGroup: 'session-a',
    });
    const facts = await second.stopped;
    expect(facts.reason).toBe('pids_limit');
    expect(facts.limitBreach).toEqual({ reason: 'pids_limit', scope: 'session', limit: 12 });
    sleeper.cancel();
    expect((await sleeper.stopped).reason).toBe('cancelled');
  });

  it('kills at the removal of its group a daemon the census cannot see (no tag, own session, orphaned)', async () => {
    const run = executor({ resourceLimits: { task: { pids: 64 } } });
    const pidFile = `${tmpdir()}/errand-limits-daemon-${process.pid}-${Date.now()}`;
    // env -i drops the tree's tag, setsid leaves its session and group, the subshell's exit orphans it.
    const handle = run.start({
      command: `(env -i setsid sh -c 'echo $$ > ${pidFile}; exec sleep 600' &) ; while [ ! -s ${pidFile} ]; do sleep 0.01; done`,
    });
    const facts = await handle.stopped;
    expect(facts.reason).toBe('completed');
    const daemon = Number(readFileSync(pidFile, 'utf8'));
    rmSync(pidFile, { force: true });
    expect(daemon).toBeGreaterThan(0);
    // It was in the command's group, and the group's removal killed it: nothing it forked escapes.
    await expect.poll(() => isAlive(daemon), { timeout: 5000 }).toBe(false);
    expect(groupsUnder(limiterDirectories(run))).toEqual(limiterDirectories(run));
  });

  it.skipIf(findBubblewrap() === undefined)(
    'composes with the sandbox: bwrap and everything inside it are in the group (a hog inside is killed)',
    async () => {
      const run = executor({
        sandbox: 'read-only',
        resourceLimits: { task: { pids: 32, memoryBytes: 64 * MiB } },
      });
      const hog = run.start({ command: HOG });
      expect((await hog.stopped).reason).toBe('memory_limit');
      expect(groupsUnder(limiterDirectories(run))).toEqual(limiterDirectories(run));
    },
  );

  it('removes the runtime group when the executor is disposed', async () => {
    const run = executor({ resourceLimits: { task: { memoryBytes: 64 * MiB }, session: { pids: 100 } } });
    const handle = run.start({ command: 'sleep 30', limitGroup: 's' });
    await handle.spawned;
    const directories = limiterDirectories(run);
    expect(groupsUnder(directories).length).toBeGreaterThan(directories.length);
    await run.dispose();
    for (const dir of directories) expect(existsSync(dir)).toBe(false);
  });
});

describe('resource limits with the setrlimit floor', () => {
  it('stops a CPU spinner with cpu_limit once RLIMIT_CPU sends SIGXCPU', async () => {
    const run = executor({ resourceLimits: { task: { cpuTimeMs: 1000 }, mechanism: 'rlimit' } });
    expect(run.limitFacts?.mechanism).toBe('rlimit');
    const handle = run.start({ command: 'exec bash -c "while :; do :; done"' });
    const facts = await handle.stopped;
    expect(facts).toMatchObject({ reason: 'cpu_limit', signal: 'SIGXCPU' });
    expect(facts.limitBreach).toEqual({ reason: 'cpu_limit', scope: 'task', limit: 1000 });
  });

  it('makes an allocation past RLIMIT_AS fail inside the command, which ends on its own', async () => {
    const run = executor({ resourceLimits: { task: { memoryBytes: 256 * MiB }, mechanism: 'rlimit' } });
    const handle = run.start({
      command: `python3 -c 'bytearray(512 << 20)' 2>&1 | tail -1; python3 -c 'print(len(bytearray(16 << 20)))'`,
    });
    const facts = await handle.stopped;
    // No kill to observe: the command sees the failure itself (the floor says nothing more).
    expect(facts).toMatchObject({ reason: 'completed', exitCode: 0 });
    expect(handle.read().text).toBe('MemoryError\n16777216\n');
  });

  it('leaves the default path alone: no limits, no shim', async () => {
    const run = executor({ resourceLimits: { task: {} } });
    expect(run.resourceLimiter).toBeUndefined();
    const handle = run.start({ command: 'cat /proc/$$/cmdline | tr "\\0" " "' });
    await handle.stopped;
    expect(handle.read().text).not.toContain('errand-limits');
  });
});

/** The runtime group's directories (one per hierarchy under cgroup v1). */
function limiterDirectories(run: BashExecutor): string[] {
  return run.resourceLimiter?.directories ?? [];
}
