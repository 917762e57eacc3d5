import { describe, expect, it } from 'vitest';
import { flushMicrotasks, serviceForTest } from '../../test/support/registry.js';
import { createOwner, createTrustedCaller, type StopInitiator, type TaskSnapshot } from '../tasks/index.js';
import { scriptedTask } from '../testing/index.js';
import { createStopDispatch } from './index.js';

describe('stop dispatch', () => {
  it('stops a running task and records who asked', async () => {
    const { tasks } = serviceForTest();
    const owner = createOwner('s1');
    const task = scriptedTask({ owner });
    const { id } = await tasks.start(task.spec);
    const stop = createStopDispatch({ tasks });
    const result = await stop.stopBackgroundTask(id, {
      initiator: 'user',
      caller: owner,
      reason: 'Stop pressed',
    });
    expect(result).toMatchObject({ ok: true, snapshot: { status: 'stopping', stopInitiator: 'user' } });
    expect(task.cancelReasons).toEqual(['Stop pressed']);
    await flushMicrotasks();
    expect(tasks.get(id, owner)).toMatchObject({ status: 'killed', stopInitiator: 'user' });
  });

  it('answers not_found for unknown and unauthorized ids alike', async () => {
    const { tasks } = serviceForTest();
    const { id } = await tasks.start(scriptedTask({ owner: createOwner('s1') }).spec);
    const stop = createStopDispatch({ tasks });
    expect(await stop.stopBackgroundTask('bash-404', { initiator: 'user' })).toEqual({
      ok: false,
      reason: 'not_found',
    });
    expect(await stop.stopBackgroundTask(id, { initiator: 'user', caller: createOwner('s2') })).toEqual({
      ok: false,
      reason: 'not_found',
    });
  });

  it('answers not_running for a finished task and cancel_not_supported for one that cannot stop', async () => {
    const { tasks } = serviceForTest();
    const finished = scriptedTask();
    const { id: finishedId } = await tasks.start(finished.spec);
    finished.settle();
    await flushMicrotasks();
    const monitor = scriptedTask({ kind: 'monitor', cancellable: false });
    const { id: monitorId } = await tasks.start(monitor.spec);
    const stop = createStopDispatch({ tasks });
    expect(await stop.stopBackgroundTask(finishedId, { initiator: 'user' })).toMatchObject({
      ok: false,
      reason: 'not_running',
      snapshot: { status: 'completed' },
    });
    expect(await stop.stopBackgroundTask(monitorId, { initiator: 'user' })).toMatchObject({
      ok: false,
      reason: 'cancel_not_supported',
    });
    expect(monitor.cancelReasons).toEqual([]);
  });

  it('throws CANCEL_FAILED when the producer’s cancel throws; the task keeps running', async () => {
    const { tasks } = serviceForTest();
    const { id } = await tasks.start(scriptedTask({ onCancel: 'throw' }).spec);
    const stop = createStopDispatch({ tasks });
    await expect(stop.stopBackgroundTask(id, { initiator: 'user' })).rejects.toMatchObject({
      code: 'CANCEL_FAILED',
      fault: 'producer',
    });
    expect(tasks.get(id)).toMatchObject({
      status: 'running',
      stopInitiator: undefined,
      cancelRequestedAt: undefined,
    });
  });

  it('records the initiator and announces stopping before the producer is asked to cancel', async () => {
    const { tasks } = serviceForTest();
    const seenAtCancel: Array<Pick<TaskSnapshot, 'status' | 'stopInitiator'> & { announced: boolean }> = [];
    const announced: string[] = [];
    tasks.onTasksChanged((change) => announced.push(change.reason));
    let resolveDone!: (outcome: { status: 'killed' }) => void;
    const { id } = await tasks.start({
      kind: 'workflow',
      label: 'deploy',
      run: () => ({
        done: new Promise((resolve) => (resolveDone = resolve)),
        cancel() {
          const snapshot = tasks.get(id);
          seenAtCancel.push({
            status: snapshot.status,
            stopInitiator: snapshot.stopInitiator,
            announced: announced.includes('stopping'),
          });
          resolveDone({ status: 'killed' });
        },
      }),
    });
    await createStopDispatch({ tasks }).stopBackgroundTask(id, { initiator: 'model' });
    expect(seenAtCancel).toEqual([{ status: 'stopping', stopInitiator: 'model', announced: true }]);
  });

  it('runs a registered strategy for its kind, which may fall back to the default', async () => {
    const { tasks } = serviceForTest();
    const stop = createStopDispatch({ tasks });
    const calls: string[] = [];
    const remove = stop.registerStrategy('agent', async ({ snapshot, request, defaultStop }) => {
      calls.push(`${snapshot.id}:${request.initiator}`);
      return defaultStop();
    });
    const agent = scriptedTask({ kind: 'agent', streaming: false });
    const { id } = await tasks.start(agent.spec);
    expect(await stop.stopBackgroundTask(id, { initiator: 'user' })).toMatchObject({ ok: true });
    expect(calls).toEqual([`${id}:user`]);
    remove();
    const second = scriptedTask({ kind: 'agent', streaming: false });
    const { id: secondId } = await tasks.start(second.spec);
    await stop.stopBackgroundTask(secondId, { initiator: 'user' });
    expect(calls).toHaveLength(1);
  });

  it('stop all: every live task the caller sees, one failure not stopping the rest', async () => {
    const { tasks } = serviceForTest();
    const owner = createOwner('s1');
    const running = scriptedTask({ owner });
    const throwing = scriptedTask({ owner, onCancel: 'throw' });
    const finished = scriptedTask({ owner });
    const foreign = scriptedTask({ owner: createOwner('s2') });
    const ids = [];
    for (const task of [running, throwing, finished, foreign]) ids.push((await tasks.start(task.spec)).id);
    finished.settle();
    await flushMicrotasks();
    const entries = await createStopDispatch({ tasks }).stopAll({ initiator: 'system', caller: owner });
    expect(
      entries.map((entry) => [entry.taskId, entry.result?.ok ?? (entry.error as { code: string }).code]),
    ).toEqual([
      [ids[0], true],
      [ids[1], 'CANCEL_FAILED'],
    ]);
    expect(foreign.cancelReasons).toEqual([]);
    await flushMicrotasks();
    expect(tasks.get(ids[0] as string, owner).status).toBe('killed');
  });

  it('stop all for a trusted caller reaches every session, and a filter narrows it', async () => {
    const { tasks } = serviceForTest();
    const a = scriptedTask({ owner: createOwner('s1'), kind: 'bash' });
    const b = scriptedTask({ owner: createOwner('s2'), kind: 'workflow' });
    await tasks.start(a.spec);
    await tasks.start(b.spec);
    const entries = await createStopDispatch({ tasks }).stopAll({
      initiator: 'system',
      caller: createTrustedCaller('host'),
      filter: (snapshot) => snapshot.kind === 'workflow',
    });
    expect(entries).toHaveLength(1);
    expect(a.cancelReasons).toEqual([]);
    expect(b.cancelReasons).toEqual([undefined]);
  });

  it('rejects an unknown initiator', async () => {
    const { tasks } = serviceForTest();
    await expect(
      createStopDispatch({ tasks }).stopBackgroundTask('bash-1', { initiator: 'robot' as StopInitiator }),
    ).rejects.toThrow('Expected `initiator` to be "user", "model" or "system", got "robot" (string)');
  });
});
