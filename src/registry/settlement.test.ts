import { describe, expect, it } from 'vitest';
import { flushMicrotasks, serviceForTest } from '../../test/support/registry.js';
import {
  createOwner,
  createTrustedCaller,
  ErrandError,
  type TaskOutcome,
  type TaskSnapshot,
} from '../tasks/index.js';
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

  it('a done promise that rejects is a contract violation: failed, with a warning', async () => {
    const { tasks, logger } = serviceForTest();
    const task = scriptedTask();
    const { id } = await tasks.start(task.spec);
    task.reject(new Error('boom'));
    await flushMicrotasks();
    expect(tasks.get(id)).toMatchObject({ status: 'failed' });
    expect(tasks.get(id).error).toMatch(/boom/);
    expect(logger.warnings).toHaveLength(1);
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

  it('records outputs, results and errors from the outcome', async () => {
    const { tasks } = serviceForTest();
    const task = scriptedTask({ streaming: false });
    const { id } = await tasks.start(task.spec);
    task.settle({ status: 'failed', output: 'partial', error: 'child crashed', resultText: 'r' });
    await flushMicrotasks();
    expect(tasks.get(id)).toMatchObject({ status: 'failed', error: 'child crashed', resultText: 'r' });
    expect((await tasks.read(id)).text).toBe('partial');
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

  it('delivers to the exact owner instance only, never to a replacement with the same session id', async () => {
    const { tasks } = serviceForTest();
    const original = createOwner('s1');
    const replacement = createOwner('s1');
    const toOriginal: string[] = [];
    const toReplacement: string[] = [];
    tasks.onTaskDone((snapshot) => void toOriginal.push(snapshot.id), { owner: original });
    tasks.onTaskDone((snapshot) => void toReplacement.push(snapshot.id), { owner: replacement });
    const a = scriptedTask({ owner: original });
    const b = scriptedTask({ owner: replacement });
    const taskA = await tasks.start(a.spec);
    const taskB = await tasks.start(b.spec);
    a.settle();
    b.settle();
    await flushMicrotasks();
    expect(toOriginal).toEqual([taskA.id]);
    expect(toReplacement).toEqual([taskB.id]);
  });

  it('stops delivering once disposed', async () => {
    const { tasks } = serviceForTest();
    const seen: string[] = [];
    const dispose = tasks.onTaskDone((snapshot) => void seen.push(snapshot.id));
    dispose();
    const task = scriptedTask();
    await tasks.start(task.spec);
    task.settle();
    await flushMicrotasks();
    expect(seen).toEqual([]);
  });
});

describe('onTasksChanged (the level signal)', () => {
  it('reports registration, stopping, settlement, claims and removal with the caller-visible set', async () => {
    const { tasks } = serviceForTest();
    const owner = createOwner('s1');
    const other = createOwner('s2');
    const changes: Array<[string, string, number]> = [];
    tasks.onTasksChanged(
      (change) => void changes.push([change.reason, change.task.id, change.tasks().length]),
      {
        caller: owner,
      },
    );
    await tasks.start(scriptedTask({ owner: other }).spec);
    const task = scriptedTask({ owner, kind: 'bash' });
    const { id } = await tasks.start(task.spec);
    await tasks.kill(id, owner);
    await flushMicrotasks();
    expect(tasks.claim(id, owner)).toBe(true);
    await owner.dispose();
    expect(changes).toEqual([
      ['started', id, 1],
      ['stopping', id, 1],
      ['settled', id, 1],
      ['claimed', id, 1],
      ['removed', id, 0],
    ]);
  });

  it('isolates a throwing change listener', async () => {
    const { tasks, logger } = serviceForTest();
    tasks.onTasksChanged(() => {
      throw new Error('view broke');
    });
    const seen: string[] = [];
    tasks.onTasksChanged((change) => void seen.push(change.reason));
    await tasks.start(scriptedTask().spec);
    expect(seen).toEqual(['started']);
    expect(logger.warnings).toHaveLength(1);
  });
});

describe('claims', () => {
  it('first claimant wins; a returned claim can be taken again; live tasks cannot be claimed', async () => {
    const { tasks } = serviceForTest();
    const task = scriptedTask();
    const { id } = await tasks.start(task.spec);
    expect(tasks.claim(id)).toBe(false);
    task.settle();
    await flushMicrotasks();
    expect(tasks.claim(id)).toBe(true);
    expect(tasks.claim(id)).toBe(false);
    expect(tasks.get(id).reported).toBe(true);
    tasks.releaseClaim(id);
    expect(tasks.get(id).reported).toBe(false);
    expect(tasks.claim(id)).toBe(true);
  });

  it('a claim that settlement handed to several waiters stays taken until each of them returned it', async () => {
    const { tasks } = serviceForTest();
    const task = scriptedTask();
    const { id } = await tasks.start(task.spec);
    const first = tasks.wait(id, 60_000);
    const second = tasks.wait(id, 60_000);
    task.settle();
    expect(await first).toMatchObject({ status: 'completed', reported: true });
    expect(await second).toMatchObject({ status: 'completed', reported: true });
    // One waiter returns its share: the other still received the end, so nobody may notify it.
    tasks.releaseClaim(id);
    expect(tasks.get(id).reported).toBe(true);
    expect(tasks.claim(id)).toBe(false);
    tasks.releaseClaim(id);
    expect(tasks.get(id).reported).toBe(false);
    expect(tasks.claim(id)).toBe(true);
  });
});

describe('background flag', () => {
  it('moves foreground work to the background and wakes its waiter', async () => {
    const { tasks } = serviceForTest();
    const task = scriptedTask({ background: false });
    const { id } = await tasks.start(task.spec);
    const moved = tasks.waitForBackground(id);
    expect(tasks.requestBackground(id).isBackgrounded).toBe(true);
    await expect(moved).resolves.toBe('backgrounded');
    await expect(tasks.waitForBackground(id)).resolves.toBe('backgrounded');
  });

  it('tells a background waiter when the task settled first, and honours abort', async () => {
    const { tasks } = serviceForTest();
    const task = scriptedTask({ background: false });
    const { id } = await tasks.start(task.spec);
    const controller = new AbortController();
    const aborted = tasks.waitForBackground(id, undefined, controller.signal);
    const settled = tasks.waitForBackground(id);
    controller.abort();
    await expect(aborted).rejects.toMatchObject({ code: 'WAIT_ABORTED' });
    task.settle();
    await expect(settled).resolves.toBe('settled');
    expect(tasks.requestBackground(id).isBackgrounded).toBe(false);
  });
});

describe('stop initiator and messages', () => {
  it('records the initiator before a stop', async () => {
    const { tasks } = serviceForTest();
    const task = scriptedTask({ onCancel: 'ignore' });
    const { id } = await tasks.start(task.spec);
    expect(tasks.setStopInitiator(id, 'user').stopInitiator).toBe('user');
    expect(() => tasks.setStopInitiator(id, 'robot' as never)).toThrow(/initiator/);
    const killed = await tasks.kill(id, undefined, 'enough', { initiator: 'model' });
    expect(killed.stopInitiator).toBe('model');
    expect(task.cancelReasons).toEqual(['enough']);
  });

  it('forwards messages to running tasks that accept them', async () => {
    const { tasks } = serviceForTest();
    const task = scriptedTask({ acceptsMessages: true });
    const { id } = await tasks.start(task.spec);
    tasks.sendMessage(id, 'also check the docs');
    expect(task.messages).toEqual(['also check the docs']);
    const mute = await tasks.start(scriptedTask().spec);
    expect(() => tasks.sendMessage(mute.id, 'hi')).toThrow(
      expect.objectContaining({ code: 'MESSAGES_NOT_SUPPORTED' }) as unknown as Error,
    );
    expect(() => tasks.sendMessage(id, '')).toThrow(/`message`/);
    task.settle();
    await flushMicrotasks();
    try {
      tasks.sendMessage(id, 'late');
      expect.unreachable();
    } catch (error) {
      expect(ErrandError.hasCode(error, 'TASK_NOT_RUNNING')).toBe(true);
    }
  });
});

describe('resume (re-registration under the same id)', () => {
  it('resets the settlement surface and re-stamps the branch generation', async () => {
    const { tasks, clock } = serviceForTest();
    let generation = 1;
    const owner = createOwner('s1', { branchGeneration: () => generation });
    const done: string[] = [];
    tasks.onTaskDone((snapshot) => void done.push(`${snapshot.id}:${snapshot.attempt}:${snapshot.status}`));
    const first = scriptedTask({ owner, kind: 'workflow' });
    const { id } = await tasks.start(first.spec);
    first.settle({ status: 'failed', error: 'step 2 failed' });
    await flushMicrotasks();
    expect(tasks.claim(id, owner)).toBe(true);

    generation = 2;
    clock.now = 5_000;
    const second = scriptedTask({ owner, kind: 'workflow', spec: { resumeId: id } });
    const resumed = await tasks.start(second.spec);
    expect(resumed).toMatchObject({
      id,
      status: 'running',
      reported: false,
      endedAt: undefined,
      error: undefined,
      branchGeneration: 2,
      attempt: 2,
    });
    // The first attempt's late outcome must not settle the second.
    first.settle({ status: 'completed' });
    await flushMicrotasks();
    expect(tasks.get(id, owner).status).toBe('running');
    second.settle();
    await flushMicrotasks();
    expect(done).toEqual([`${id}:1:failed`, `${id}:2:completed`]);
    // New ids keep counting after the resumed one.
    expect((await tasks.start(scriptedTask({ owner, kind: 'workflow' }).spec)).id).toBe('workflow-2');
  });

  it('a read of an earlier attempt that ends after a resume does not claim the new attempt', async () => {
    const { tasks } = serviceForTest();
    let finishRead: ((text: string) => void) | undefined;
    let settleFirst: ((outcome: TaskOutcome) => void) | undefined;
    const { id } = await tasks.start({
      kind: 'workflow',
      label: 'slow reader',
      run: () => ({
        cancel() {},
        done: new Promise<TaskOutcome>((resolve) => {
          settleFirst = resolve;
        }),
        readOutput: () => new Promise<string>((resolve) => (finishRead = resolve)),
      }),
    });
    settleFirst?.({ status: 'failed' });
    await flushMicrotasks();
    const reading = tasks.read(id);
    await flushMicrotasks();
    const second = scriptedTask({ kind: 'workflow', spec: { resumeId: id } });
    await tasks.start(second.spec);
    second.settle();
    await flushMicrotasks();
    finishRead?.('output of the first attempt');
    const read = await reading;
    expect(read.text).toBe('output of the first attempt');
    expect(read.snapshot).toMatchObject({ status: 'failed', attempt: 1 });
    // The second attempt's result was never read: its notifier can still claim it.
    expect(tasks.get(id).reported).toBe(false);
    expect(tasks.claim(id)).toBe(true);
  });

  it('refuses to resume a live task, or another session\u2019s task', async () => {
    const { tasks } = serviceForTest();
    const owner = createOwner('s1');
    const { id } = await tasks.start(scriptedTask({ owner, kind: 'agent' }).spec);
    const live = scriptedTask({ owner, kind: 'agent', spec: { resumeId: id } });
    await expect(tasks.start(live.spec)).rejects.toMatchObject({ code: 'TASK_NOT_RESUMABLE' });
    const foreign = scriptedTask({ owner: createOwner('s2'), kind: 'agent', spec: { resumeId: id } });
    await expect(tasks.start(foreign.spec)).rejects.toMatchObject({ code: 'TASK_NOT_FOUND' });
    expect(live.runCalls + foreign.runCalls).toBe(0);
  });

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

describe('retention', () => {
  it('forgets the oldest finished tasks beyond the per-session bound, never live ones', async () => {
    const { tasks } = serviceForTest({ maxRetainedTasksPerOwner: 2 });
    const live = await tasks.start(scriptedTask().spec);
    const ids: string[] = [];
    for (let index = 0; index < 4; index += 1) {
      const task = scriptedTask();
      ids.push((await tasks.start(task.spec)).id);
      task.settle();
      await flushMicrotasks();
    }
    expect(tasks.list().map((snapshot) => snapshot.id)).toEqual([live.id, ids[2], ids[3]]);
    expect(() => tasks.get(ids[0]!)).toThrow(/No task/);
  });
});
