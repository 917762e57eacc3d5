/**
 * The bash executor with the lifeline sidecar as its spawner (as `createErrandRuntime` assembles it on
 * Linux): the same exit facts, tree kills, output cap, spawn failures and durable commands as a direct
 * spawn, a cancel before the sidecar answered, and commands still started once the sidecar died.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  capturingLogger,
  fixtureCommand,
  isAlive,
  pidsAfter,
  strayProcesses,
  waitForOutput,
} from '../../../test/fixtures/bash/index.js';
import { Lifeline, SidecarLauncher } from '../../process/index.js';
import { systemClock } from '../../tasks/clock.js';
import { BashExecutor } from './executor.js';
import type { BashExecutorOptions } from './executor-options.js';

let executors: BashExecutor[] = [];
let lifelines: Lifeline[] = [];

/** An executor whose launcher is a sidecar that said `ready` (before that, launches are direct spawns). */
async function executor(options: BashExecutorOptions = {}): Promise<{
  run: BashExecutor;
  lifeline: Lifeline;
  logger: ReturnType<typeof capturingLogger>;
}> {
  const logger = capturingLogger();
  const lifeline = new Lifeline({ clock: systemClock, logger });
  lifelines.push(lifeline);
  expect(await lifeline.ready).toBe(true);
  const launcher = new SidecarLauncher({ lifeline, clock: systemClock, logger });
  const run = new BashExecutor({
    logger,
    killGraceMs: 500,
    durablePollMs: 20,
    lifeline,
    launcher,
    ...options,
  });
  executors.push(run);
  return { run, lifeline, logger };
}

function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** Sidecars a test stopped: continued after it whatever happened, before anything waits on them. */
const stopped = new Set<number>();

afterEach(async () => {
  for (const pid of stopped) {
    try {
      process.kill(pid, 'SIGCONT');
    } catch {
      // Gone already.
    }
  }
  stopped.clear();
  await Promise.all(executors.map((created) => created.dispose()));
  await Promise.all(lifelines.map((lifeline) => lifeline.release()));
  executors = [];
  lifelines = [];
});

