import { afterEach, describe, expect, it, vi } from 'vitest';
import { flushMicrotasks, serviceForTest } from '../../test/support/registry.js';
import { createOwner, createTrustedCaller, type TaskSnapshot } from '../tasks/index.js';
import { scriptedTask } from '../testing/index.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('read', () => {
  it('returns streaming output since the last read, and claims delivery once the task is terminal', async () => {
    const { tasks } = serviceForTest();
    const task = scriptedTask();
    const { id } = await tasks.start(task.spec);
    task.push('one\n');
    expect((await tasks.read(id)).text).toBe('one\n');
    expect((await tasks.read(id)).text).toBe('');
    task.push('two\n');
    task.settle();
    await flushMicrotasks();
    const last = await tasks.read(id);
    expect(last.text).toBe('two\n');
    expect(last.snapshot).toMatchObject({ status: 'completed', reported: true });
  });

  it('does not claim when the task was still running at the start of the read', async () => {
    const { tasks } = serviceForTest();
    const task = scriptedTask();
    const { id } = await tasks.start(task.spec);
    await tasks.read(id);
    task.settle();
    await flushMicrotasks();
    expect(tasks.get(id).reported).toBe(false);
  });

  it('serializes concurrent reads so deltas never interleave', async () => {
    const { tasks } = serviceForTest();
    const order: string[] = [];
    let release: (() => void) | undefined;
    let calls = 0;
    const { id } = await tasks.start({
      kind: 'bash',
      label: 'slow reader',
      run: () => ({
        cancel() {},
        done: new Promise(() => {}),
        readOutput: async () => {
          calls += 1;
          const call = calls;
          order.push(`begin ${call}`);
          if (call === 1) await new Promise<void>((resolve) => (release = resolve));
          order.push(`end ${call}`);
          return `chunk ${call}`;
        },
      }),
    });
    const first = tasks.read(id);
    const second = tasks.read(id);
    await flushMicrotasks();
    release?.();
    expect((await first).text).toBe('chunk 1');
    expect((await second).text).toBe('chunk 2');
    expect(order).toEqual(['begin 1', 'end 1', 'begin 2', 'end 2']);
  });

  it('returns a final-output task\u2019s result once settled, idempotently', async () => {
    const { tasks } = serviceForTest();
    const task = scriptedTask({ streaming: false });
    const { id } = await tasks.start(task.spec);
    expect(await tasks.read(id)).toMatchObject({
      text: '',
      snapshot: { status: 'running', finalOutput: true },
    });
    task.settle({ status: 'completed', output: 'the answer' });
    await flushMicrotasks();
    expect((await tasks.read(id)).text).toBe('the answer');
    expect((await tasks.read(id)).text).toBe('the answer');
    expect(tasks.get(id).reported).toBe(true);
  });

  it('wraps a failing readOutput as a producer error', async () => {
    const { tasks } = serviceForTest();
    const { id } = await tasks.start({
      kind: 'bash',
      label: 'x',
      run: () => ({
        cancel() {},
        done: new Promise(() => {}),
        readOutput: () => {
          throw new Error('disk gone');
        },
      }),
    });
    await expect(tasks.read(id)).rejects.toMatchObject({ code: 'PRODUCER_CONTRACT', fault: 'producer' });
  });
});

