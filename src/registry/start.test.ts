import { describe, expect, it, vi } from 'vitest';
import { flushMicrotasks, serviceForTest } from '../../test/support/registry.js';
import { createOwner, ErrandError, type TaskHooks, type TaskSpec } from '../tasks/index.js';
import { scriptedTask } from '../testing/index.js';
import { createTaskService } from './local-task-service.js';

function expectCode(error: unknown, code: string): void {
  expect(ErrandError.isInstance(error), `expected an ErrandError, got ${String(error)}`).toBe(true);
  expect((error as ErrandError).code).toBe(code);
}

async function startFailure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected start to fail');
}

describe('start: preflight before run()', () => {
  const invalidSpecs: Array<[string, Partial<TaskSpec>, string]> = [
    ['kind missing', { kind: undefined as never }, 'kind'],
    ['kind with capitals', { kind: 'Bash' }, 'kind'],
    ['empty label', { label: '   ' }, 'label'],
    ['label too long', { label: 'x'.repeat(2001) }, 'label'],
    ['zero output limit', { outputLimitBytes: 0 }, 'outputLimitBytes'],
    ['fractional output limit', { outputLimitBytes: 1.5 }, 'outputLimitBytes'],
    ['non-boolean background', { background: 'yes' as never }, 'background'],
    ['negative branch generation', { branchGeneration: -1 }, 'branchGeneration'],
    ['array detail', { detail: [] as never }, 'detail'],
  ];

  it.each(invalidSpecs)(
    'rejects %s with INVALID_TASK_SPEC naming the field, without running',
    async (_, patch, field) => {
      const { tasks } = serviceForTest();
      const task = scriptedTask();
      const error = await startFailure(tasks.start({ ...task.spec, ...patch }));
      expectCode(error, 'INVALID_TASK_SPEC');
      expect((error as ErrandError).context.field).toBe(field);
      expect((error as ErrandError).message).toContain(`\`${field}\``);
      expect(task.runCalls).toBe(0);
    },
  );

  it('rejects a spec without run()', async () => {
    const { tasks } = serviceForTest();
    const error = await startFailure(tasks.start({ kind: 'bash', label: 'x' } as TaskSpec));
    expectCode(error, 'INVALID_TASK_SPEC');
    expect((error as ErrandError).context.field).toBe('run');
  });

  it('a rejected start allocates no id', async () => {
    const { tasks } = serviceForTest();
    await startFailure(tasks.start({ ...scriptedTask({ kind: 'bash' }).spec, label: '' }));
    const started = await tasks.start(scriptedTask({ kind: 'bash' }).spec);
    expect(started.id).toBe('bash-1');
  });

  it('fails with NO_CONTROLLER before the producer runs, and again once the last controller detaches', async () => {
    const tasks = createTaskService();
    const first = scriptedTask();
    expectCode(await startFailure(tasks.start(first.spec)), 'NO_CONTROLLER');
    expect(first.runCalls).toBe(0);

    const detachA = tasks.attachController('a');
    const detachB = tasks.attachController('b');
    await tasks.start(scriptedTask().spec);
    detachA();
    await tasks.start(scriptedTask().spec);
    detachB();
    const late = scriptedTask();
    expectCode(await startFailure(tasks.start(late.spec)), 'NO_CONTROLLER');
    expect(late.runCalls).toBe(0);
  });

  it('fails with OWNER_DISPOSED for a disposed owner', async () => {
    const { tasks } = serviceForTest();
    const owner = createOwner('s1');
    await owner.dispose();
    const task = scriptedTask({ owner });
    expectCode(await startFailure(tasks.start(task.spec)), 'OWNER_DISPOSED');
    expect(task.runCalls).toBe(0);
  });

  it('fails with SERVICE_DISPOSED once the service is disposed', async () => {
    const { tasks } = serviceForTest();
    await tasks.dispose();
    const task = scriptedTask();
    expectCode(await startFailure(tasks.start(task.spec)), 'SERVICE_DISPOSED');
    expect(task.runCalls).toBe(0);
  });

  it('admits at most maxLiveTasksPerOwner live tasks per session; stopping counts until settled', async () => {
    const { tasks } = serviceForTest({ maxLiveTasksPerOwner: 2 });
    const owner = createOwner('s1');
    const first = scriptedTask({ owner, onCancel: 'ignore' });
    const second = scriptedTask({ owner });
    const a = await tasks.start(first.spec);
    await tasks.start(second.spec);

    const third = scriptedTask({ owner });
    expectCode(await startFailure(tasks.start(third.spec)), 'ADMISSION_LIMIT');
    expect(third.runCalls).toBe(0);

    await tasks.kill(a.id, owner);
    expect(tasks.get(a.id, owner).status).toBe('stopping');
    expectCode(await startFailure(tasks.start(third.spec)), 'ADMISSION_LIMIT');

    first.settle({ status: 'killed' });
    await flushMicrotasks();
    await tasks.start(third.spec);
    expect(third.runCalls).toBe(1);

    // Another session has its own allowance.
    await tasks.start(scriptedTask({ owner: createOwner('s2') }).spec);
  });

  it('applies the service-wide live limit to ownerless tasks too', async () => {
    const { tasks } = serviceForTest({ maxLiveTasks: 1 });
    await tasks.start(scriptedTask().spec);
    expectCode(await startFailure(tasks.start(scriptedTask().spec)), 'ADMISSION_LIMIT');
  });

  it('a run() that throws registers nothing and spends no id', async () => {
    const { tasks } = serviceForTest();
    const failure = new Error('spawn refused');
    const error = await startFailure(
      tasks.start({
        kind: 'bash',
        label: 'x',
        run: () => {
          throw failure;
        },
      }),
    );
    expect(error).toBe(failure);
    expect(tasks.list()).toEqual([]);
    expect((await tasks.start(scriptedTask({ kind: 'bash' }).spec)).id).toBe('bash-1');
  });

  it('rejects hooks that break the contract with PRODUCER_CONTRACT, cancelling what it can', async () => {
    const { tasks } = serviceForTest();
    const cancel = vi.fn();
    const error = await startFailure(
      tasks.start({ kind: 'bash', label: 'x', run: () => ({ cancel }) as unknown as TaskHooks }),
    );
    expectCode(error, 'PRODUCER_CONTRACT');
    expect(cancel).toHaveBeenCalledTimes(1);
    expect(tasks.list()).toEqual([]);
  });

  it('calls run() exactly once and commits the snapshot it returns', async () => {
    const { tasks, clock } = serviceForTest();
    clock.now = 42;
    const task = scriptedTask({ kind: 'bash', label: 'npm test', outputLimitBytes: 4096 });
    const snapshot = await tasks.start(task.spec);
    expect(task.runCalls).toBe(1);
    expect(snapshot).toMatchObject({
      id: 'bash-1',
      kind: 'bash',
      label: 'npm test',
      status: 'running',
      outputLimitBytes: 4096,
      reported: false,
      isBackgrounded: true,
      branchGeneration: 0,
      startedAt: 42,
      endedAt: undefined,
      attempt: 1,
      cancellable: true,
      finalOutput: false,
    });
    expect(Object.isFrozen(snapshot)).toBe(true);
    expect(task.context?.taskId).toBe('bash-1');
  });

  it('projects outputLimitBytes unchanged, and leaves it absent when not given', async () => {
    const { tasks } = serviceForTest();
    expect((await tasks.start(scriptedTask({ outputLimitBytes: 123 }).spec)).outputLimitBytes).toBe(123);
    expect((await tasks.start(scriptedTask().spec)).outputLimitBytes).toBeUndefined();
  });

  it('numbers ids per kind', async () => {
    const { tasks } = serviceForTest();
    const ids = [];
    for (const kind of ['bash', 'agent', 'bash', 'workflow', 'agent', 'bash']) {
      ids.push((await tasks.start(scriptedTask({ kind }).spec)).id);
    }
    expect(ids).toEqual(['bash-1', 'agent-1', 'bash-2', 'workflow-1', 'agent-2', 'bash-3']);
  });

  it('continues the sequences of an earlier process', async () => {
    const { tasks } = serviceForTest({ initialSequences: { bash: 41 } });
    expect((await tasks.start(scriptedTask({ kind: 'bash' }).spec)).id).toBe('bash-42');
    expect((await tasks.start(scriptedTask({ kind: 'agent' }).spec)).id).toBe('agent-1');
    expect(() => serviceForTest({ initialSequences: { bash: -1 } })).toThrow(/initialSequences.bash/);
    expect(() => serviceForTest({ initialSequences: { 'Bad Kind': 1 } })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('Bad Kind') }),
    );
  });

  it('still rejects a malformed kind once valid kinds have started', async () => {
    const { tasks } = serviceForTest();
    await tasks.start(scriptedTask({ kind: 'bash' }).spec);
    await expect(
      tasks.start({ ...scriptedTask({ kind: 'bash' }).spec, kind: 'Bash!' }),
    ).rejects.toMatchObject({
      code: 'INVALID_TASK_SPEC',
    });
  });

  it("keeps a finished streaming task's readOutput, and a finished plain task behaves the same without its hooks", async () => {
    const { tasks } = serviceForTest();
    const plain = scriptedTask({ kind: 'bash', streaming: false });
    const streaming = scriptedTask({ kind: 'bash' });
    const first = await tasks.start(plain.spec);
    const second = await tasks.start(streaming.spec);
    streaming.push('abc');
    plain.settle({ status: 'completed', output: 'final' });
    streaming.settle();
    await tasks.wait(first.id, 1000);
    await tasks.wait(second.id, 1000);
    expect(tasks.get(first.id)).toMatchObject({ status: 'completed', finalOutput: true });
    expect(await tasks.kill(first.id)).toMatchObject({ status: 'completed' });
    expect(plain.cancelReasons).toEqual([]);
    expect((await tasks.read(first.id)).text).toBe('final');
    expect((await tasks.read(second.id)).text).toBe('abc');
  });

  it('takes sequence numbers from reserved blocks, reserving another when one runs out, and gives back the rest', async () => {
    const reserved: Array<[string, number]> = [];
    const released: Array<[string, { first: number; last: number }, number]> = [];
    let next = 40;
    const { tasks } = serviceForTest({
      sequenceBlocks: {
        reserve: (kind, after) => {
          reserved.push([kind, after]);
          const block = { first: Math.max(next, after) + 1, last: Math.max(next, after) + 2 };
          next = block.last + 10;
          return block;
        },
        release: (kind, block, lastUsed) => void released.push([kind, block, lastUsed]),
      },
    });
    const ids: string[] = [];
    for (let index = 0; index < 3; index += 1)
      ids.push((await tasks.start(scriptedTask({ kind: 'bash' }).spec)).id);
    expect(ids).toEqual(['bash-41', 'bash-42', 'bash-53']);
    expect(reserved).toEqual([
      ['bash', 0],
      ['bash', 42],
    ]);
    await tasks.dispose();
    expect(released).toEqual([['bash', { first: 53, last: 54 }, 53]]);
  });

  it('rejects a start whose block cannot be reserved, before anything runs, and a malformed block', async () => {
    let answer: unknown = new Error('store unavailable');
    const { tasks } = serviceForTest({
      sequenceBlocks: {
        reserve: () => {
          if (answer instanceof Error) throw answer;
          return answer as never;
        },
      },
    });
    const task = scriptedTask({ kind: 'bash' });
    await expect(tasks.start(task.spec)).rejects.toThrow('store unavailable');
    answer = { first: 0, last: 5 };
    await expect(tasks.start(task.spec)).rejects.toMatchObject({ code: 'SEQUENCE_BLOCK_INVALID' });
    expect(task.runCalls).toBe(0);
    answer = { first: 7, last: 9 };
    expect((await tasks.start(task.spec)).id).toBe('bash-7');
    expect(() => serviceForTest({ sequenceBlocks: { reserve: 1 } as never })).toThrow(/sequenceBlocks/);
  });

  it('takes the id format from options', async () => {
    const { tasks } = serviceForTest({ formatId: (kind, sequence) => `${kind}-${sequence + 100}` });
    expect((await tasks.start(scriptedTask({ kind: 'bash' }).spec)).id).toBe('bash-101');
  });

  it('stamps the owner branch generation at registration, unless the spec overrides it', async () => {
    const { tasks } = serviceForTest();
    let generation = 3;
    const owner = createOwner('s1', { branchGeneration: () => generation });
    const first = await tasks.start(scriptedTask({ owner }).spec);
    generation = 4;
    const second = await tasks.start(scriptedTask({ owner }).spec);
    const third = await tasks.start(scriptedTask({ owner, spec: { branchGeneration: 9 } }).spec);
    expect([first, second, third].map((task) => task.branchGeneration)).toEqual([3, 4, 9]);
    expect(tasks.get(first.id, owner).branchGeneration).toBe(3);
  });

  it('keeps detail published during run() and after, and ignores it after settlement', async () => {
    const { tasks } = serviceForTest();
    let publish: ((patch: Record<string, unknown>) => void) | undefined;
    let settle: (() => void) | undefined;
    const snapshot = await tasks.start({
      kind: 'bash',
      label: 'x',
      detail: { command: 'ls' },
      run: (context) => {
        context.updateDetail({ pid: 7 });
        publish = context.updateDetail;
        return {
          cancel() {},
          done: new Promise((resolve) => {
            settle = () => resolve({ status: 'completed', detail: { exitCode: 0 } });
          }),
        };
      },
    });
    expect(snapshot.detail).toEqual({ command: 'ls', pid: 7 });
    publish?.({ outputBytes: 10 });
    expect(tasks.get(snapshot.id).detail).toEqual({ command: 'ls', pid: 7, outputBytes: 10 });
    settle?.();
    await flushMicrotasks();
    publish?.({ outputBytes: 99 });
    expect(tasks.get(snapshot.id).detail).toEqual({ command: 'ls', pid: 7, outputBytes: 10, exitCode: 0 });
  });

  it('registers foreground work too, marked as not backgrounded', async () => {
    const { tasks } = serviceForTest();
    const snapshot = await tasks.start(scriptedTask({ background: false }).spec);
    expect(snapshot.isBackgrounded).toBe(false);
    expect(tasks.list()).toHaveLength(1);
  });
});

