import { existsSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { PtyTestbed } from '../../../test/fixtures/pty/harness.js';
import { expectScreen, fixture, fixtureCommand, ptyTestbed } from '../../../test/fixtures/pty/harness.js';
import { findMarkedProcesses, LEAK_MARK_VARIABLE } from '../../../test/setup/process-census.js';
import { procfsSource } from '../../process/index.js';
import { createOwner, ErrandError, type TaskSnapshot } from '../../tasks/index.js';
import { scriptedTask } from '../../testing/index.js';

let testbed: PtyTestbed | undefined;

afterEach(async () => {
  await testbed?.close();
  testbed = undefined;
});

function open(...options: Parameters<typeof ptyTestbed>): PtyTestbed {
  testbed = ptyTestbed(...options);
  return testbed;
}

async function settled(bed: PtyTestbed, id: string, caller?: Parameters<PtyTestbed['tasks']['get']>[1]) {
  return bed.tasks.wait(id, 20_000, caller);
}

function leakedProcesses() {
  return findMarkedProcesses(process.env[LEAK_MARK_VARIABLE]!);
}

/** Files under /proc this process holds open. */
function openProcFiles(): string[] {
  const open: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith('/proc/')) open.push(target);
    } catch {
      // Closed meanwhile (the descriptor of the listing itself).
    }
  }
  return open.sort();
}

function codeOf(action: () => unknown): string | undefined {
  try {
    action();
  } catch (error) {
    return ErrandError.isInstance(error) ? error.code : String(error);
  }
  return undefined;
}