describe('the executor with the spawner sidecar', () => {
  it('reports exit codes, signals and output of commands the sidecar started', async () => {
    const { run, lifeline } = await executor();
    const handle = run.start({ command: 'echo "parent $PPID"; echo oops >&2; exit 3' });
    const facts = await handle.stopped;
    expect(facts).toMatchObject({ reason: 'completed', exitCode: 3, signal: null });
    expect(facts.pid).toBe(handle.pid);
    expect(handle.read().text.split('\n').sort()).toEqual(['', 'oops', `parent ${lifeline.pid}`]);
    expect(await run.start({ command: 'kill -SEGV $$' }).stopped).toMatchObject({
      exitCode: null,
      signal: 'SIGSEGV',
    });
  });

  it('kills a whole tree whose grandchildren hold the pipe', async () => {
    const { run, lifeline } = await executor({ killGraceMs: 10_000 });
    const handle = run.start({ command: fixtureCommand('hold-pipe') });
    const children = pidsAfter(await waitForOutput(handle, 'ready'), 'children');
    expect(parentOf(handle.pid!)).toBe(lifeline.pid);
    handle.cancel('test');
    expect(await handle.stopped).toMatchObject({ reason: 'cancelled', escalated: false, survivors: [] });
    expect(children.filter(isAlive)).toEqual([]);
    await lifeline.release();
    expect(strayProcesses()).toEqual([]);
  });

  it('carries out a cancel and a deadline given before the sidecar said the command runs', async () => {
    const { run } = await executor();
    const cancelled = run.start({ command: 'exec sleep 1000' });
    expect(cancelled.pid).toBeUndefined();
    cancelled.cancel('at once');
    const late = run.start({ command: 'exec sleep 1000', timeoutMs: 1 });
    expect(await cancelled.stopped).toMatchObject({ reason: 'cancelled', survivors: [] });
    expect(await late.stopped).toMatchObject({ reason: 'timed_out', survivors: [] });
  });

  it('an exit heard before the sidecar reaps the shell still sweeps its group, untagged members too', async () => {
    const { run, lifeline } = await executor();
    const gate = join(mkdtempSync(join(tmpdir(), 'errand-reap-gate-')), 'go');
    // A member of the shell's group that carries no tag (its environment cleared) and holds no pipe.
    const handle = run.start({
      command: `env -i /bin/sleep 1000 >/dev/null 2>&1 & echo "leftover $!"; echo ready >&2; while [ ! -e ${gate} ]; do sleep 0.01; done`,
    });
    // Output on both pipes (the two lines may arrive in either order): both reached this process.
    await waitForOutput(handle, 'ready');
    const leftover = pidsAfter(await waitForOutput(handle, /leftover \d+\n/), 'leftover')[0]!;
    expect(isAlive(leftover)).toBe(true);
    // Stopped, the sidecar can neither reap the shell nor tell of its exit: the exit comes from the table
    // while the shell is a zombie, whose group is still its own.
    stopped.add(lifeline.pid!);
    process.kill(lifeline.pid!, 'SIGSTOP');
    try {
      writeFileSync(gate, '');
      const facts = await handle.stopped;
      expect(facts).toMatchObject({ reason: 'completed', exitCode: 0, survivors: [] });
      expect(facts.signalledProcesses).toBeGreaterThanOrEqual(1);
      expect(isAlive(leftover)).toBe(false);
    } finally {
      process.kill(lifeline.pid!, 'SIGCONT');
      if (isAlive(leftover)) process.kill(leftover, 'SIGKILL');
      rmSync(dirname(gate), { recursive: true, force: true });
    }
  });

  it('stops a command at the output cap, exactly at the cap', async () => {
    const cap = 1024 * 1024;
    const { run } = await executor({ maxOutputFileBytes: cap });
    const facts = await run.start({ command: 'head -c 50000000 /dev/zero' }).stopped;
    expect(facts).toMatchObject({ reason: 'output_limit', outputBytes: cap, outputLimitBytes: cap });
    expect(statSync(facts.outputFile!).size).toBe(cap);
  });

  it('fails to start in a missing directory or with a missing shell, as with a direct spawn', async () => {
    const { run } = await executor();
    const missingDirectory = await run.start({ command: 'true', cwd: '/nonexistent/errand' }).stopped;
    expect(missingDirectory).toMatchObject({ reason: 'spawn_error', pid: null, errorCode: 'ENOENT' });
    expect(missingDirectory.error).toContain('the working directory "/nonexistent/errand" does not exist');
    const { run: noShell } = await executor({ shell: '/nonexistent/bash' });
    const missingShell = await noShell.start({ command: 'true' }).stopped;
    expect(missingShell).toMatchObject({ reason: 'spawn_error', pid: null, errorCode: 'ENOENT' });
    expect(missingShell.error).toContain('the shell "/nonexistent/bash" was not found');
  });

  it('runs a durable command with its exit status captured', async () => {
    const { run } = await executor();
    const handle = run.start({ command: 'echo one; exit 5', durable: true });
    expect(await handle.stopped).toMatchObject({ reason: 'completed', exitCode: 5 });
    expect(readFileSync(handle.outputFile!, 'utf8')).toBe('one\n');
  });

  it('once the sidecar is killed, settles the running commands and starts new ones itself', async () => {
    const { run, lifeline, logger } = await executor();
    const running = run.start({ command: 'echo ready; exec sleep 1000' });
    await waitForOutput(running, 'ready');
    process.kill(lifeline.pid!, 'SIGKILL');
    // Started right after the kill: the sidecar may or may not have been seen dead yet; either way it runs.
    const next = [1, 2, 3].map((code) => run.start({ command: `echo "parent $PPID"; exit ${code}` }));
    const ended = await Promise.all(next.map((handle) => handle.stopped));
    expect(ended.map((facts) => facts.exitCode)).toEqual([1, 2, 3]);
    const after = await run.start({ command: 'echo "parent $PPID"' }).stopped;
    expect(after).toMatchObject({ reason: 'completed', exitCode: 0 });
    running.cancel();
    expect(await running.stopped).toMatchObject({ reason: 'cancelled', survivors: [] });
    const fellBack = logger.warnings.filter((warning) => warning.message.includes('spawner sidecar is gone'));
    expect(fellBack).toHaveLength(1);
  });
});
