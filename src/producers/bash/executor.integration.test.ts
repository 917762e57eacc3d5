/** The executor against real processes: exit facts, process-group kills, escapees, output, spawn failures. */
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { basename } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  capturingLogger,
  fixtureCommand,
  isAlive,
  pidsAfter,
  strayProcesses,
  waitForOutput,
} from '../../../test/fixtures/bash/index.js';
import {
  createSpawnLauncher,
  endingsUnderway,
  type LaunchRequest,
  memoizedSource,
  type ProcessLauncher,
  procfsSource,
} from '../../process/index.js';
import { BashExecutor } from './executor.js';
import type { BashExecutorOptions } from './executor-options.js';

let executors: BashExecutor[] = [];

/** The one-letter state of a process in /proc (`T` when stopped), or undefined once it is gone. */
function processState(pid: number): string | undefined {
  try {
    return /\) (\S)/.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.[1];
  } catch {
    return undefined;
  }
}

async function waitUntil(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}

function executor(options: BashExecutorOptions = {}): BashExecutor {
  const created = new BashExecutor({ logger: capturingLogger(), killGraceMs: 500, ...options });
  executors.push(created);
  return created;
}

afterEach(async () => {
  await Promise.all(executors.map((created) => created.dispose()));
  executors = [];
});

describe('endings underway', () => {
  it('counts a command from its exit until it settled, and not before or after', async () => {
    // The shell exits at once; its background sleep holds stdout, so the ending waits out the grace.
    const handle = executor({ exitGraceMs: 1000 }).start({ command: 'sleep 30 & echo started' });
    expect(await handle.spawned).toBe(true);
    await waitForOutput(handle, 'started');
    await waitUntil(() => endingsUnderway() === 1);
    expect(handle.running).toBe(true);
    await handle.stopped;
    expect(endingsUnderway()).toBe(0);
  });
});

describe('exit facts', () => {
  it('reports exit code 0 and the output of a completed command', async () => {
    const handle = executor().start({ command: 'echo hello; echo oops >&2' });
    const facts = await handle.stopped;
    expect(facts).toMatchObject({ reason: 'completed', exitCode: 0, signal: null, escalated: false });
    expect(facts.pid).toBe(handle.pid);
    expect(handle.read().text.split('\n').sort()).toEqual(['', 'hello', 'oops']);
    expect(readFileSync(facts.outputFile!, 'utf8')).toContain('hello\n');
  });

  it('reports a non-zero exit code and a signal that ended the shell', async () => {
    const run = executor();
    expect(await run.start({ command: 'exit 3' }).stopped).toMatchObject({
      reason: 'completed',
      exitCode: 3,
    });
    expect(await run.start({ command: 'kill -SEGV $$' }).stopped).toMatchObject({
      reason: 'completed',
      exitCode: null,
      signal: 'SIGSEGV',
    });
  });

  it('fails to start in a missing working directory without spawning', async () => {
    const handle = executor().start({ command: 'true', cwd: '/nonexistent/errand' });
    expect(await handle.spawned).toBe(false);
    const facts = await handle.stopped;
    expect(facts).toMatchObject({ reason: 'spawn_error', pid: null, errorCode: 'ENOENT' });
    expect(facts.error).toContain('the working directory "/nonexistent/errand" does not exist');
  });

  it('fails to start with a missing shell', async () => {
    const handle = executor({ shell: '/nonexistent/bash' }).start({ command: 'true' });
    expect(await handle.spawned).toBe(false);
    const facts = await handle.stopped;
    expect(facts).toMatchObject({ reason: 'spawn_error', pid: null, errorCode: 'ENOENT' });
    expect(facts.error).toContain('the shell "/nonexistent/bash" was not found');
  });

  it('runs in the given directory with exactly the given environment', async () => {
    const result = await executor().run({
      command: 'pwd; echo "$ONLY"; env | grep -c . ',
      cwd: '/tmp',
      env: { ONLY: 'this', PATH: process.env.PATH },
    });
    const [cwd, only, count] = result.output.trim().split('\n');
    expect(cwd).toBe('/tmp');
    expect(only).toBe('this');
    // ONLY, PATH, the process tag, and what bash itself sets (PWD, SHLVL, _).
    expect(Number(count)).toBeLessThanOrEqual(6);
  });
});