describe('pty tasks in the task service', () => {
  it('completes a program that exits 0, with its facts in detail', async () => {
    const bed = open();
    const started = await bed.producer.start({
      command: 'printf "hello\\n"',
      description: 'say hello',
      cols: 90,
      rows: 20,
      toolUseId: 'call_1',
    });
    expect(started.taskId).toBe('pty-1');
    expect(started.snapshot).toMatchObject({ kind: 'pty', label: 'say hello', status: 'running' });
    const done = await settled(bed, started.taskId);
    expect(done.status).toBe('completed');
    expect(done.detail).toMatchObject({
      command: 'printf "hello\\n"',
      description: 'say hello',
      toolUseId: 'call_1',
      pid: started.pid,
      cols: 90,
      rows: 20,
      outputFile: started.outputFile,
      reason: 'completed',
      exitCode: 0,
      signal: null,
      stopSignals: [],
    });
    expect((await bed.tasks.read(started.taskId)).text).toBe('hello');
  });

  it("gives observation cursors the raw terminal output, apart from the model's rendered read", async () => {
    const bed = open();
    const { taskId } = await bed.producer.start({ command: 'printf "\\033[1mbold\\033[0m\\n"' });
    const cursor = await bed.tasks.openCursor(taskId);
    expect(cursor.stream).toBe('bytes');
    await settled(bed, taskId);
    const read = await cursor.read();
    expect(read.text).toContain('\u001b[1mbold\u001b[0m');
    expect(read.ended).toBe(true);
    expect((await bed.tasks.read(taskId)).text).toBe('bold');
  });

  it('completes a program that ended just before a kill, and refuses input to it', async () => {
    // Unmemoized, so the checks below see /proc as it is now.
    const bed = open({ processSource: procfsSource() });
    const { taskId, pid } = await bed.producer.start({ command: fixtureCommand('echo-repl.sh') });
    await expectScreen(bed.producer.process(taskId, undefined), 'repl>');
    bed.producer.write(taskId, { keys: ['Ctrl-D'] }, undefined);
    // The program ends at once; its terminal is closed (and its end reported) a while later.
    await vi.waitFor(() => expect(existsSync(`/proc/${pid}`)).toBe(false), { timeout: 10_000, interval: 2 });
    expect(codeOf(() => bed.producer.write(taskId, { text: 'x' }, undefined))).toBe('TASK_NOT_RUNNING');
    await bed.tasks.kill(taskId, undefined, 'too late');
    const done = await settled(bed, taskId);
    expect(done.status).toBe('completed');
    expect(done.detail).toMatchObject({ reason: 'completed', exitCode: 0, stopSignals: [] });
  });

  it('fails a program that exits non-zero, keeping the exit code', async () => {
    const bed = open();
    const { taskId } = await bed.producer.start({ command: 'exit 3' });
    const done = await settled(bed, taskId);
    expect(done).toMatchObject({ status: 'failed', error: 'exited with code 3' });
    expect(done.detail).toMatchObject({ reason: 'completed', exitCode: 3, signal: null });
  });

  it('kills with SIGINT first: an interruptible program settles as killed with SIGINT recorded', async () => {
    const bed = open();
    const owner = createOwner('session-kill');
    const { taskId } = await bed.producer.start({ command: "printf 'ready\\n'; sleep 300", owner });
    await expectScreen(bed.producer.process(taskId, owner), 'ready');
    await bed.tasks.kill(taskId, owner, 'not needed any more');
    const done = await settled(bed, taskId, owner);
    expect(done.status).toBe('killed');
    expect(done.detail).toMatchObject({
      reason: 'cancelled',
      signal: 'SIGINT',
      exitCode: null,
      stopSignals: ['SIGINT'],
      cancelMessage: 'not needed any more',
    });
    await owner.dispose();
  });

  it('escalates to SIGKILL for a program that ignores SIGINT and SIGTERM, and records the escalation', async () => {
    const bed = open();
    const { taskId } = await bed.producer.start({ command: fixtureCommand('ignore-signals.sh') });
    await expectScreen(bed.producer.process(taskId, undefined), 'ignoring INT HUP and TERM');
    await bed.tasks.kill(taskId);
    const done = await settled(bed, taskId);
    expect(done.status).toBe('killed');
    expect(done.detail).toMatchObject({
      reason: 'cancelled',
      signal: 'SIGKILL',
      stopSignals: ['SIGINT', 'SIGHUP', 'SIGTERM', 'SIGKILL'],
    });
    expect(leakedProcesses()).toEqual([]);
  });

  it('stops a program past runtimeCapMs (timed_out), unless the request gives its own timeoutMs', async () => {
    const bed = open({ runtimeCapMs: 1 });
    const capped = await bed.producer.start({ command: 'sleep 300' });
    const done = await settled(bed, capped.taskId);
    expect(done.status).toBe('killed');
    expect(done.detail).toMatchObject({ reason: 'timed_out' });
    const own = await bed.producer.start({ command: 'printf "ok\\n"', timeoutMs: 600_000 });
    expect((await settled(bed, own.taskId)).status).toBe('completed');
  });

  it.each([
    [undefined, 200],
    [20, 20],
  ])('shortens a label to maxLabelChars (%o: %i characters)', async (option, limit) => {
    const bed = open(option === undefined ? {} : { maxLabelChars: option });
    const description = 'd'.repeat(limit + 50);
    const { taskId, snapshot } = await bed.producer.start({ command: 'true', description });
    expect(snapshot.label).toBe(`${'d'.repeat(limit - 1)}…`);
    expect(snapshot.detail).toMatchObject({ description });
    await settled(bed, taskId);
  });

  it('fails with spawn_error when the working directory does not exist', async () => {
    const bed = open();
    const missing = fixture('missing-directory');
    const { taskId, pid } = await bed.producer.start({ command: 'true', cwd: missing });
    expect(pid).toBeUndefined();
    const done = await settled(bed, taskId);
    expect(done.status).toBe('failed');
    expect(done.detail).toMatchObject({ reason: 'spawn_error', exitCode: null });
    expect(done.error).toContain('missing-directory');
  });

  it('reads consume: each read returns only lines that are new or changed since the last one', async () => {
    const bed = open();
    const { taskId } = await bed.producer.start({ command: fixtureCommand('echo-repl.sh') });
    const pty = bed.producer.process(taskId, undefined);
    await expectScreen(pty, 'repl>');
    expect((await bed.tasks.read(taskId)).text).toBe('repl>');
    expect((await bed.tasks.read(taskId)).text).toBe('');
    bed.producer.write(taskId, { text: 'one', keys: ['Enter'] }, undefined);
    // The answer and the new prompt are written one after the other: wait for both, not only the answer.
    await expectScreen(pty, /echo: one\nrepl>/);
    // The prompt line changed (it now shows what was typed); the answer and the new prompt are new.
    expect((await bed.tasks.read(taskId)).text).toBe('repl> one\necho: one\nrepl>');
    // Viewers see the output grow through throttled detail updates.
    await vi.waitFor(() => expect(bed.tasks.get(taskId).detail.outputBytes).toBe(pty.outputBytes));
  });

  it('lets only the owning session write, resize or look at the screen', async () => {
    const bed = open();
    const owner = createOwner('session-a');
    const stranger = createOwner('session-b');
    const { taskId } = await bed.producer.start({ command: fixtureCommand('echo-repl.sh'), owner });
    await expectScreen(bed.producer.process(taskId, owner), 'repl>');
    for (const caller of [stranger, undefined]) {
      expect(codeOf(() => bed.producer.write(taskId, { text: 'x' }, caller))).toBe('TASK_NOT_FOUND');
      expect(codeOf(() => bed.producer.resize(taskId, 100, 30, caller))).toBe('TASK_NOT_FOUND');
      expect(codeOf(() => bed.producer.screen(taskId, caller))).toBe('TASK_NOT_FOUND');
    }
    bed.producer.resize(taskId, 100, 30, owner);
    expect(bed.producer.screen(taskId, owner)).toMatchObject({
      taskId,
      cols: 100,
      rows: 30,
      status: 'running',
    });
    expect(bed.tasks.get(taskId, owner).detail).toMatchObject({ cols: 100, rows: 30 });
    await owner.dispose();
  });

  it('disposing the owner stops its pty tasks and leaves no process behind, escapees included', async () => {
    const bed = open();
    const owner = createOwner('session-disposed');
    const first = await bed.producer.start({ command: fixtureCommand('escapees.sh'), owner });
    const second = await bed.producer.start({ command: fixtureCommand('ignore-signals.sh'), owner });
    await expectScreen(bed.producer.process(first.taskId, owner), /escaped \d+ \d+/);
    await expectScreen(bed.producer.process(second.taskId, owner), 'ignoring INT HUP and TERM');
    const finished: TaskSnapshot[] = [];
    bed.tasks.onTaskDone((snapshot) => void finished.push(snapshot), { owner });
    await owner.dispose();
    expect(finished.map((snapshot) => [snapshot.id, snapshot.status]).sort()).toEqual([
      [first.taskId, 'killed'],
      [second.taskId, 'killed'],
    ]);
    expect(leakedProcesses()).toEqual([]);
  });

  it('refuses input to a finished task, and keeps its final screen readable', async () => {
    const bed = open();
    const { taskId } = await bed.producer.start({ command: 'printf "last words\\n"' });
    await settled(bed, taskId);
    expect(codeOf(() => bed.producer.write(taskId, { text: 'x' }, undefined))).toBe('TASK_NOT_RUNNING');
    expect(codeOf(() => bed.producer.resize(taskId, 80, 24, undefined))).toBe('TASK_NOT_RUNNING');
    expect(bed.producer.screen(taskId, undefined)).toMatchObject({ text: 'last words', status: 'completed' });
  });

  it('rejects the id of a task of another kind, and invalid sizes and inputs, naming the field', async () => {
    const bed = open();
    const other = scriptedTask({ kind: 'bash' });
    const snapshot = await bed.tasks.start(other.spec);
    expect(codeOf(() => bed.producer.write(snapshot.id, { text: 'x' }, undefined))).toBe('INVALID_ARGUMENT');
    other.settle();
    await expect(bed.producer.start({ command: 'true', cols: 5 })).rejects.toThrow(
      'Expected `cols` to be an integer from 10 to 500, got 5 (number)',
    );
    await expect(bed.producer.start({ command: '' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(bed.tasks.list()).toHaveLength(1);
  });

  it('fails with PTY_UNAVAILABLE, registering nothing, when node-pty cannot be loaded', async () => {
    const bed = open({
      loadPty: async () => {
        throw new Error("Cannot find package 'node-pty'");
      },
    });
    const failure = bed.producer.start({ command: 'true' });
    await expect(failure).rejects.toMatchObject({ code: 'PTY_UNAVAILABLE', fault: 'system' });
    await expect(failure).rejects.toThrow('npm install node-pty@1.1.0');
    expect(bed.tasks.list()).toEqual([]);
  });

  it('deletes the output file and the final screen of a task the service forgets', async () => {
    const bed = open({}, { maxRetainedTasksPerOwner: 1 });
    const first = await bed.producer.start({ command: 'printf "first\\n"' });
    await settled(bed, first.taskId);
    expect(existsSync(first.outputFile)).toBe(true);
    const second = await bed.producer.start({ command: 'printf "second\\n"' });
    await settled(bed, second.taskId);
    await vi.waitFor(() => expect(existsSync(first.outputFile)).toBe(false));
    expect(codeOf(() => bed.producer.screen(first.taskId, undefined))).toBe('TASK_NOT_FOUND');
    expect(bed.producer.screen(second.taskId, undefined).text).toBe('second');
    expect(existsSync(second.outputFile)).toBe(true);
  });

  it('disposing the producer while a start is in flight starts nothing', async () => {
    const bed = open();
    const starting = bed.producer.start({ command: 'sleep 300' });
    const disposing = bed.producer.dispose();
    await expect(starting).rejects.toMatchObject({ code: 'PTY_PRODUCER_DISPOSED' });
    await disposing;
    expect(bed.tasks.list()).toEqual([]);
    expect(leakedProcesses()).toEqual([]);
    await expect(bed.producer.start({ command: 'true' })).rejects.toMatchObject({
      code: 'PTY_PRODUCER_DISPOSED',
    });
  });

  it('starts programs again once its output directory can be created, after a failure to', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'errand-pty-test-'));
    try {
      const root = join(parent, 'not-yet');
      const bed = open({ outputRoot: root });
      await expect(bed.producer.start({ command: 'true' })).rejects.toMatchObject({ code: 'ENOENT' });
      mkdirSync(root);
      const { taskId, outputFile } = await bed.producer.start({ command: 'printf "ok\\n"' });
      expect((await settled(bed, taskId)).status).toBe('completed');
      expect(outputFile.startsWith(`${root}/`)).toBe(true);
    } finally {
      await testbed?.close();
      testbed = undefined;
      rmSync(parent, { recursive: true, force: true });
    }
  });

  it('closes what its process table source holds open when disposed', async () => {
    const before = openProcFiles();
    const bed = open();
    const { taskId } = await bed.producer.start({ command: `printf 'ready\\n'; sleep 300` });
    await expectScreen(bed.producer.process(taskId, undefined), 'ready');
    // Stopping takes a census, which keeps the kernel's last-pid counter open for later ones.
    await bed.tasks.kill(taskId);
    await settled(bed, taskId);
    await bed.close();
    testbed = undefined;
    expect(openProcFiles()).toEqual(before);
  });

  it('removes its private output directory when disposed', async () => {
    const bed = open();
    const { taskId, outputFile } = await bed.producer.start({ command: 'true' });
    await settled(bed, taskId);
    expect(existsSync(outputFile)).toBe(true);
    await bed.close();
    testbed = undefined;
    expect(existsSync(outputFile)).toBe(false);
    expect(bed.logger.warnings).toEqual([]);
  });
});
