/**
 * Exactly once at the edges: a task end the model read with task_output or task_kill is not told again (a
 * notification still queued is discarded, `result_read` in the ledger; one still being formatted is not
 * admitted), and a task id registered afresh after the registry forgot it is told again.
 */
import { describe, expect, it, vi } from 'vitest';
import { flushMicrotasks } from '../../test/support/registry.js';
import {
  runtimeForTest,
  startTaskTool,
  switchableStore,
  type TaskBoard,
} from '../../test/support/session.js';
import { createTaskService } from '../registry/index.js';
import { scriptedTask } from '../testing/index.js';
import { createTaskTools } from '../tools/index.js';

describe('an end the model already read', () => {
  it('discards the queued notification of a task the model read mid-turn, so the next request has no repeat', async () => {
    const board: TaskBoard = new Map();
    let taskTools: ReturnType<typeof createTaskTools> | undefined;
    const { runtime, model, store } = runtimeForTest(
      [
        { toolCalls: [{ name: 'start_task', input: { label: 'build' } }] },
        async () => {
          // The task ends while the model thinks: its notification is queued for the next request.
          board.get('build')!.settle({ status: 'completed', output: 'built' });
          await vi.waitFor(() => expect(session.queuedCommands).toBe(1));
          return { toolCalls: [{ name: 'task_output', input: { task_id: 'scripted-1' } }] };
        },
        { text: 'done' },
      ],
      {
        tools: (session) => {
          taskTools ??= createTaskTools({ tasks: session.tasks });
          return [startTaskTool(session, board), ...taskTools.tools];
        },
      },
    );
    const session = runtime.createSession({ id: 's1' });
    await expect(session.send('build it')).resolves.toMatchObject({ reason: 'completed', text: 'done' });
    expect(JSON.stringify(model.requests[2])).toContain('[status: completed]');
    expect(JSON.stringify(model.requests[2])).not.toContain('<task-notification>');
    expect(store.listLedger('s1').filter((entry) => entry.kind === 'notification')).toEqual([
      expect.objectContaining({ taskId: 'scripted-1', state: 'discarded', reason: 'result_read' }),
    ]);
    await flushMicrotasks();
    expect(session.queuedCommands).toBe(0);
    taskTools?.dispose();
    await runtime.dispose();
  });

  it('keeps the notification when the model only saw the status line (task_kill of a finished task)', async () => {
    const board: TaskBoard = new Map();
    let taskTools: ReturnType<typeof createTaskTools> | undefined;
    const { runtime, model, store } = runtimeForTest(
      [
        { toolCalls: [{ name: 'start_task', input: { label: 'build' } }] },
        async () => {
          board.get('build')!.settle({ status: 'completed' });
          await vi.waitFor(() => expect(session.queuedCommands).toBe(1));
          return { toolCalls: [{ name: 'task_kill', input: { task_id: 'scripted-1' } }] };
        },
        { text: 'done' },
      ],
      {
        tools: (session) => {
          taskTools ??= createTaskTools({ tasks: session.tasks });
          return [startTaskTool(session, board), ...taskTools.tools];
        },
      },
    );
    const session = runtime.createSession({ id: 's1' });
    await expect(session.send('build it')).resolves.toMatchObject({ reason: 'completed' });
    // The notification carries more than the status line (the output tail, a result): it still goes out.
    expect(JSON.stringify(model.requests[2])).toContain('<task-notification>');
    expect(store.listLedger('s1').filter((entry) => entry.kind === 'notification')).toEqual([
      expect.objectContaining({ taskId: 'scripted-1', state: 'delivered' }),
    ]);
    taskTools?.dispose();
    await runtime.dispose();
  });

  it('does not admit a notification of an attempt the model already read, and admits a later attempt', async () => {
    const { runtime, store } = runtimeForTest([]);
    const session = runtime.createSession({ id: 's1' });
    const notification = {
      taskId: 'bash-7',
      label: 'build',
      text: '<task-notification>…</task-notification>',
      lane: 'quiet' as const,
      branchGeneration: session.branchGeneration,
    };
    session.taskEndTold({ taskId: 'bash-7', attempt: 1 });
    expect(session.deliverNotification({ ...notification, attempt: 1, idempotencyKey: 'k1' })).toEqual({
      admitted: false,
      reason: 'result_read',
    });
    expect(session.deliverNotification({ ...notification, attempt: 2, idempotencyKey: 'k2' })).toMatchObject({
      admitted: true,
    });
    // Without an attempt nothing can be matched, so the notification is admitted.
    expect(session.deliverNotification({ ...notification, idempotencyKey: 'k3' })).toMatchObject({
      admitted: true,
    });
    expect(store.listLedger('s1').map((entry) => entry.idempotencyKey)).toEqual(['k2', 'k3']);
    await runtime.dispose();
  });
});

