/**
 * The spawner sidecar against real processes: the command's pipes come back to this process (streams,
 * many at once, backpressure), its exit comes once the sidecar reaped it, a spawn fails with the errors a
 * direct spawn gives (spawned without a fork, and with child_process under ERRAND_NODE_SPAWN=1), and a sidecar killed mid-run leaves running commands to end and later launches to
 * this process. A sidecar that dies before it answered a launch: the command is started here when no
 * process carries its tag, and is not run twice when one does, even one whose tag shows only later.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { isAlive } from '../../test/fixtures/bash/index.js';
import { bashRequest as bash, ended, pipeLinks } from '../../test/fixtures/process/launches.js';
import { systemClock } from '../tasks/clock.js';
import { readStatusFile } from './exit-status-file.js';
import { Lifeline } from './lifeline.js';
import { NODE_SPAWN_VARIABLE } from './native-spawn.js';
import { createSpawnLauncher, type LaunchedProcess } from './process-launcher.js';
import { procfsSource } from './process-table.js';
import { SidecarLauncher } from './sidecar-launcher.js';

interface Warning {
  readonly message: string;
}

const lifelines: Lifeline[] = [];

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
  await Promise.all(lifelines.splice(0).map((lifeline) => lifeline.release()));
});

/** A lifeline whose sidecar said `ready` (before that, launches are direct spawns), and its launcher. */
async function spawner(): Promise<{ launcher: SidecarLauncher; lifeline: Lifeline; warnings: Warning[] }> {
  const warnings: Warning[] = [];
  const logger = { warn: (message: string) => warnings.push({ message }) };
  const lifeline = new Lifeline({ clock: systemClock, logger });
  lifelines.push(lifeline);
  expect(await lifeline.ready).toBe(true);
  return { launcher: new SidecarLauncher({ lifeline, clock: systemClock, logger }), lifeline, warnings };
}

const DYING_SPAWNER = resolve(
  dirname(fileURLToPath(import.meta.url)),
  '../../test/fixtures/process/dying-spawner.mjs',
);

/**
 * A lifeline whose sidecar is `dying-spawner.mjs` in `mode` (it dies on its first spawn request without
 * answering), and a launcher that waits `settleMs` before looking at the launches it left.
 */
async function dyingSpawner(
  mode: 'silent' | 'late-tag',
  settleMs: number,
): Promise<{ launcher: SidecarLauncher; warnings: Warning[] }> {
  const warnings: Warning[] = [];
  const logger = { warn: (message: string) => warnings.push({ message }) };
  const previous = process.env.ERRAND_TEST_SPAWNER;
  process.env.ERRAND_TEST_SPAWNER = mode;
  try {
    const lifeline = new Lifeline({ clock: systemClock, logger, sidecarScript: DYING_SPAWNER });
    lifelines.push(lifeline);
    expect(await lifeline.ready).toBe(true);
    const launcher = new SidecarLauncher({
      lifeline,
      clock: systemClock,
      logger,
      unansweredSettleMs: settleMs,
    });
    return { launcher, warnings };
  } finally {
    if (previous === undefined) delete process.env.ERRAND_TEST_SPAWNER;
    else process.env.ERRAND_TEST_SPAWNER = previous;
  }
}

function linesOf(path: string): string[] {
  try {
    return readFileSync(path, 'utf8')
      .split('\n')
      .filter((line) => line !== '');
  } catch {
    return [];
  }
}

function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

