import { readFileSync, statSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  capturingLogger,
  expectScreen,
  FAST_STOP,
  fixture,
  fixtureCommand,
} from '../../../test/fixtures/pty/harness.js';
import { findMarkedProcesses, LEAK_MARK_VARIABLE } from '../../../test/setup/process-census.js';
import { OutputDirectory, procfsSource } from '../../process/index.js';
import { resolvePtyProducerOptions } from './options.js';
import { createPtyOutputFile, type PtyProcess, type PtyProcessSpec, spawnPtyProcess } from './pty-process.js';
import { loadPtyRuntime, type PtyRuntime } from './pty-runtime.js';

let runtime: PtyRuntime;
const directory = new OutputDirectory('errand-pty-');
const logger = capturingLogger();
const started: PtyProcess[] = [];

beforeAll(async () => {
  runtime = await loadPtyRuntime();
});

afterEach(() => {
  // Nothing in these tests is a reason to warn.
  expect(logger.warnings).toEqual([]);
});

afterAll(async () => {
  for (const pty of started) pty.cancel();
  await Promise.all(started.map((pty) => pty.stopped));
  directory.dispose(false);
});

async function spawn(
  command: string | undefined,
  overrides: Partial<Omit<PtyProcessSpec, 'settings'>> & {
    settings?: Parameters<typeof resolvePtyProducerOptions>[0];
  } = {},
): Promise<PtyProcess> {
  const { settings: given, ...rest } = overrides;
  const settings = resolvePtyProducerOptions({ ...FAST_STOP, logger, ...given });
  const pty = spawnPtyProcess({
    runtime,
    settings,
    ...(command === undefined ? {} : { command }),
    cwd: process.cwd(),
    env: { ...(process.env as Record<string, string>) },
    cols: 80,
    rows: 24,
    outputFile: await createPtyOutputFile(directory, settings),
    ...rest,
  });
  started.push(pty);
  return pty;
}