describe('process trees', () => {
  it('kills a tree whose grandchildren hold the pipe, promptly and completely', async () => {
    const handle = executor({ killGraceMs: 10_000 }).start({ command: fixtureCommand('hold-pipe') });
    const children = pidsAfter(await waitForOutput(handle, 'ready'), 'children');
    const began = Date.now();
    handle.cancel('test');
    const facts = await handle.stopped;
    expect(Date.now() - began).toBeLessThan(5_000);
    expect(facts).toMatchObject({
      reason: 'cancelled',
      escalated: false,
      cancelMessage: 'test',
      survivors: [],
    });
    expect(children.filter(isAlive)).toEqual([]);
    expect(strayProcesses()).toEqual([]);
  });

  it('settles promptly when the shell exits and grandchildren hold the pipe, and stops them', async () => {
    const handle = executor({ killGraceMs: 10_000 }).start({ command: fixtureCommand('hold-pipe', 'exit') });
    const children = pidsAfter(await waitForOutput(handle, 'ready'), 'children');
    const facts = await handle.stopped;
    expect(facts).toMatchObject({
      reason: 'completed',
      exitCode: 0,
      signalledProcesses: 2,
      escalated: false,
    });
    expect(children.filter(isAlive)).toEqual([]);
  });

  it('reads the reaped shell afresh at its exit census, though its process table keeps what it read', async () => {
    // A table that keeps entries for a minute, counting what reaches the real one: the shell's entry
    // read while it ran (its process facts) must not stand for the reaped shell at the exit census.
    const underlying = procfsSource();
    const reads: number[] = [];
    const counting = {
      ...underlying,
      read(pid: number) {
        reads.push(pid);
        return underlying.read(pid);
      },
    };
    const handle = executor({ processSource: memoizedSource(counting, 60_000) }).start({
      command: 'echo up; sleep 0.05',
    });
    await waitForOutput(handle, 'up');
    const pid = handle.processFacts()?.pid;
    expect(pid).toBeGreaterThan(0);
    try {
      expect(await handle.stopped).toMatchObject({ reason: 'completed', exitCode: 0 });
      // Once while it ran, once more after it was reaped.
      expect(reads.filter((read) => read === pid).length).toBeGreaterThanOrEqual(2);
    } finally {
      underlying.close?.();
    }
  });

  it('leaves what the shell left behind alone when killProcessGroupOnExit is false', async () => {
    const handle = executor({ killProcessGroupOnExit: false }).start({
      command: fixtureCommand('hold-pipe', 'exit'),
    });
    const children = pidsAfter(await waitForOutput(handle, 'ready'), 'children');
    const facts = await handle.stopped;
    expect(facts).toMatchObject({ reason: 'completed', signalledProcesses: 0 });
    expect(children.filter(isAlive)).toEqual(children);
    for (const pid of children) process.kill(pid, 'SIGKILL');
  });

  it('escalates to SIGKILL when SIGTERM is ignored', async () => {
    const handle = executor({ killGraceMs: 200 }).start({ command: fixtureCommand('ignore-term') });
    await waitForOutput(handle, 'ready');
    handle.cancel();
    const facts = await handle.stopped;
    expect(facts).toMatchObject({ reason: 'cancelled', escalated: true, signal: 'SIGKILL', survivors: [] });
  });

  it('continues a stopped process after SIGTERM, so its handler runs instead of a SIGKILL', async () => {
    // A 20 s grace: without SIGCONT the stopped shell would sit on SIGTERM until SIGKILL.
    const handle = executor({ killGraceMs: 20_000 }).start({
      command: `trap 'echo handled; exit 0' TERM; echo ready; kill -STOP $$; sleep 100`,
    });
    await waitForOutput(handle, 'ready');
    await waitUntil(() => processState(handle.pid!) === 'T');
    handle.cancel();
    const facts = await handle.stopped;
    expect(facts).toMatchObject({ reason: 'cancelled', escalated: false, exitCode: 0 });
    expect(handle.read().text).toContain('handled');
  }, 15_000);

  it('finds and kills a setsid escapee', async () => {
    const handle = executor().start({ command: fixtureCommand('setsid-escape') });
    const [escapee] = pidsAfter(await waitForOutput(handle, 'ready'), 'escapee');
    handle.cancel();
    await handle.stopped;
    expect(isAlive(escapee!)).toBe(false);
  });

  it('finds a double-forked escapee with no ppid link through its environment tag', async () => {
    const handle = executor().start({ command: fixtureCommand('setsid-escape', 'detach') });
    const [escapee] = pidsAfter(await waitForOutput(handle, 'ready'), 'escapee');
    handle.cancel();
    const facts = await handle.stopped;
    expect(isAlive(escapee!)).toBe(false);
    expect(facts.signalledProcesses).toBeGreaterThanOrEqual(2);
  });

  it('yields exactly one stop when cancel races the exit', async () => {
    const run = executor();
    for (let round = 0; round < 20; round += 1) {
      const handle = run.start({ command: 'echo ready' });
      handle.onOutput(() => handle.cancel('race'));
      const facts = await handle.stopped;
      expect(['completed', 'cancelled']).toContain(facts.reason);
      expect(handle.exit).toBe(facts);
      handle.cancel('late');
      expect(handle.exit).toBe(facts);
    }
  });

  it('times out with reason timed_out', async () => {
    const handle = executor().start({ command: 'sleep 1000', timeoutMs: 1 });
    expect(await handle.stopped).toMatchObject({ reason: 'timed_out', timeoutMs: 1, signal: 'SIGTERM' });
  });
});