describe('a task id registered afresh after the registry forgot it', () => {
  it('is notified again: the key names the registration, not only the id and attempt', async () => {
    let clock = 1_000;
    const tasks = createTaskService({ maxRetainedTasksPerOwner: 1, now: () => (clock += 1) });
    tasks.attachController('test');
    const { runtime, store } = runtimeForTest([], { tasks });
    const session = runtime.createSession({ id: 's1' });
    const first = scriptedTask({ kind: 'scripted', label: 'run', owner: session.owner });
    const { id } = await tasks.start(first.spec);
    first.settle({ status: 'failed', error: 'broke' });
    // Another finished task pushes the first out of the registry (one retained per session).
    const other = scriptedTask({ kind: 'scripted', label: 'other', owner: session.owner });
    await tasks.start(other.spec);
    other.settle();
    await vi.waitFor(() => expect(() => tasks.get(id, session.owner)).toThrow());
    // The same id registered again, as a resumed run restored from its journal would be: attempt 1 again.
    const again = scriptedTask({
      kind: 'scripted',
      label: 'run',
      owner: session.owner,
      spec: { resumeId: id },
    });
    expect((await tasks.start(again.spec)).attempt).toBe(1);
    again.settle({ status: 'completed' });
    await vi.waitFor(() =>
      expect(store.listLedger('s1').filter((entry) => entry.taskId === id)).toHaveLength(2),
    );
    await runtime.dispose();
  });
});

describe('sealing a session', () => {
  it('discards the notifications still queued, so a finished run starts no turn for them', async () => {
    const { runtime, store, model } = runtimeForTest([{ text: 'never asked' }]);
    const session = runtime.createSession({ id: 's1' });
    const admitted = session.deliverNotification({
      taskId: 'bash-1',
      label: 'build',
      text: '<task-notification>…</task-notification>',
      lane: 'wakeup',
      branchGeneration: session.branchGeneration,
      idempotencyKey: 'k1',
      attempt: 1,
    });
    expect(admitted).toMatchObject({ admitted: true });
    // Sealed before the scheduled idle drain runs.
    session.seal();
    await session.whenIdle();
    await flushMicrotasks();
    expect(model.requests).toHaveLength(0);
    expect(store.listLedger('s1')).toEqual([
      expect.objectContaining({ taskId: 'bash-1', state: 'discarded', reason: 'sealed' }),
    ]);
    await runtime.dispose();
  });
});

describe('the wake budget', () => {
  it('is spent by a background turn that delivered its results, not by one the store refused', async () => {
    const { store, failing } = switchableStore();
    const board: TaskBoard = new Map();
    const { runtime, model } = runtimeForTest(
      [
        {
          toolCalls: [
            { name: 'start_task', input: { label: 'one' } },
            { name: 'start_task', input: { label: 'two' } },
          ],
        },
        { text: 'started' },
        { text: 'one is done' },
        { text: 'two is done' },
      ],
      {
        store,
        limits: { deliveryRetryMs: 1 },
        notifications: { wakeBudget: 2 },
        tools: (session) => [startTaskTool(session, board)],
      },
    );
    const session = runtime.createSession({ id: 's1' });
    await session.send('start both');
    failing.add('commitDelivery');
    board.get('one')!.settle({ status: 'completed' });
    // The background turn fails to record its delivery, so nothing reached the model and no wake-up is spent.
    await vi.waitFor(() =>
      expect(store.listLedger('s1').some((entry) => entry.state === 'queued')).toBe(true),
    );
    await vi.waitFor(() => expect(model.requests.length).toBe(2));
    failing.delete('commitDelivery');
    await vi.waitFor(() => expect(model.requests.length).toBe(3));
    // One wake-up spent of two: the second result still wakes the agent.
    board.get('two')!.settle({ status: 'completed' });
    await vi.waitFor(() => expect(model.requests.length).toBe(4));
    expect(
      store
        .listLedger('s1')
        .filter((entry) => entry.kind === 'notification')
        .map((entry) => entry.lane),
    ).toEqual(['wakeup', 'wakeup']);
    await runtime.dispose();
  });
});
