/**
 * What the conformance suite cannot see of the in-process provider: its injected clock, id options,
 * sequence blocks and the hooks it lets go after settlement. The contract-level cases run in
 * local-task-service.conformance.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { serviceForTest } from '../../test/support/registry.js';
import { createOwner } from '../tasks/index.js';
import { scriptedTask } from '../testing/index.js';
import { createTaskService } from './local-task-service.js';

describe('start (in-process specifics)', () => {
  it('stamps the committed snapshot with the injected clock', async () => {
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
});

describe('options', () => {
  it('rejects invalid limits with a message naming the option and value', () => {
    expect(() => createTaskService({ maxLiveTasksPerOwner: 0 })).toThrow(
      'Expected `maxLiveTasksPerOwner` to be a positive integer, got 0 (number)',
    );
    expect(() => createTaskService({ maxLiveTasks: -5 })).toThrow(/maxLiveTasks/);
    expect(() => createTaskService({ maxLiveOwnerlessTasks: 0 })).toThrow(
      'Expected `maxLiveOwnerlessTasks` to be a positive integer, got 0 (number)',
    );
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