describe('launcher', () => {
  it('starts commands through an injected launcher, which may wrap them, and still stops the whole tree', async () => {
    const requests: LaunchRequest[] = [];
    const spawnLauncher = createSpawnLauncher();
    const wrapping: ProcessLauncher = {
      launch(request) {
        requests.push(request);
        // What a confining wrapper does: the same request, run by another program that execs it.
        return spawnLauncher.launch({
          ...request,
          file: 'env',
          args: ['ERRAND_WRAPPED=yes', request.file, ...request.args],
        });
      },
    };
    const handle = executor({ launcher: wrapping }).start({
      command: `echo "wrapped=$ERRAND_WRAPPED tag=$ERRAND_PROCESS_TAG"; sleep 1000 & sleep 1000; wait`,
    });
    const text = await waitForOutput(handle, 'wrapped=yes');
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({ args: ['-c', expect.stringContaining('echo')], cwd: process.cwd() });
    expect(requests[0]!.tag?.name).toBe('ERRAND_PROCESS_TAG');
    expect(text).toContain(`tag=${requests[0]!.tag!.value}`);
    handle.cancel();
    expect(await handle.stopped).toMatchObject({ reason: 'cancelled', escalated: false, survivors: [] });
    expect(strayProcesses()).toEqual([]);
  });

  it('reports a launcher that throws as a failure to start', async () => {
    const handle = executor({
      launcher: {
        launch() {
          throw Object.assign(new Error('spawner is gone'), { code: 'EPIPE' });
        },
      },
    }).start({ command: 'true' });
    expect(await handle.spawned).toBe(false);
    expect(await handle.stopped).toMatchObject({
      reason: 'spawn_error',
      errorCode: 'EPIPE',
      error: expect.stringContaining('spawner is gone'),
    });
  });
});