describe('SidecarLauncher', () => {
  it('starts the command in the sidecar, in its own session and group, tagged, and streams both pipes', async () => {
    const { launcher, lifeline } = await spawner();
    const child = launcher.launch(
      bash(
        'cut -d" " -f1,4,5,6 /proc/$$/stat; echo "$ERRAND_TEST_TAG"; readlink /proc/$$/fd/0; echo e >&2; exit 3',
      ),
    );
    const result = await ended(child);
    const [ids, tag, stdin] = result.stdout.trim().split('\n');
    const [pid, parent, group, session] = ids!.split(' ').map(Number);
    expect(pid).toBe(child.pid);
    expect(parent).toBe(lifeline.pid);
    expect(group).toBe(pid);
    expect(session).toBe(pid);
    expect(tag).toMatch(/^tree-/);
    expect(stdin).toBe('/dev/null');
    expect(result).toMatchObject({ stderr: 'e\n', code: 3, signal: null });
  });

  it('spawns directly until the sidecar said ready: no start waits for the sidecar to boot', async () => {
    const logger = { warn: () => {} };
    const lifeline = new Lifeline({ clock: systemClock, logger });
    lifelines.push(lifeline);
    const launcher = new SidecarLauncher({ lifeline, clock: systemClock, logger });
    const early = launcher.launch(bash('echo $PPID'));
    expect(early.pid).toBeGreaterThan(0);
    expect(Number((await ended(early)).stdout.trim())).toBe(process.pid);
    await lifeline.ready;
    expect(Number((await ended(launcher.launch(bash('echo $PPID')))).stdout.trim())).toBe(lifeline.pid);
  });

  it('hears an exit from the process table once both pipes ended, before the sidecar reaps it', async () => {
    const { launcher, lifeline } = await spawner();
    const gate = join(mkdtempSync(join(tmpdir(), 'errand-sidecar-gate-')), 'go');
    // Output on both pipes proves both reached this process; then it waits for the gate.
    const child = launcher.launch(
      bash(`echo ready; echo ready >&2; while [ ! -e ${gate} ]; do sleep 0.01; done; exit 7`),
    );
    const heard = { stdout: false, stderr: false };
    const bothHeard = new Promise<void>((resolve) => {
      for (const name of ['stdout', 'stderr'] as const) {
        child[name]!.once('data', () => {
          heard[name] = true;
          if (heard.stdout && heard.stderr) resolve();
        });
      }
    });
    const result = ended(child);
    await bothHeard;
    // A stopped sidecar neither reaps the command nor says anything: only the table can tell its exit.
    stopped.add(lifeline.pid!);
    process.kill(lifeline.pid!, 'SIGSTOP');
    try {
      writeFileSync(gate, '');
      expect(await result).toMatchObject({ code: 7, signal: null });
    } finally {
      process.kill(lifeline.pid!, 'SIGCONT');
      rmSync(dirname(gate), { recursive: true, force: true });
    }
  });

  it('says nothing of commands in flight at a release when the only one left had its exit heard already', async () => {
    const { launcher, lifeline, warnings } = await spawner();
    const directory = mkdtempSync(join(tmpdir(), 'errand-sidecar-gate-'));
    const gate = join(directory, 'go');
    try {
      const child = launcher.launch(bash(`echo ready; while [ ! -e ${gate} ]; do sleep 0.01; done; exit 3`));
      const result = ended(child);
      await new Promise((resolve) => child.stdout!.once('data', resolve));
      // Stopped, the sidecar can neither reap the command nor say `exited`: the table tells this exit.
      const sidecar = lifeline.pid!;
      stopped.add(sidecar);
      process.kill(sidecar, 'SIGSTOP');
      writeFileSync(gate, '');
      expect(await result).toMatchObject({ code: 3, signal: null });
      const releasing = lifeline.release();
      process.kill(sidecar, 'SIGKILL');
      await releasing;
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
    expect(warnings.filter((warning) => warning.message.includes('spawner sidecar is gone'))).toEqual([]);
  });

  it('has the sidecar watch a tree from its spawn: stopped when the runtime dies before it said a word', async () => {
    const { launcher, lifeline } = await spawner();
    const directory = mkdtempSync(join(tmpdir(), 'errand-watch-'));
    const statusFile = join(directory, 'tree.status');
    // No lifeline tag in its environment, and nobody calls `watch`: only the spawn's own watch covers it.
    const child = launcher.launch({
      ...bash('echo up; exec sleep 1000'),
      watch: { startTime: procfsSource().clockTicks(), statusFile },
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      await new Promise<void>((resolve) => child.once('spawn', () => resolve()));
      expect(child.unwatch).toBeTypeOf('function');
      // The runtime's end as the sidecar sees it: its stdin closes.
      lifeline.sidecar!.stdin!.destroy();
      await exited;
      expect(readStatusFile(statusFile)).toMatchObject({ kind: 'stopped', by: 'lifeline' });
    } finally {
      if (child.pid !== undefined && isAlive(child.pid)) process.kill(-child.pid, 'SIGKILL');
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('reports the signal that ended the process', async () => {
    const { launcher } = await spawner();
    expect(await ended(launcher.launch(bash('kill -SEGV $$')))).toMatchObject({
      code: null,
      signal: 'SIGSEGV',
    });
  });

  it('loses no byte of 50 commands started at once that write at once to both pipes', async () => {
    const { launcher } = await spawner();
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, index) =>
        ended(
          launcher.launch(
            bash(`printf out${index}; printf err${index} >&2; head -c 100000 /dev/zero | tr '\\0' x`),
          ),
        ),
      ),
    );
    results.forEach((result, index) => {
      expect(result.stdout.slice(0, `out${index}`.length)).toBe(`out${index}`);
      expect(result.stdout.length).toBe(`out${index}`.length + 100_000);
      expect(result.stderr).toBe(`err${index}`);
      expect(result.code).toBe(0);
    });
  });

  it('keeps backpressure: a paused reader blocks the command, which writes on once it reads again', async () => {
    const { launcher } = await spawner();
    // The writer uses a non-blocking pipe: it reports how much it wrote when the pipe first was full.
    const writer = [
      'import os, sys, fcntl, errno',
      'fd = 1',
      'fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)',
      'chunk = b"x" * 65536',
      'written = 0',
      'while written < 64 * 1048576:',
      '    try:',
      '        written += os.write(fd, chunk)',
      '    except BlockingIOError:',
      '        break',
      'sys.stderr.write(f"blocked {written}\\n"); sys.stderr.flush()',
      'fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)',
      'os.write(fd, b"end")',
    ].join('\n');
    const child = launcher.launch({ ...bash(''), file: 'python3', args: ['-c', writer] });
    child.stdout!.pause();
    const blocked = await new Promise<number>((resolve) => {
      let text = '';
      child.stderr!.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        const match = /blocked (\d+)\n/.exec(text);
        if (match) resolve(Number(match[1]));
      });
    });
    // The pipe (64 KiB) and the two stream buffers in this process hold it all: it never reached 64 MiB.
    expect(blocked).toBeLessThan(2 * 1024 * 1024);
    let read = '';
    const closed = new Promise((resolve) => child.stdout!.once('close', resolve));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.stdout!.on('data', (chunk: Buffer) => {
      read += chunk.toString();
    });
    child.stdout!.resume();
    const [exit] = await Promise.all([exited, closed]);
    expect(exit).toBe(0);
    expect(read.length).toBe(blocked + 3);
    expect(read.endsWith('end')).toBe(true);
  });

  it('fails a spawn with the error a direct spawn gives (missing directory, missing program)', async () => {
    const { launcher } = await spawner();
    const errorOf = (child: LaunchedProcess) =>
      new Promise<NodeJS.ErrnoException>((resolve) => child.on('error', (error) => resolve(error)));
    for (const request of [
      bash('true', '/nonexistent/errand'),
      { ...bash('true'), file: '/nonexistent/bash' },
    ]) {
      const viaSidecar = launcher.launch(request);
      const error = await errorOf(viaSidecar);
      const direct = await errorOf(createSpawnLauncher().launch(request));
      expect(viaSidecar.pid).toBeUndefined();
      expect({ message: error.message, code: error.code, syscall: error.syscall, path: error.path }).toEqual({
        message: direct.message,
        code: direct.code,
        syscall: direct.syscall,
        path: direct.path,
      });
    }
  });

  it('when the sidecar is killed mid-run, running commands still end and later launches spawn directly', async () => {
    const { launcher, lifeline, warnings } = await spawner();
    const running = launcher.launch(bash('echo started; exec sleep 1000'));
    const result = ended(running);
    await new Promise<void>((resolve) => running.stdout!.once('data', () => resolve()));
    const sidecar = lifeline.pid!;
    expect(parentOf(running.pid!)).toBe(sidecar);
    process.kill(sidecar, 'SIGKILL');
    await new Promise<void>((resolve) => {
      const check = () => (launcher.active ? setTimeout(check, 5) : resolve());
      check();
    });
    const later = await Promise.all(
      [1, 2].map((code) => ended(launcher.launch(bash(`echo $PPID; exit ${code}`)))),
    );
    expect(later.map((each) => each.code)).toEqual([1, 2]);
    for (const each of later) expect(Number(each.stdout.trim())).toBe(process.pid);
    // The orphan is not ours to reap: it ends with an unknown status once it is gone.
    process.kill(-running.pid!, 'SIGTERM');
    expect(await result).toMatchObject({ code: null, signal: null });
    expect(warnings.filter((warning) => warning.message.includes('spawner sidecar is gone'))).toHaveLength(1);
  });
  it('starts a launch the dying sidecar never started here, once, and streams it', async () => {
    const { launcher, warnings } = await dyingSpawner('silent', 50);
    const directory = mkdtempSync(join(tmpdir(), 'errand-dying-spawner-'));
    const pipesBefore = pipeLinks();
    try {
      const counter = join(directory, 'runs');
      const child = launcher.launch(bash(`echo ran >> ${counter}; echo out; echo err >&2; exit 3`));
      expect(await ended(child)).toEqual({ stdout: 'out\n', stderr: 'err\n', code: 3, signal: null });
      expect(linesOf(counter)).toEqual(['ran']);
      // The pipes made for the sidecar were closed when it died; the relaunch's own ended with it.
      expect(pipeLinks()).toEqual(pipesBefore);
      expect(launcher.active).toBe(false);
      expect(warnings.filter((warning) => warning.message.includes('spawner sidecar is gone'))).toHaveLength(
        1,
      );
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('does not run a launch twice when the dying sidecar started it, though its tag showed only later', async () => {
    // The command the sidecar started carries its tag only after 0.3 s; the launcher looks after 1.5 s.
    const { launcher } = await dyingSpawner('late-tag', 1500);
    const directory = mkdtempSync(join(tmpdir(), 'errand-dying-spawner-'));
    const request = bash(`echo ran >> ${join(directory, 'runs')}; exec sleep 1000`);
    try {
      const child = launcher.launch(request);
      // Started here as well, it would say `spawn`: that ends the wait too, and the test fails.
      const outcome = await new Promise<NodeJS.ErrnoException | 'spawned'>((resolve) => {
        child.on('error', resolve);
        child.once('spawn', () => resolve('spawned'));
      });
      expect(outcome).not.toBe('spawned');
      expect((outcome as NodeJS.ErrnoException).code).toBe('ESPAWNER');
      expect(child.pid).toBeUndefined();
      // Nothing more is started for it: the one run is the sidecar's.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(linesOf(join(directory, 'runs'))).toEqual(['ran']);
    } finally {
      // The command carries the tag, and the shell that has yet to start it names it in its arguments.
      const source = procfsSource();
      const tag = request.tag!;
      for (const pid of source.listPids()) {
        const named = (() => {
          try {
            return readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(tag.value);
          } catch {
            return false;
          }
        })();
        if (!named && source.environmentValue(pid, tag.name) !== tag.value) continue;
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Gone already.
        }
      }
      rmSync(directory, { recursive: true, force: true });
    }
  });
});

describe('SidecarLauncher with ERRAND_NODE_SPAWN=1 (the sidecar spawns with child_process)', () => {
  /** A sidecar started while the variable was set: it inherits it, and so does every spawn it makes. */
  async function nodeSpawner() {
    process.env[NODE_SPAWN_VARIABLE] = '1';
    try {
      const started = await spawner();
      const environment = readFileSync(`/proc/${started.lifeline.pid}/environ`, 'utf8').split('\0');
      expect(environment).toContain(`${NODE_SPAWN_VARIABLE}=1`);
      return started;
    } finally {
      delete process.env[NODE_SPAWN_VARIABLE];
    }
  }

  it('starts the command as the spawn without a fork does: own session and group, tagged, both pipes', async () => {
    const { launcher, lifeline } = await nodeSpawner();
    const child = launcher.launch(
      bash(
        'cut -d" " -f4,5,6 /proc/$$/stat; echo "$ERRAND_TEST_TAG"; readlink /proc/$$/fd/0; echo e >&2; exit 3',
      ),
    );
    const result = await ended(child);
    const [ids, tag, stdin] = result.stdout.trim().split('\n');
    expect(ids).toBe(`${lifeline.pid} ${child.pid} ${child.pid}`);
    expect(tag).toMatch(/^tree-/);
    expect(stdin).toBe('/dev/null');
    expect(result).toMatchObject({ stderr: 'e\n', code: 3, signal: null });
    expect(await ended(launcher.launch(bash('kill -SEGV $$')))).toMatchObject({
      code: null,
      signal: 'SIGSEGV',
    });
  });

  it('fails a spawn with the same error as the spawn without a fork', async () => {
    const { launcher } = await nodeSpawner();
    const { launcher: unforked } = await spawner();
    const errorOf = (child: LaunchedProcess) =>
      new Promise<NodeJS.ErrnoException>((resolve) => child.on('error', (error) => resolve(error)));
    const shape = (error: NodeJS.ErrnoException) => ({
      message: error.message,
      code: error.code,
      syscall: error.syscall,
      path: error.path,
    });
    for (const request of [
      bash('true', '/nonexistent/errand'),
      { ...bash('true'), file: '/nonexistent/bash' },
    ]) {
      expect(shape(await errorOf(launcher.launch(request)))).toEqual(
        shape(await errorOf(unforked.launch(request))),
      );
    }
  });
});
