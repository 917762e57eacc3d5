/** The bash producer through a real task service and real processes: statuses, detail, reads, cleanup. */
import { existsSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import {
  capturingLogger,
  fixtureCommand,
  strayProcesses,
  waitForOutput,
} from '../../../test/fixtures/bash/index.js';
import { createTaskService, type TaskServiceOptions } from '../../registry/index.js';
import { createManualClock } from '../../tasks/clock.js';
import { createOwner, createTrustedCaller, type TaskService, type TaskSnapshot } from '../../tasks/index.js';
import { BashProducer, type BashProducerOptions } from './bash-producer.js';
import { BashExecutor } from './executor.js';
import type { BashExecutorOptions } from './executor-options.js';

const trusted = createTrustedCaller('test');
let cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

function setup(
  options: {
    executor?: BashExecutorOptions;
    service?: TaskServiceOptions;
    producer?: Partial<BashProducerOptions>;
  } = {},
): { tasks: TaskService; executor: BashExecutor; producer: BashProducer } {
  const tasks = createTaskService({ logger: capturingLogger(), ...options.service });
  tasks.attachController('test');
  const executor = new BashExecutor({ logger: capturingLogger(), killGraceMs: 300, ...options.executor });
  const producer = new BashProducer({ tasks, executor, ...options.producer });
  cleanups.push(
    () => tasks.dispose(),
    () => executor.dispose(),
    () => producer.dispose(),
  );
  return { tasks, executor, producer };
}

async function settled(tasks: TaskService, id: string): Promise<TaskSnapshot> {
  return tasks.wait(id, 20_000, trusted);
}

describe('status mapping', () => {
  it('maps exit codes, signals, cancels, deadlines, output caps and spawn failures', async () => {
    const { tasks, producer } = setup({ executor: { maxOutputFileBytes: 4096 } });
    const cases: Array<[string, Record<string, unknown>, string, Record<string, unknown>]> = [
      ['exit 0', {}, 'completed', { reason: 'completed', exitCode: 0 }],
      ['exit 3', {}, 'failed', { reason: 'completed', exitCode: 3 }],
      ['kill -SEGV $$', {}, 'failed', { reason: 'completed', signal: 'SIGSEGV', exitCode: null }],
      [
        'sleep 1000',
        { timeoutMs: 1 },
        'killed',
        { reason: 'timed_out', timeoutMs: 1, killSignal: 'SIGTERM' },
      ],
      ['head -c 100000 /dev/zero', {}, 'killed', { reason: 'output_limit', outputBytes: 4096 }],
      [
        'true',
        { cwd: '/nonexistent/errand' },
        'failed',
        { reason: 'spawn_error', errorCode: 'ENOENT', pid: null },
      ],
    ];
    for (const [command, extra, status, detail] of cases) {
      const { taskId } = await producer.start({ command, ...extra });
      const snapshot = await settled(tasks, taskId);
      expect({ command, status: snapshot.status }).toEqual({ command, status });
      expect(snapshot.detail).toMatchObject(detail);
    }
    const { taskId } = await producer.start({ command: 'sleep 1000' });
    await tasks.kill(taskId, trusted, 'no longer needed');
    const killed = await settled(tasks, taskId);
    expect(killed.status).toBe('killed');
    expect(killed.detail).toMatchObject({
      reason: 'cancelled',
      cancelMessage: 'no longer needed',
      signal: 'SIGTERM',
    });
  });

  it('fails a task whose shell is missing', async () => {
    const { tasks, producer } = setup({ executor: { shell: '/nonexistent/bash' } });
    const { taskId } = await producer.start({ command: 'true' });
    const snapshot = await settled(tasks, taskId);
    expect(snapshot.status).toBe('failed');
    expect(snapshot.detail).toMatchObject({ reason: 'spawn_error', errorCode: 'ENOENT' });
    expect(snapshot.error).toContain('the shell "/nonexistent/bash" was not found');
  });

  it('records SIGKILL escalation in the detail', async () => {
    const { tasks, producer } = setup({ executor: { killGraceMs: 100 } });
    const { taskId, handle } = await producer.start({ command: fixtureCommand('ignore-term') });
    await waitForOutput(handle, 'ready');
    await tasks.kill(taskId, trusted);
    const snapshot = await settled(tasks, taskId);
    expect(snapshot.status).toBe('killed');
    expect(snapshot.detail).toMatchObject({
      escalated: true,
      killSignal: 'SIGKILL',
      signal: 'SIGKILL',
      survivors: [],
    });
  });

  it('settles exactly once when a cancel races the exit', async () => {
    const { tasks, producer } = setup();
    const done: TaskSnapshot[] = [];
    tasks.onTaskDone((snapshot) => void done.push(snapshot));
    for (let round = 0; round < 20; round += 1) {
      const { taskId, handle } = await producer.start({ command: 'echo ready' });
      handle.onOutput(() => void tasks.kill(taskId, trusted).catch(() => {}));
      const snapshot = await settled(tasks, taskId);
      const expected = snapshot.detail.reason === 'cancelled' ? 'killed' : 'completed';
      expect(snapshot.status).toBe(expected);
    }
    expect(done).toHaveLength(20);
    expect(new Set(done.map((snapshot) => snapshot.id)).size).toBe(20);
  });

  it('settles as lost when cancelled after the executor forgot the process', async () => {
    class ForgetfulExecutor extends BashExecutor {
      forgetful = false;
      override get(id: string) {
        return this.forgetful ? undefined : super.get(id);
      }
    }
    const tasks = createTaskService({ logger: capturingLogger() });
    tasks.attachController('test');
    const executor = new ForgetfulExecutor({ logger: capturingLogger() });
    const producer = new BashProducer({ tasks, executor });
    cleanups.push(
      () => tasks.dispose(),
      () => executor.dispose(),
      () => producer.dispose(),
    );
    const { taskId } = await producer.start({ command: 'sleep 1000' });
    executor.forgetful = true;
    await tasks.kill(taskId, trusted);
    const snapshot = await settled(tasks, taskId);
    expect(snapshot.status).toBe('lost');
    expect(snapshot.error).toContain('no longer knows');
  });
});

describe('detail and output', () => {
  it('publishes the command and pid at start, the output file once it exists, and output bytes throttled', async () => {
    const clock = createManualClock(1_000);
    const { tasks, producer } = setup({ producer: { clock, detailIntervalMs: 250 } });
    const owner = createOwner('session-1');
    cleanups.push(() => owner.dispose());
    const { taskId, handle, snapshot } = await producer.start({
      command: fixtureCommand('utf8-split'),
      description: 'split a character',
      owner,
      toolUseId: 'call_1',
      cwd: '/tmp',
    });
    expect(snapshot.detail).toMatchObject({
      description: 'split a character',
      toolUseId: 'call_1',
      cwd: '/tmp',
      pid: handle.pid,
      outputBytes: 0,
    });
    // The file is created by the first output, and only then published.
    const outputFile = await handle.outputFileReady;
    expect(tasks.get(taskId, owner).detail.outputFile).toBe(outputFile);
    expect(snapshot.label).toBe('split a character');
    expect(snapshot.outputLimitBytes).toBe(30_000);
    await waitForOutput(handle, 'ready');
    // The first progress goes out at once.
    expect(tasks.get(taskId, owner).detail.outputBytes).toBe(6);
    process.kill(handle.pid!, 'SIGUSR1');
    await handle.stopped;
    const final = await settled(tasks, taskId);
    expect(final.detail.outputBytes).toBe(10);
    expect(clock.pending).toBe(0);
  });

  it('defers progress within the interval and publishes the latest value after it', async () => {
    const clock = createManualClock(1_000);
    const { tasks, producer } = setup({ producer: { clock, detailIntervalMs: 250 } });
    const { taskId, handle } = await producer.start({ command: fixtureCommand('utf8-split', 'stderr') });
    await waitForOutput(handle, 'ready');
    await waitForOutput(handle, 'between');
    // "ready\n" published at once; "between\n" waits for the interval.
    expect(tasks.get(taskId).detail.outputBytes).toBeLessThan(handle.outputBytes);
    clock.advance(250);
    expect(tasks.get(taskId).detail.outputBytes).toBe(handle.outputBytes);
    process.kill(handle.pid!, 'SIGUSR1');
    await settled(tasks, taskId);
  });

  it('reads consuming deltas, and marks what a slow reader skipped and where the full output is', async () => {
    const { tasks, producer } = setup({ producer: { outputLimitBytes: 1000 } });
    const { taskId, handle } = await producer.start({ command: 'head -c 5000 /dev/zero | tr "\\0" x' });
    await settled(tasks, taskId);
    const first = await tasks.read(taskId);
    expect(first.text).toBe(
      `[... 4000 bytes skipped; full output: ${handle.outputFile} ...]\n${'x'.repeat(1000)}`,
    );
    expect((await tasks.read(taskId)).text).toBe('');
  });

  it('gives UIs a non-consuming snapshot of at most 8192 bytes, only to callers who may see the task', async () => {
    const { tasks, producer } = setup();
    const owner = createOwner('session-1');
    const stranger = createOwner('session-2');
    cleanups.push(
      () => owner.dispose(),
      () => stranger.dispose(),
    );
    const { taskId } = await producer.start({ command: 'head -c 20000 /dev/zero | tr "\\0" y', owner });
    await settled(tasks, taskId);
    const view = producer.snapshot(taskId, owner)!;
    expect(view.text).toBe('y'.repeat(8192));
    expect(view).toMatchObject({ taskId, skippedBytes: 20_000 - 8192, outputBytes: 20_000, running: false });
    expect(producer.snapshot(taskId, owner)!.text).toHaveLength(8192);
    expect(() => producer.snapshot(taskId, stranger)).toThrow(
      expect.objectContaining({ code: 'TASK_NOT_FOUND' }),
    );
    expect((await tasks.read(taskId, owner)).text).toHaveLength(20_000);
  });

  it('deletes the output file when the task service forgets the task', async () => {
    const { tasks, producer } = setup();
    const owner = createOwner('session-1');
    const { taskId, handle } = await producer.start({ command: 'echo kept', owner });
    await settled(tasks, taskId);
    expect(existsSync(handle.outputFile!)).toBe(true);
    await owner.dispose();
    await handle.stopped;
    await expect.poll(() => existsSync(handle.outputFile!)).toBe(false);
    expect(() => producer.snapshot(taskId, trusted)).toThrow(
      expect.objectContaining({ code: 'TASK_NOT_FOUND' }),
    );
    expect(producer.handleOf(taskId)).toBeUndefined();
  });
});

describe('preflight and scale', () => {
  it('spawns nothing when the registration preflight fails', async () => {
    const tasks = createTaskService({ logger: capturingLogger() });
    let spawns = 0;
    const executor = new BashExecutor({
      logger: capturingLogger(),
      spawn: () => {
        spawns += 1;
        throw new Error('must not spawn');
      },
    });
    const producer = new BashProducer({ tasks, executor });
    cleanups.push(
      () => tasks.dispose(),
      () => executor.dispose(),
      () => producer.dispose(),
    );
    await expect(producer.start({ command: 'true' })).rejects.toMatchObject({ code: 'NO_CONTROLLER' });
    expect(spawns).toBe(0);
    expect(executor.list()).toEqual([]);
  });

  it('runs 200 background commands at once and disposal leaves no process', async () => {
    const { tasks, producer } = setup({ service: { maxLiveTasks: 500, maxLiveTasksPerOwner: 500 } });
    const started = [];
    for (let index = 0; index < 200; index += 1) {
      started.push(await producer.start({ command: 'echo ready; exec sleep 1000' }));
    }
    await Promise.all(started.map(({ handle }) => waitForOutput(handle, 'ready')));
    expect(tasks.list().filter((task) => task.status === 'running')).toHaveLength(200);
    await tasks.dispose();
    expect(tasks.list().every((task) => task.status === 'killed')).toBe(true);
    expect(strayProcesses()).toEqual([]);
    // 200 spawns and 200 tree stops: on a loaded 2-core machine well over the default 30 s.
  }, 120_000);

  it('disposing the service stops trees with pipe holders, SIGTERM-ignorers and escapees', async () => {
    const { tasks, producer } = setup({ executor: { killGraceMs: 200 } });
    const commands = [
      fixtureCommand('hold-pipe'),
      fixtureCommand('ignore-term'),
      fixtureCommand('setsid-escape'),
      fixtureCommand('setsid-escape', 'detach'),
    ];
    const started = await Promise.all(commands.map((command) => producer.start({ command })));
    await Promise.all(started.map(({ handle }) => waitForOutput(handle, 'ready')));
    const ends: string[] = [];
    tasks.onTasksChanged((change) => void (change.reason === 'settled' && ends.push(change.task.status)));
    await tasks.dispose();
    expect(ends).toEqual(['killed', 'killed', 'killed', 'killed']);
    // The disposal forgot what it ended.
    expect(tasks.list()).toEqual([]);
    expect(strayProcesses()).toEqual([]);
  });
});