describe('output', () => {
  it('never breaks a UTF-8 character split across reads', async () => {
    const handle = executor().start({ command: fixtureCommand('utf8-split') });
    await waitForOutput(handle, 'ready');
    expect(handle.read().text).toBe('ready\n');
    process.kill(handle.pid!, 'SIGUSR1');
    await handle.stopped;
    expect(handle.read().text).toBe('€\n');
    expect(readFileSync(handle.outputFile!, 'utf8')).toBe('ready\n€\n');
  });

  it('never breaks a character when stderr output arrives in the middle of it', async () => {
    const handle = executor().start({ command: fixtureCommand('utf8-split', 'stderr') });
    await waitForOutput(handle, 'between');
    process.kill(handle.pid!, 'SIGUSR1');
    await handle.stopped;
    const file = readFileSync(handle.outputFile!);
    expect(file.toString('utf8')).not.toContain('\uFFFD');
    expect(file.toString('utf8').split('\n').sort()).toEqual(['', 'between', 'ready', '€']);
  });

  it('kills a command that exceeds the output file cap with reason output_limit', async () => {
    const cap = 1024 * 1024;
    const handle = executor({ maxOutputFileBytes: cap }).start({ command: 'head -c 50000000 /dev/zero' });
    const facts = await handle.stopped;
    expect(facts).toMatchObject({ reason: 'output_limit', outputBytes: cap, outputLimitBytes: cap });
    expect(statSync(facts.outputFile!).size).toBe(cap);
  });

  it('gives a reader that fell behind the newest bytes and the count it skipped', async () => {
    const handle = executor({ maxBufferedBytes: 16 * 1024, maxReadBytes: 1000 }).start({
      command: 'head -c 100000 /dev/zero | tr "\\0" x',
    });
    await handle.stopped;
    const read = handle.read(5000);
    expect(read.text).toBe('x'.repeat(1000));
    expect(read.skippedBytes).toBe(99_000);
    expect(handle.read().text).toBe('');
  });

  it('keeps output files private: 0700 directory, 0600 files, random names', async () => {
    const run = executor();
    const handle = run.start({ command: 'echo private', id: 'bash-1' });
    await handle.stopped;
    expect(statSync(run.outputDirectory!).mode & 0o777).toBe(0o700);
    expect(statSync(handle.outputFile!).mode & 0o777).toBe(0o600);
    // The directory name is random too (mkdtemp), so only the file's own name is checked.
    expect(basename(handle.outputFile!)).not.toContain('bash-1');
    expect(basename(handle.outputFile!)).toMatch(/^[0-9a-f-]{36}\.log$/);
    await run.dispose();
    expect(() => statSync(run.outputDirectory!)).toThrow();
  });

  it('creates no output file for a command that prints nothing, unless a path is asked for', async () => {
    const run = executor();
    const silent = run.start({ command: 'true' });
    expect(await silent.stopped).toMatchObject({ outputFile: null, outputBytes: 0 });
    expect(await silent.outputFileReady).toBeUndefined();
    const shown = run.start({ command: 'exec sleep 1000' });
    const path = await shown.ensureOutputFile();
    expect(path).toBe(shown.outputFile);
    expect(statSync(path!).size).toBe(0);
    shown.cancel();
    expect((await shown.stopped).outputFile).toBe(path);
  });

  it('deletes the file of a released handle, and keeps the directory on disposal when asked to', async () => {
    const run = executor({ keepOutputFiles: true });
    const released = run.start({ command: 'echo gone' });
    const kept = run.start({ command: 'echo kept' });
    await Promise.all([released.stopped, kept.stopped]);
    await run.release(released.id);
    expect(run.has(released.id)).toBe(false);
    expect(existsSync(released.outputFile!)).toBe(true);
    await run.dispose();
    expect(readFileSync(kept.outputFile!, 'utf8')).toBe('kept\n');
    rmSync(run.outputDirectory!, { recursive: true });
  });

  it('cancels a running command on release and on disposal, and refuses new ones afterwards', async () => {
    const run = executor();
    const released = run.start({ command: 'exec sleep 1000' });
    const disposed = run.start({ command: 'exec sleep 1000' });
    await run.release(released.id);
    expect(released.exit).toMatchObject({ reason: 'cancelled', cancelMessage: 'released' });
    expect(existsSync(released.outputFile!)).toBe(false);
    await run.dispose();
    expect(disposed.exit).toMatchObject({ reason: 'cancelled', cancelMessage: 'executor disposal' });
    expect(() => run.start({ command: 'true' })).toThrow(
      expect.objectContaining({ code: 'EXECUTOR_DISPOSED' }),
    );
  });
});
