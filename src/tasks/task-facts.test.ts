import { describe, expect, it } from 'vitest';
import { createTaskService } from '../registry/index.js';
import { createOwner } from './owner.js';
import { type TaskFacts, taskFact } from './task-facts.js';
import type { TaskOutcome } from './types.js';

interface CountdownFacts extends TaskFacts {
  readonly remaining?: number;
}

describe('taskFact', () => {
  it('reads a fact of its documented type and nothing else', () => {
    const task = {
      detail: {
        exitCode: 3,
        signal: 'SIGTERM',
        toolUseId: '',
        outputFile: 42,
        pid: Number.NaN,
        notificationLane: 'loud',
        usage: { totalTokens: 5 },
      },
    };
    expect(taskFact(task, 'exitCode')).toBe(3);
    expect(taskFact(task, 'signal')).toBe('SIGTERM');
    // Empty strings, wrong types and non-finite numbers read as absent.
    expect(taskFact(task, 'toolUseId')).toBeUndefined();
    expect(taskFact(task, 'outputFile')).toBeUndefined();
    expect(taskFact(task, 'pid')).toBeUndefined();
    expect(taskFact(task, 'notificationLane')).toBeUndefined();
    expect(taskFact({ detail: { notificationLane: 'quiet' } }, 'notificationLane')).toBe('quiet');
    expect(taskFact(task, 'usage')).toEqual({ totalTokens: 5 });
    expect(taskFact({ detail: { usage: [1] } }, 'usage')).toBeUndefined();
    expect(taskFact({ detail: {} }, 'reason')).toBeUndefined();
  });

  it('refuses a key that is not a fact, at compile time', () => {
    const task = { detail: { exitCode: 0 } };
    // @ts-expect-error `exitcode` is not a fact
    expect(() => taskFact(task, 'exitcode')).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('exitcode') }),
    );
  });
});

describe('a producer typed by its facts', () => {
  it('publishes, merges and projects its own facts; a misspelt key does not compile', async () => {
    const tasks = createTaskService();
    tasks.attachController('test');
    const owner = createOwner('session-1');
    let finish!: (outcome: TaskOutcome<CountdownFacts>) => void;
    const snapshot = await tasks.start<CountdownFacts>({
      kind: 'countdown',
      label: 'countdown',
      owner,
      detail: { remaining: 2, description: 'count down 2 s' },
      run: (context) => {
        context.updateDetail({ remaining: 1 });
        // @ts-expect-error `remainig` is not a countdown fact
        context.updateDetail({ remainig: 0 });
        return {
          cancel() {},
          done: new Promise<TaskOutcome<CountdownFacts>>((resolve) => {
            finish = resolve;
          }),
        };
      },
    });
    const remaining: number | undefined = snapshot.detail.remaining;
    expect(remaining).toBe(1);
    finish({ status: 'completed', detail: { remaining: 0, exitCode: 0 } });
    const ended = await tasks.wait(snapshot.id, 1000, owner);
    // The registry stores what it is given, misspelt keys included: only the compiler refuses them.
    expect(ended.detail).toEqual({
      remaining: 0,
      remainig: 0,
      description: 'count down 2 s',
      exitCode: 0,
    });
    await tasks.dispose();
  });

  it('checks the common facts of a task without a facts type of its own', async () => {
    const tasks = createTaskService();
    tasks.attachController('test');
    const started = await tasks.start({
      kind: 'probe',
      label: 'probe',
      // @ts-expect-error `exit_code` is not a fact
      detail: { exit_code: 1 },
      run: () => {
        let stop!: () => void;
        const done = new Promise<TaskOutcome>((resolve) => {
          stop = () => resolve({ status: 'killed' });
        });
        return { cancel: () => stop(), done };
      },
    });
    expect(started.detail).toEqual({ exit_code: 1 });
    await tasks.dispose();
  });
});
