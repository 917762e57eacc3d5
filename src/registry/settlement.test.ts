/**
 * What the conformance suite cannot see of the in-process provider: the injected clock on end and stop
 * times, its warnings' wording, the reasons it passes to cancel, and snapshot caching. The contract-level
 * cases run in local-task-service.conformance.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { flushMicrotasks, serviceForTest } from '../../test/support/registry.js';
import { createOwner, createTrustedCaller, type TaskOutcome, type TaskSnapshot } from '../tasks/index.js';
import { scriptedTask } from '../testing/index.js';

describe('settlement', () => {
  it('is first-outcome-wins, and notifies once', async () => {
    const { tasks, clock } = serviceForTest();
    const done: TaskSnapshot[] = [];
    tasks.onTaskDone((snapshot) => void done.push(snapshot));
    const task = scriptedTask();
    const { id } = await tasks.start(task.spec);
    clock.now = 2_000;
    task.settle({ status: 'completed', detail: { exitCode: 0 } });
    task.settle({ status: 'failed' });
    await flushMicrotasks();
    expect(tasks.get(id)).toMatchObject({ status: 'completed', endedAt: 2_000, detail: { exitCode: 0 } });
    expect(done.map((snapshot) => snapshot.status)).toEqual(['completed']);
  });

  it('a cancel that throws during disposal forces failed with a warning; the late outcome changes nothing', async () => {
    const { tasks, logger } = serviceForTest();
    const owner = createOwner('s1');
    const done: TaskSnapshot[] = [];
    tasks.onTaskDone((snapshot) => void done.push(snapshot));
    const task = scriptedTask({ owner, onCancel: 'throw' });
    const { id } = await tasks.start(task.spec);
    let lastSeen: TaskSnapshot | undefined;
    tasks.onTasksChanged(
      (change) => {
        if (change.task.id === id) lastSeen = change.task;
      },
      { caller: createTrustedCaller('test') },
    );

    await owner.dispose();
    expect(done).toHaveLength(1);
    expect(done[0]).toMatchObject({ status: 'failed' });
    expect(done[0]?.error).toMatch(/work may be left behind/);
    expect(logger.warnings.map((warning) => warning.message).join('\n')).toMatch(/cancel threw/);

    task.settle({ status: 'completed' });
    await flushMicrotasks();
    expect(done).toHaveLength(1);
    expect(lastSeen?.status).toBe('failed');
  });

  it('an outcome with an unknown status settles as failed', async () => {
    const { tasks, logger } = serviceForTest();
    const task = scriptedTask();
    const { id } = await tasks.start(task.spec);
    task.settle({ status: 'running' } as unknown as TaskOutcome);
    await flushMicrotasks();
    expect(tasks.get(id).status).toBe('failed');
    expect(logger.warnings[0]?.message).toMatch(/invalid outcome/);
  });
});

describe('onTaskDone', () => {
  it('isolates listeners: a throwing or rejecting listener is logged and the next still runs', async () => {
    const { tasks, logger } = serviceForTest();
    const calls: string[] = [];
    tasks.onTaskDone(() => {
      calls.push('first');
      throw new Error('listener broke');
    });
    tasks.onTaskDone(async () => {
      calls.push('second');
      throw new Error('async listener broke');
    });
    tasks.onTaskDone(() => void calls.push('third'));
    const task = scriptedTask();
    const { id } = await tasks.start(task.spec);
    task.settle();
    await flushMicrotasks();
    expect(calls).toEqual(['first', 'second', 'third']);
    expect(tasks.get(id).status).toBe('completed');
    expect(logger.warnings.map((warning) => warning.context?.error)).toEqual([
      'listener broke',
      'async listener broke',
    ]);
  });
});

describe('resume (re-registration under the same id)', () => {
  it('re-registers an id restored from elsewhere and keeps the counter ahead of it', async () => {
    const { tasks } = serviceForTest();
    const restored = await tasks.start(
      scriptedTask({ kind: 'bash', spec: { resumeId: 'bash-7' as never } }).spec,
    );
    expect(restored.id).toBe('bash-7');
    expect((await tasks.start(scriptedTask({ kind: 'bash' }).spec)).id).toBe('bash-8');
    await expect(
      tasks.start(scriptedTask({ kind: 'bash', spec: { resumeId: 'agent-1' as never } }).spec),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

describe('kill', () => {
  it('requests cancel with the reason, moving the task to stopping until the producer settles', async () => {
    const { tasks, clock } = serviceForTest();
    const task = scriptedTask({ onCancel: 'ignore' });
    const { id } = await tasks.start(task.spec);
    clock.now = 3_000;
    const stopping = await tasks.kill(id, undefined, 'obsolete');
    expect(stopping).toMatchObject({ status: 'stopping', cancelRequestedAt: 3_000 });
    expect(task.cancelReasons).toEqual(['obsolete']);
    await tasks.kill(id);
    expect(task.cancelReasons).toEqual(['obsolete']);
    task.settle({ status: 'killed', detail: { signal: 'SIGTERM' } });
    await flushMicrotasks();
    expect(tasks.get(id)).toMatchObject({ status: 'killed', detail: { signal: 'SIGTERM' } });
  });
});

describe('teardown', () => {
  it('tells the producer why: "owner disposal" or "service disposal"', async () => {
    const { tasks } = serviceForTest();
    const owner = createOwner('s1');
    const owned = scriptedTask({ owner });
    const ownerless = scriptedTask();
    await tasks.start(owned.spec);
    await tasks.start(ownerless.spec);
    await owner.dispose();
    await tasks.dispose();
    expect(owned.cancelReasons).toEqual(['owner disposal']);
    expect(ownerless.cancelReasons).toEqual(['service disposal']);
  });
});

describe('detach', () => {
  it('a teardown lets go of work that offers detach instead of cancelling it; a kill still cancels', async () => {
    const { tasks } = serviceForTest();
    const owner = createOwner('s1');
    const calls: string[] = [];
    const durable = (name: string) => {
      let finish!: (outcome: TaskOutcome) => void;
      const done = new Promise<TaskOutcome>((resolve) => {
        finish = resolve;
      });
      return tasks.start({
        kind: 'bash',
        label: name,
        owner,
        run: () => ({
          cancel: (reason) => {
            calls.push(`${name}: cancel ${reason}`);
            finish({ status: 'killed' });
          },
          detach: () => {
            calls.push(`${name}: detach`);
            finish({ status: 'lost', detail: { detached: true } });
          },
          done,
        }),
      });
    };
    const killed = await durable('killed');
    await durable('released');
    const statuses: string[] = [];
    tasks.onTasksChanged(
      (change) => {
        if (change.task.label === 'released') statuses.push(change.task.status);
      },
      { caller: createTrustedCaller('test') },
    );
    await tasks.kill(killed.id, owner, 'no longer needed');
    await owner.dispose();
    expect(calls).toEqual(['killed: cancel no longer needed', 'released: detach']);
    // Let go of, never shown stopping.
    expect(statuses).not.toContain('stopping');
  });
});

describe('service disposal', () => {
  it('cancels every live task and waits for compliant producers', async () => {
    const { tasks } = serviceForTest();
    const owner = createOwner('s1');
    const a = scriptedTask({ owner });
    const b = scriptedTask({ onCancel: 'ignore' });
    await tasks.start(a.spec);
    await tasks.start(b.spec);
    let disposed = false;
    const disposal = tasks.dispose().then(() => {
      disposed = true;
    });
    await flushMicrotasks(20);
    expect(disposed).toBe(false);
    b.settle({ status: 'killed' });
    await disposal;
    expect(a.cancelReasons).toEqual(['service disposal']);
    expect(tasks.dispose()).toBe(tasks.dispose());
  });
});

describe('snapshots', () => {
  it('are frozen and stable while nothing changes', async () => {
    const { tasks } = serviceForTest();
    const { id } = await tasks.start(scriptedTask({ spec: { detail: { pid: 1 } } }).spec);
    const first: TaskSnapshot = tasks.get(id);
    expect(tasks.get(id)).toBe(first);
    expect(Object.isFrozen(first.detail)).toBe(true);
    expect(() => {
      (first as { status: string }).status = 'completed';
    }).toThrow();
  });
});
