/**
 * The lifeline, from outside: a library host (a child Node process running `createErrandRuntime`) is
 * killed with SIGKILL while its background commands run, and every process of their trees — TERM
 * ignorers, setsid escapees, double-forked daemons, grandchildren — must be gone within 2 s, counted
 * through /proc by a marker only this test's processes carry.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  CRASH_MARK_VARIABLE,
  hardTrees,
  isRunning,
  killMarked,
  markedPids,
  newMark,
  startRuntimeChild,
  survivorsAfter,
} from '../../test/support/crash.js';
import { scriptedModel } from '../testing/index.js';
import { createErrandRuntime } from './errand-runtime.js';

const homes: string[] = [];
const marks: string[] = [];

afterEach(() => {
  for (const mark of marks.splice(0)) killMarked(mark);
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
});

function temporaryHome(): string {
  const home = mkdtempSync(join(tmpdir(), 'errand-lifeline-'));
  homes.push(home);
  return home;
}

function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

function mark(): string {
  const value = newMark();
  marks.push(value);
  return value;
}

describe('the lifeline of a library host', () => {
  it('stops every process of 50 hard trees within 2 s of a SIGKILL of the host', async () => {
    const crash = mark();
    const host = await startRuntimeChild(
      { home: temporaryHome(), commands: hardTrees(50), ready: 'ready' },
      crash,
    );
    expect(host.tasks.size).toBe(50);
    // The host spawned them: they are its children, and the sidecar still stops them when the host dies.
    for (const pid of host.tasks.values()) expect(parentOf(pid)).toBe(host.child.pid);
    // The trees, their escapees and grandchildren, the host and its sidecar.
    const before = markedPids(crash);
    expect(before.length).toBeGreaterThanOrEqual(50 + 10 + 10 + 20 + 2);
    const killedAt = performance.now();
    await host.kill();
    const { survivors, elapsedMs } = await survivorsAfter(crash, killedAt, 2000);
    expect(survivors).toEqual([]);
    expect(elapsedMs).toBeLessThan(2000);
  });

  it('restarts a sidecar that died while the host lives, and the new one stops the trees', async () => {
    const crash = mark();
    const host = await startRuntimeChild(
      { home: temporaryHome(), commands: hardTrees(5), ready: 'ready' },
      crash,
    );
    const first = host.lifelinePid!;
    process.kill(first, 'SIGKILL');
    // The host starts another sidecar (it carries the marker too: it inherits the host's environment).
    const second = await waitFor(() => markedPids(crash).find((pid) => pid !== first && isSidecar(pid)));
    expect(second).not.toBe(first);
    const killedAt = performance.now();
    await host.kill();
    const { survivors } = await survivorsAfter(crash, killedAt, 2000);
    expect(survivors).toEqual([]);
  });

  it('stops a tree it was never told about, found by the runtime tag alone', async () => {
    const crash = mark();
    const child = spawn(
      process.execPath,
      [new URL('../../test/fixtures/host/lifeline-child.mjs', import.meta.url).pathname],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
        env: { ...process.env, [CRASH_MARK_VARIABLE]: crash },
      },
    );
    const line = await new Promise<string>((resolve) => {
      let text = '';
      child.stdout.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        if (text.includes('\n')) resolve(text);
      });
    });
    const untold = Number(/READY (\d+)/.exec(line)![1]);
    expect(isRunning(untold)).toBe(true);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const killedAt = performance.now();
    child.kill('SIGKILL');
    await exited;
    const { survivors } = await survivorsAfter(crash, killedAt, 2000);
    expect(survivors).toEqual([]);
  });

  it('a clean exit stops the sidecar without it stopping anything', async () => {
    const runtime = await createErrandRuntime({
      model: scriptedModel([]),
      home: temporaryHome(),
      pty: false,
      subagents: false,
      logger: { warn() {} },
    });
    expect(await runtime.lifeline!.ready).toBe(true);
    const sidecar = runtime.lifeline!.pid!;
    const session = runtime.createSession();
    const started = await runtime.bash.start({ command: 'exec sleep 1000', owner: session.owner });
    const statusFile = runtime.bash.handleOf(started.taskId)!.statusFile!;
    await runtime.dispose();
    expect(isRunning(sidecar)).toBe(false);
    expect(isRunning(started.handle.pid!)).toBe(false);
    // The runtime stopped its command itself: the sidecar recorded no stop of its own.
    expect(existsSync(statusFile)).toBe(false);
  });
});

function isSidecar(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes('lifeline-sidecar');
  } catch {
    return false;
  }
}

async function waitFor<T>(probe: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