/** Whether `pid` has exited: gone from /proc, or a zombie. */
function processEnded(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

function leakedProcesses() {
  return findMarkedProcesses(process.env[LEAK_MARK_VARIABLE]!);
}

describe('a program in a pseudo-terminal', () => {
  it('round-trips input: what is typed reaches the program and its answer reaches the screen', async () => {
    const pty = await spawn(fixtureCommand('echo-repl.sh'));
    await expectScreen(pty, 'repl>');
    pty.writeInput('hello pty', ['Enter']);
    const screen = await expectScreen(pty, 'echo: hello pty');
    // The terminal echoed the typed line before the program answered it.
    expect(screen).toContain('repl> hello pty\necho: hello pty\nrepl>');
    pty.writeInput('', ['Ctrl-D']);
    const exit = await pty.stopped;
    expect(exit).toMatchObject({ reason: 'completed', exitCode: 0, signal: null, stopSignals: [] });
  });

  it('renders output: colours stripped, carriage-return overwrites collapsed, cursor moves honoured', async () => {
    const pty = await spawn(fixtureCommand('progress.sh'));
    const exit = await pty.stopped;
    expect(exit.reason).toBe('completed');
    const delta = pty.readDelta();
    expect(delta).toBe('red alert and green\nprogress 100%\ndone');
    expect(pty.screen().text).toContain('progress 100%');
    // The raw bytes, escapes included, went to the private output file.
    const raw = readFileSync(pty.outputFile, 'latin1');
    expect(raw).toContain('\u001b[1;31mred alert');
    expect(raw).toContain('\rprogress  10%');
    expect(statSync(pty.outputFile).mode & 0o777).toBe(0o600);
    expect(statSync(directory.path!).mode & 0o777).toBe(0o700);
    // Consumed: a second read has nothing new.
    expect(pty.readDelta()).toBe('');
  });

  it('keeps long output bounded by the scrollback and says where the rest is', async () => {
    const pty = await spawn('seq 1 3000', { settings: { scrollbackLines: 50 } });
    const exit = await pty.stopped;
    const delta = pty.readDelta();
    const lines = delta.split('\n');
    expect(lines[0]).toBe(
      `[... earlier lines left the terminal's scrollback before they were read; full output: ${pty.outputFile} ...]`,
    );
    expect(lines.at(-1)).toBe('3000');
    expect(lines.length).toBeLessThanOrEqual(1 + 50 + 24);
    // The file has everything: every number and the terminal's \r\n line ends.
    let expectedBytes = 0;
    for (let value = 1; value <= 3000; value += 1) expectedBytes += String(value).length + 2;
    expect(exit.outputBytes).toBe(expectedBytes);
    expect(statSync(pty.outputFile).size).toBe(expectedBytes);
  });

  it('tells the program about a resize (SIGWINCH) and renders at the new size', async () => {
    const pty = await spawn(fixtureCommand('winch.mjs'), { cols: 80, rows: 24 });
    await expectScreen(pty, 'ready 80x24');
    pty.resize(100, 30);
    await expectScreen(pty, 'resized 100x30');
    expect(pty.screen()).toMatchObject({ cols: 100, rows: 30 });
    pty.cancel();
    await pty.stopped;
  });

  it('interrupts the foreground job with SIGINT on cancel', async () => {
    const pty = await spawn(`printf 'ready\\n'; sleep 300`);
    await expectScreen(pty, 'ready');
    pty.cancel();
    const exit = await pty.stopped;
    expect(exit).toMatchObject({
      reason: 'cancelled',
      signal: 'SIGINT',
      exitCode: null,
      stopSignals: ['SIGINT'],
    });
  });

  it('escalates to SIGTERM then SIGKILL when the program ignores both, and records the escalation', async () => {
    const pty = await spawn(fixtureCommand('ignore-signals.sh'));
    await expectScreen(pty, 'ignoring INT HUP and TERM');
    pty.cancel();
    const exit = await pty.stopped;
    expect(exit).toMatchObject({
      reason: 'cancelled',
      signal: 'SIGKILL',
      stopSignals: ['SIGINT', 'SIGHUP', 'SIGTERM', 'SIGKILL'],
    });
    expect(leakedProcesses()).toEqual([]);
  });

  it('finds and kills processes that left the session (setsid, double fork)', async () => {
    const pty = await spawn(fixtureCommand('escapees.sh'));
    const screen = await expectScreen(pty, /escaped \d+ \d+/);
    const [, child, grandchild] = /escaped (\d+) (\d+)/.exec(screen)!.map(Number);
    expect(leakedProcesses().map((leaked) => leaked.pid)).toEqual(
      expect.arrayContaining([child, grandchild]),
    );
    pty.cancel();
    const exit = await pty.stopped;
    expect(exit.reason).toBe('cancelled');
    expect(exit.survivors).toEqual([]);
    expect(leakedProcesses()).toEqual([]);
  });

  it('stops what the program left running when it exits on its own', async () => {
    const pty = await spawn(fixtureCommand('leftovers.sh'));
    const exit = await pty.stopped;
    expect(exit).toMatchObject({ reason: 'completed', exitCode: 0, stopSignals: [], survivors: [] });
    expect(pty.readDelta()).toBe('leaving 2 behind');
    expect(exit.leftoverProcesses).toBe(2);
    expect(leakedProcesses()).toEqual([]);
  });

  it('stops a program whose output passes the file cap, with reason output_limit', async () => {
    const pty = await spawn('yes', { settings: { maxOutputFileBytes: 10_000 } });
    const exit = await pty.stopped;
    expect(exit).toMatchObject({ reason: 'output_limit', signal: 'SIGINT' });
    expect(exit.outputBytes).toBe(10_000);
    expect(statSync(pty.outputFile).size).toBe(10_000);
  });

  it('lets a program write exactly the output file cap and end on its own', async () => {
    // No echo: the file holds exactly the ten digits; the program ends once it reads a line.
    const pty = await spawn(`stty -echo; printf 0123456789; read -r line; exit 0`, {
      settings: { maxOutputFileBytes: 10 },
    });
    await expectScreen(pty, '0123456789');
    pty.writeInput('done', ['Enter']);
    const exit = await pty.stopped;
    expect(exit).toMatchObject({ reason: 'completed', exitCode: 0, stopSignals: [], outputBytes: 10 });
    expect(readFileSync(pty.outputFile, 'latin1')).toBe('0123456789');
  });

  it('stops a program that outlives its runtime cap, with reason timed_out', async () => {
    const pty = await spawn('sleep 300', { timeoutMs: 1 });
    const exit = await pty.stopped;
    expect(exit.reason).toBe('timed_out');
    expect(exit.stopSignals[0]).toBe('SIGINT');
    // The cap may fire while the program is still being born: then a later step of the stop ends it,
    // and SIGHUP and SIGTERM go out together, so either may be the one that ended it.
    expect(exit.stopSignals).toContain(exit.signal);
  });

  it('keeps a runtime cap longer than one timer can express (2^31 - 1 ms) instead of expiring at once', async () => {
    const pty = await spawn(fixtureCommand('echo-repl.sh'), { timeoutMs: 3_000_000_000 });
    await expectScreen(pty, 'repl>');
    pty.writeInput('still here', ['Enter']);
    await expectScreen(pty, 'echo: still here');
    pty.writeInput('', ['Ctrl-D']);
    expect(await pty.stopped).toMatchObject({ reason: 'completed', exitCode: 0, stopSignals: [] });
  });

  it('counts a program as ended once it exits, before its terminal closes: a late cancel does not kill it', async () => {
    // Unmemoized, so the checks below see /proc as it is now.
    const pty = await spawn(fixtureCommand('echo-repl.sh'), { settings: { processSource: procfsSource() } });
    await expectScreen(pty, 'repl>');
    pty.writeInput('', ['Ctrl-D']);
    // The program ends at once; its terminal is closed (and its end reported) a while later.
    await vi.waitFor(() => expect(processEnded(pty.pid!)).toBe(true), { timeout: 10_000, interval: 2 });
    expect(pty.running).toBe(false);
    expect(() => pty.write('x')).toThrow(expect.objectContaining({ code: 'PTY_CLOSED' }));
    pty.cancel();
    expect(await pty.stopped).toMatchObject({ reason: 'completed', exitCode: 0, stopSignals: [] });
  });

  it('reports a bad working directory as a spawn error, without starting anything', async () => {
    const pty = await spawn('true', { cwd: fixture('no-such-directory') });
    expect(pty.pid).toBeUndefined();
    expect(pty.running).toBe(false);
    const exit = await pty.stopped;
    expect(exit.reason).toBe('spawn_error');
    expect(exit.error).toMatch(/working directory .*no-such-directory.* cannot be used: ENOENT/);
    expect(() => pty.write('x')).toThrow(expect.objectContaining({ code: 'PTY_CLOSED' }));
  });

  it('reports a missing shell as a spawn error', async () => {
    const pty = await spawn('true', { settings: { shell: 'errand-no-such-shell' } });
    const exit = await pty.stopped;
    expect(exit).toMatchObject({ reason: 'spawn_error', exitCode: null });
    expect(exit.error).toContain('"errand-no-such-shell" was not found on PATH');
  });

  it('runs an interactive shell when no command is given', async () => {
    const pty = await spawn(undefined, {
      settings: { interactiveShellArgs: ['--norc', '--noprofile', '-i'] },
      env: { ...(process.env as Record<string, string>), PS1: 'shell$ ' },
    });
    await expectScreen(pty, 'shell$');
    pty.writeInput('echo $((6 * 7))', ['Enter']);
    await expectScreen(pty, /^42$/m);
    pty.writeInput('exit', ['Enter']);
    expect((await pty.stopped).reason).toBe('completed');
  });

  it('ends an idle interactive shell with the hangup, before any SIGKILL', async () => {
    // A 20 s grace: an interactive shell ignores SIGINT and SIGTERM, so only SIGHUP can end it in time.
    const pty = await spawn(undefined, {
      settings: { interactiveShellArgs: ['--norc', '--noprofile', '-i'], killGraceMs: 20_000 },
      env: { ...(process.env as Record<string, string>), PS1: 'shell$ ' },
    });
    await expectScreen(pty, 'shell$');
    pty.cancel();
    expect(await pty.stopped).toMatchObject({
      reason: 'cancelled',
      signal: 'SIGHUP',
      stopSignals: ['SIGINT', 'SIGHUP', 'SIGTERM'],
    });
  }, 15_000);
});
