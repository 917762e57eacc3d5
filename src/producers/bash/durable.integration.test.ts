/**
 * Durable commands against real processes: output written by the command itself and followed from its
 * file, the exit status captured by the wrapper, stops and deadlines, the output cap, and a command let
 * go of by one executor and re-attached by another from the reader's cursor. Also the lifeline tag:
 * present in a non-durable command's environment, absent from a durable one's.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { capturingLogger, isAlive, waitForOutput } from '../../../test/fixtures/bash/index.js';
import { LIFELINE_TAG_VARIABLE, type LifelineLink } from '../../process/index.js';
import type { DurableHandle } from './durable-handle.js';
import { BashExecutor, MAX_COMMAND_BYTES } from './executor.js';
import type { BashExecutorOptions } from './executor-options.js';

let executors: BashExecutor[] = [];

function executor(options: BashExecutorOptions = {}): BashExecutor {
  const created = new BashExecutor({
    logger: capturingLogger(),
    killGraceMs: 300,
    durablePollMs: 20,
    ...options,
  });
  executors.push(created);
  return created;
}

afterEach(async () => {
  await Promise.all(executors.map((created) => created.dispose()));
  executors = [];
});

/**
 * A process's environment. It reads empty for a moment while the process replaces its image (`exec`
 * installs the new memory before it copies the environment in), so an empty read is tried again.
 */