describe('wait', () => {
  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31, '100'])(
    'rejects the timeout %s with INVALID_TIMEOUT',
    async (timeout) => {
      const { tasks } = serviceForTest();
      const { id } = await tasks.start(scriptedTask().spec);
      await expect(tasks.wait(id, timeout as number)).rejects.toMatchObject({
        code: 'INVALID_TIMEOUT',
        context: { field: 'timeoutMs' },
      });
    },
  );

  it('resolves with the terminal snapshot and claims delivery, so no notification follows', async () => {
    const { tasks } = serviceForTest();
    const notified: string[] = [];
    tasks.onTaskDone((snapshot) => {
      if (tasks.claim(snapshot.id)) notified.push(snapshot.id);
    });
    const task = scriptedTask();
    const { id } = await tasks.start(task.spec);
    const waiting = tasks.wait(id, 10_000);
    task.settle();
    await expect(waiting).resolves.toMatchObject({ status: 'completed', reported: true });
    expect(notified).toEqual([]);
  });

  it('returns the live snapshot on timeout without claiming or stopping the task', async () => {
    vi.useFakeTimers();
    const { tasks } = serviceForTest();
    const notified: string[] = [];
    tasks.onTaskDone((snapshot) => {
      if (tasks.claim(snapshot.id)) notified.push(snapshot.id);
    });
    const task = scriptedTask();
    const { id } = await tasks.start(task.spec);
    const waiting = tasks.wait(id, 5_000);
    await vi.advanceTimersByTimeAsync(5_000);
    await expect(waiting).resolves.toMatchObject({ status: 'running', reported: false });
    expect(task.cancelReasons).toEqual([]);
    task.settle();
    await flushMicrotasks();
    expect(notified).toEqual([id]);
  });

  it('returns a terminal snapshot at once for a finished task, claiming it', async () => {
    const { tasks } = serviceForTest();
    const task = scriptedTask();
    const { id } = await tasks.start(task.spec);
    task.settle({ status: 'failed' });
    await flushMicrotasks();
    await expect(tasks.wait(id, 1)).resolves.toMatchObject({ status: 'failed', reported: true });
  });

  it('aborting cancels only that wait', async () => {
    const { tasks } = serviceForTest();
    const task = scriptedTask();
    const { id } = await tasks.start(task.spec);
    const controller = new AbortController();
    const aborted = tasks.wait(id, 10_000, undefined, controller.signal);
    const other = tasks.wait(id, 10_000);
    controller.abort(new Error('turn interrupted'));
    await expect(aborted).rejects.toMatchObject({ code: 'WAIT_ABORTED' });
    expect(tasks.get(id).status).toBe('running');
    task.settle();
    await expect(other).resolves.toMatchObject({ status: 'completed' });
  });

  it('rejects at once for an already aborted signal', async () => {
    const { tasks } = serviceForTest();
    const { id } = await tasks.start(scriptedTask().spec);
    await expect(tasks.wait(id, 1_000, undefined, AbortSignal.abort())).rejects.toMatchObject({
      code: 'WAIT_ABORTED',
    });
  });

  it('an abort in the same tick before settlement unregisters the waiter, so the notification is not suppressed', async () => {
    const { tasks } = serviceForTest();
    const notified: string[] = [];
    tasks.onTaskDone((snapshot) => {
      if (tasks.claim(snapshot.id)) notified.push(snapshot.id);
    });
    const task = scriptedTask();
    const { id } = await tasks.start(task.spec);
    const controller = new AbortController();
    const waiting = tasks.wait(id, 10_000, undefined, controller.signal);
    task.settle();
    controller.abort();
    await expect(waiting).rejects.toMatchObject({ code: 'WAIT_ABORTED' });
    expect(notified).toEqual([id]);
  });

  it('when settlement already assigned delivery to the waiter, a later abort leaves it the terminal snapshot', async () => {
    const { tasks } = serviceForTest();
    const notified: string[] = [];
    let controller: AbortController | undefined;
    tasks.onTaskDone((snapshot) => {
      // Aborts in the very step that settled the task: the waiter already holds the result.
      controller?.abort();
      if (tasks.claim(snapshot.id)) notified.push(snapshot.id);
    });
    const task = scriptedTask();
    const { id } = await tasks.start(task.spec);
    controller = new AbortController();
    const waiting = tasks.wait(id, 10_000, undefined, controller.signal);
    task.settle();
    await expect(waiting).resolves.toMatchObject({ status: 'completed', reported: true });
    expect(notified).toEqual([]);
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

  it('returns a terminal task as it is', async () => {
    const { tasks } = serviceForTest();
    const task = scriptedTask();
    const { id } = await tasks.start(task.spec);
    task.settle();
    await flushMicrotasks();
    await expect(tasks.kill(id)).resolves.toMatchObject({ status: 'completed' });
    expect(task.cancelReasons).toEqual([]);
  });

  it('a producer whose cancel throws makes the kill fail and the task keeps running', async () => {
    const { tasks } = serviceForTest();
    const task = scriptedTask({ onCancel: 'throw' });
    const { id } = await tasks.start(task.spec);
    await expect(tasks.kill(id)).rejects.toMatchObject({ code: 'CANCEL_FAILED', fault: 'producer' });
    expect(tasks.get(id)).toMatchObject({ status: 'running', cancelRequestedAt: undefined });
  });

  it('refuses non-cancellable tasks with CANCEL_NOT_SUPPORTED, but disposal still stops them', async () => {
    const { tasks } = serviceForTest();
    const task = scriptedTask({ cancellable: false, kind: 'monitor' });
    const { id } = await tasks.start(task.spec);
    await expect(tasks.kill(id)).rejects.toMatchObject({ code: 'CANCEL_NOT_SUPPORTED' });
    expect(task.cancelReasons).toEqual([]);
    await tasks.dispose();
    expect(task.cancelReasons).toEqual(['service disposal']);
    expect(tasks.get(id).status).toBe('killed');
  });
});