describe('options', () => {
  it('rejects invalid limits with a message naming the option and value', () => {
    expect(() => createTaskService({ maxLiveTasksPerOwner: 0 })).toThrow(
      'Expected `maxLiveTasksPerOwner` to be a positive integer, got 0 (number)',
    );
    expect(() => createTaskService({ maxLiveTasks: -5 })).toThrow(/maxLiveTasks/);
    expect(() => createTaskService({ now: 5 as never })).toThrow(/`now`/);
  });

  it('rejects a logger without warn, and options that are not an object', () => {
    expect(() => createTaskService({ logger: {} as never })).toThrow(
      expect.objectContaining({
        code: 'INVALID_ARGUMENT',
        context: expect.objectContaining({ field: 'logger' }),
      }),
    );
    expect(() => createTaskService(null as never)).toThrow(
      expect.objectContaining({
        code: 'INVALID_ARGUMENT',
        context: expect.objectContaining({ field: 'options' }),
      }),
    );
  });

  it('rejects an unknown key, suggesting the close one', () => {
    expect(() => createTaskService({ maxLiveTask: 5 } as never)).toThrow(
      expect.objectContaining({
        code: 'UNKNOWN_OPTION',
        message: 'Unknown option `maxLiveTask` for createTaskService (did you mean `maxLiveTasks`?)',
      }),
    );
    expect(() => createTaskService({ maxLiveTasks: undefined })).not.toThrow();
  });

  it('createOwner rejects an unknown key', () => {
    expect(() => createOwner('s1', { branchGen: () => 0 } as never)).toThrow(
      expect.objectContaining({ code: 'UNKNOWN_OPTION', message: expect.stringContaining('`branchGen`') }),
    );
  });

  it('createOwner rejects a branchGeneration that is not a function', () => {
    expect(() => createOwner('s1', { branchGeneration: 3 as never })).toThrow(
      expect.objectContaining({
        code: 'INVALID_ARGUMENT',
        context: expect.objectContaining({ field: 'branchGeneration' }),
      }),
    );
  });
});