async function environmentOf(pid: number): Promise<string[]> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const text = readFileSync(`/proc/${pid}/environ`, 'latin1');
    if (text !== '' || Date.now() > deadline) return text.split('\0');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('a durable command', () => {
  it('never writes its status through a link the command planted under the temporary name', async () => {
    const victim = join(mkdtempSync(join(tmpdir(), 'errand-victim-')), 'victim.txt');
    writeFileSync(victim, 'untouched\n');
    // Unconfined, the command can write its own directory: it finds its output file through its stdout.
    const attack = `out=$(readlink /proc/$$/fd/1); ln -s ${victim} "\${out%.log}.status.tmp"; echo planted`;
    const handle = executor().start({ command: attack, durable: true });
    const facts = await handle.stopped;
    expect(handle.read().text).toBe('planted\n');
    expect(readFileSync(victim, 'utf8')).toBe('untouched\n');
    // The wrapper removed the link and created its own file: the status is still recorded.
    expect(facts).toMatchObject({ exitCode: 0 });
    expect(readFileSync(handle.statusFile!, 'utf8')).toBe('{"exitCode":0}\n');
    rmSync(dirname(victim), { recursive: true, force: true });
  });

  it('writes its output file itself, and its exit status is captured', async () => {
    const handle = executor().start({ command: 'echo one; echo two >&2; exit 5', durable: true });
    expect(handle.durable).toBe(true);
    const facts = await handle.stopped;
    expect(facts).toMatchObject({ reason: 'completed', exitCode: 5, lost: null });
    expect(readFileSync(facts.outputFile!, 'utf8')).toBe('one\ntwo\n');
    expect(readFileSync(handle.statusFile!, 'utf8')).toBe('{"exitCode":5}\n');
    expect(handle.read().text).toBe('one\ntwo\n');
  });

  it('is stopped with its whole tree; the wrapper still records the status', async () => {
    const handle = executor().start({ command: 'echo ready; sleep 1000 & wait', durable: true });
    await waitForOutput(handle, 'ready');
    handle.cancel('no longer needed');
    const facts = await handle.stopped;
    expect(facts).toMatchObject({ reason: 'cancelled', cancelMessage: 'no longer needed' });
    expect(readFileSync(handle.statusFile!, 'utf8')).toMatch(/"exitCode":1\d\d/);
  });

  it('is killed at its deadline and at its output cap, watched from its file', async () => {
    const run = executor({ maxOutputFileBytes: 4096 });
    const late = run.start({ command: 'exec sleep 1000', durable: true, timeoutMs: 100 });
    expect((await late.stopped).reason).toBe('timed_out');
    const loud = run.start({ command: 'yes | head -c 100000; exec sleep 1000', durable: true });
    const facts = await loud.stopped;
    expect(facts.reason).toBe('output_limit');
    expect(loud.outputBytes).toBe(4096);
  });

  it('outlives the executor that lets go of it, and another re-attaches from the reader’s cursor', async () => {
    const gate = join(tmpdir(), `errand-durable-gate-${process.pid}-${Date.now()}`);
    const first = executor();
    const handle = first.start({
      command: `echo before; until [ -e ${gate} ]; do sleep 0.02; done; echo after; exit 2`,
      durable: true,
    }) as DurableHandle;
    await waitForOutput(handle, 'before');
    expect(handle.read().text).toBe('before\n');
    const facts = handle.processFacts()!;
    const attachment = {
      id: 'bash-9',
      command: handle.command,
      cwd: handle.cwd,
      startedAt: handle.startedAt,
      pid: facts.pid,
      startTime: facts.startTime!,
      tag: facts.tag,
      outputFile: handle.outputFile!,
      statusFile: handle.statusFile!,
      readOffset: handle.readOffset,
    };
    await first.dispose();
    expect(handle.isDetached).toBe(true);
    expect(isAlive(facts.pid)).toBe(true);
    expect(existsSync(attachment.outputFile)).toBe(true);

    const second = executor();
    const attached = second.attach(attachment);
    expect(attached.read().text).toBe('');
    writeFileSync(gate, '');
    await waitForOutput(attached, 'after');
    const ended = await attached.stopped;
    expect(ended).toMatchObject({ reason: 'completed', exitCode: 2 });
    expect(attached.read().text).toBe('after\n');
    // Released: its files go with it.
    await second.release('bash-9');
    expect(existsSync(attachment.outputFile)).toBe(false);
    expect(existsSync(attachment.statusFile)).toBe(false);
    rmSync(gate, { force: true });
  });

  it('re-attached, a truncated output file is told with a marker and its new lines still arrive', async () => {
    const gate = join(tmpdir(), `errand-durable-truncate-${process.pid}-${Date.now()}`);
    const first = executor();
    const handle = first.start({
      command: `for i in 1 2 3 4 5 6 7 8 9; do echo "line $i"; done; until [ -e ${gate} ]; do sleep 0.02; done; for i in 10 11 12 13 14 15 16; do echo "line $i"; done`,
      durable: true,
    }) as DurableHandle;
    await waitForOutput(handle, 'line 9');
    expect(handle.read().text.split('\n').filter(Boolean)).toHaveLength(9);
    const facts = handle.processFacts()!;
    const attachment = {
      id: 'bash-10',
      command: handle.command,
      cwd: handle.cwd,
      startedAt: handle.startedAt,
      pid: facts.pid,
      startTime: facts.startTime!,
      tag: facts.tag,
      outputFile: handle.outputFile!,
      statusFile: handle.statusFile!,
      readOffset: handle.readOffset,
    };
    await first.dispose();
    const attached = executor().attach(attachment);
    expect(attached.read().text).toBe('');
    // Someone truncates the file while the command runs; it goes on appending at the new end.
    truncateSync(attachment.outputFile, 0);
    writeFileSync(gate, '');
    await attached.stopped;
    const text = attached.read().text;
    expect(text).toMatch(
      /^\[\.\.\. \d+ bytes? skipped; full output: .+ \(truncated: read again from its start\) \.\.\.\]$/m,
    );
    const lines = text.split('\n').filter((line) => line.startsWith('line '));
    expect(lines).toEqual(['10', '11', '12', '13', '14', '15', '16'].map((n) => `line ${n}`));
    rmSync(gate, { force: true });
  });

  it('carries no lifeline tag, while a command that is not durable does', async () => {
    const watched: number[] = [];
    const lifeline: LifelineLink = {
      tag: { name: LIFELINE_TAG_VARIABLE, value: 'lifeline-under-test' },
      watch: (tree) => {
        watched.push(tree.pid);
        return () => {};
      },
    };
    const run = executor({ lifeline });
    const plain = run.start({ command: 'echo ready; exec sleep 1000' });
    const durable = run.start({ command: 'echo ready; exec sleep 1000', durable: true });
    try {
      await Promise.all([waitForOutput(plain, 'ready'), waitForOutput(durable, 'ready')]);
      expect(await environmentOf(plain.pid!)).toContain(`${LIFELINE_TAG_VARIABLE}=lifeline-under-test`);
      const durableEnvironment = await environmentOf(durable.pid!);
      expect(durableEnvironment.length).toBeGreaterThan(1);
      expect(durableEnvironment.some((line) => line.startsWith(`${LIFELINE_TAG_VARIABLE}=`))).toBe(false);
      expect(watched).toEqual([plain.pid]);
    } finally {
      // A durable command outlives its executor: stopped here even when an expectation failed.
      plain.cancel();
      durable.cancel();
      await Promise.all([plain.stopped, durable.stopped]);
    }
  });
});

describe('command size', () => {
  it('refuses a command longer than one argument may be, naming the field and the size', () => {
    const error = (() => {
      try {
        executor().resolve({ command: 'x'.repeat(MAX_COMMAND_BYTES + 1) });
      } catch (caught) {
        return caught as { code: string; message: string };
      }
      return undefined;
    })();
    expect(error?.code).toBe('COMMAND_TOO_LARGE');
    expect(error?.message).toContain(
      `Expected \`command\` to be at most ${MAX_COMMAND_BYTES} bytes, got ${MAX_COMMAND_BYTES + 1} bytes`,
    );
  });
});