describe('authorization', () => {
  it('shows another session\u2019s task exactly like an unknown id', async () => {
    const { tasks } = serviceForTest();
    const alice = createOwner('alice');
    const bob = createOwner('bob');
    const { id } = await tasks.start(scriptedTask({ owner: alice }).spec);
    const messages = [];
    for (const attempt of [
      () => tasks.get(id, bob),
      () => tasks.get('bash-999', bob),
      () => tasks.get(id),
      () => tasks.claim(id, bob),
      () => tasks.requestBackground(id, bob),
    ]) {
      try {
        attempt();
        expect.unreachable();
      } catch (error) {
        messages.push((error as { code: string }).code);
      }
    }
    expect(messages).toEqual(Array(5).fill('TASK_NOT_FOUND'));
    await expect(tasks.read(id, bob)).rejects.toMatchObject({ code: 'TASK_NOT_FOUND' });
    await expect(tasks.wait(id, 100, bob)).rejects.toMatchObject({ code: 'TASK_NOT_FOUND' });
    await expect(tasks.kill(id, bob)).rejects.toMatchObject({ code: 'TASK_NOT_FOUND' });
    expect(tasks.get(id, alice).ownerSessionId).toBe('alice');
  });

  it('grants access by session equality, to a new owner instance of the same session', async () => {
    const { tasks } = serviceForTest();
    const { id } = await tasks.start(scriptedTask({ owner: createOwner('s1') }).spec);
    expect(tasks.get(id, createOwner('s1')).id).toBe(id);
  });

  it('opens ownerless tasks to non-agent callers only; a trusted caller sees everything', async () => {
    const { tasks } = serviceForTest();
    const owner = createOwner('s1');
    const ownerless = await tasks.start(scriptedTask().spec);
    const owned = await tasks.start(scriptedTask({ owner }).spec);
    expect(tasks.list().map((task) => task.id)).toEqual([ownerless.id]);
    expect(tasks.list(owner).map((task) => task.id)).toEqual([owned.id]);
    expect(() => tasks.get(ownerless.id, owner)).toThrow(/No task/);
    const dashboard = createTrustedCaller('dashboard');
    expect(tasks.list(dashboard)).toHaveLength(2);
  });

  it('treats malformed ids as unknown', async () => {
    const { tasks } = serviceForTest();
    for (const id of ['', 'nonsense', 42, null]) {
      expect(() => tasks.get(id as string)).toThrow(expect.objectContaining({ code: 'TASK_NOT_FOUND' }));
    }
  });
});

describe('owner lifecycle', () => {
  it('attaches one cleanup per owner, however many tasks it starts', async () => {
    const { tasks } = serviceForTest();
    const owner = createOwner('s1');
    const addCleanup = vi.spyOn(owner, 'addCleanup');
    for (let index = 0; index < 3; index += 1) await tasks.start(scriptedTask({ owner }).spec);
    expect(addCleanup).toHaveBeenCalledTimes(1);
  });

  it('disposing the owner cancels its live tasks, awaits their terminal records and removes them', async () => {
    const { tasks } = serviceForTest();
    const owner = createOwner('s1');
    const slow = scriptedTask({ owner, onCancel: 'ignore' });
    const quick = scriptedTask({ owner });
    const finished = scriptedTask({ owner });
    await tasks.start(slow.spec);
    await tasks.start(quick.spec);
    await tasks.start(finished.spec);
    finished.settle();
    await flushMicrotasks();

    let disposed = false;
    const disposal = owner.dispose().then(() => {
      disposed = true;
    });
    await flushMicrotasks(20);
    expect(disposed).toBe(false);
    expect(slow.cancelReasons).toEqual(['owner disposal']);
    expect(quick.cancelReasons).toEqual(['owner disposal']);
    slow.settle({ status: 'killed' });
    await disposal;
    expect(tasks.list(owner)).toEqual([]);
    expect(tasks.list(createTrustedCaller('x'))).toEqual([]);
  });

  it('a replacement owner with the same session id is never cancelled by the old owner\u2019s cleanup', async () => {
    const { tasks } = serviceForTest();
    const old = createOwner('s1');
    const replacement = createOwner('s1');
    const oldTask = scriptedTask({ owner: old });
    const newTask = scriptedTask({ owner: replacement });
    await tasks.start(oldTask.spec);
    const kept = await tasks.start(newTask.spec);
    await old.dispose();
    expect(newTask.cancelReasons).toEqual([]);
    expect(tasks.list(replacement).map((task) => task.id)).toEqual([kept.id]);
    expect(tasks.get(kept.id, replacement).status).toBe('running');
  });

  it('refuses a task started while the owner\u2019s disposal is cancelling its tasks', async () => {
    const { tasks } = serviceForTest();
    const owner = createOwner('s1');
    await tasks.start(scriptedTask({ owner }).spec);
    const late = scriptedTask({ owner, label: 'late' });
    let lateStart: Promise<TaskSnapshot> | undefined;
    // A viewer reacts to the stop by starting more work for the same session, within the cancel step.
    tasks.onTasksChanged(
      (change) => {
        if (change.reason === 'stopping') lateStart ??= tasks.start(late.spec);
      },
      { caller: owner },
    );
    expect(owner.disposed).toBe(false);
    await owner.dispose();
    await expect(lateStart).rejects.toMatchObject({ code: 'OWNER_DISPOSED' });
    expect(late.runCalls).toBe(0);
    expect(tasks.list(createTrustedCaller('x'))).toEqual([]);
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

  it('a cancel that returns but never settles keeps disposal waiting (a slow stop and a broken one look alike)', async () => {
    const { tasks } = serviceForTest();
    const stuck = scriptedTask({ onCancel: 'ignore' });
    await tasks.start(stuck.spec);
    const outcome = await Promise.race([
      tasks.dispose().then(() => 'disposed'),
      flushMicrotasks(50).then(() => 'still waiting'),
    ]);
    expect(outcome).toBe('still waiting');
    stuck.settle({ status: 'killed' });
    await tasks.dispose();
  });

  it('refuses a task started while disposal is cancelling the live ones', async () => {
    const { tasks } = serviceForTest();
    await tasks.start(scriptedTask().spec);
    const late = scriptedTask({ label: 'late' });
    let lateStart: Promise<TaskSnapshot> | undefined;
    tasks.onTasksChanged((change) => {
      if (change.reason === 'stopping') lateStart ??= tasks.start(late.spec);
    });
    await tasks.dispose();
    await expect(lateStart).rejects.toMatchObject({ code: 'SERVICE_DISPOSED' });
    expect(late.runCalls).toBe(0);
  });

  it('detaches from owners that outlive it', async () => {
    const { tasks } = serviceForTest();
    const owner = createOwner('s1');
    const task = scriptedTask({ owner });
    await tasks.start(task.spec);
    await tasks.dispose();
    const cancelsBefore = task.cancelReasons.length;
    await owner.dispose();
    expect(task.cancelReasons.length).toBe(cancelsBefore);
  });
});

describe('snapshots', () => {
  it('are frozen and stable while nothing changes', async () => {
    const { tasks } = serviceForTest();
    const { id } = await tasks.start(scriptedTask({ spec: { detail: { a: 1 } } }).spec);
    const first: TaskSnapshot = tasks.get(id);
    expect(tasks.get(id)).toBe(first);
    expect(Object.isFrozen(first.detail)).toBe(true);
    expect(() => {
      (first as { status: string }).status = 'completed';
    }).toThrow();
  });
});
