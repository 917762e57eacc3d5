import { describe, expect, it } from 'vitest';
import { createTaskService } from '../registry/index.js';
import { createOwner, type TaskSnapshot } from '../tasks/index.js';
import { scriptedTask } from '../testing/index.js';
import { createStopDispatch } from '../tools/index.js';
import { mcpTaskStatusOf } from './bash-task-result.js';
import { ErrandTaskStore } from './errand-task-store.js';
import type { ErrandTaskStoreOptions } from './task-store-options.js';

const augmented = { method: 'tools/call', params: { name: 'bash', task: { ttl: 1000 } } };
const ordinary = { method: 'tools/call', params: { name: 'bash' } };

function harness(options: ErrandTaskStoreOptions = {}) {
  const tasks = createTaskService();
  const detach = tasks.attachController('test');
  const owner = createOwner('mcp-session');
  const stop = createStopDispatch({ tasks });
  let now = 1_000_000;
  const statusChanges: string[] = [];
  const store = new ErrandTaskStore(
    {
      tasks,
      owner,
      stop,
      outputOf: () => undefined,
      onStatusChange: (task) => statusChanges.push(task.status),
    },
    { now: () => now, ...options },
  );
  const startErrandTask = async () => {
    const task = scriptedTask({ kind: 'bash', owner });
    const snapshot = await tasks.start(task.spec);
    return { task, id: snapshot.id };
  };
  return {
    tasks,
    owner,
    store,
    statusChanges,
    startErrandTask,
    advance: (ms: number) => {
      now += ms;
    },
    async dispose() {
      store.dispose();
      detach();
      await tasks.dispose();
    },
  };
}

describe('ErrandTaskStore', () => {
  it('follows the bound Errand task: working, then completed with a result, status change announced', async () => {
    const h = harness();
    const created = await h.store.createTask({ ttl: 5000 }, 1, augmented);
    expect(created).toMatchObject({ status: 'working', ttl: 5000, pollInterval: 500 });
    const { task, id } = await h.startErrandTask();
    expect(h.store.bind(created.taskId, id).statusMessage).toBe(`${id} running`);
    await expect(h.store.getTaskResult(created.taskId)).rejects.toMatchObject({
      code: 'MCP_TASK_NOT_FINISHED',
    });

    task.settle({ status: 'completed', detail: { reason: 'completed', exitCode: 0 } });
    await h.tasks.wait(id, 1000, h.owner);
    expect(await h.store.getTask(created.taskId)).toMatchObject({
      status: 'completed',
      statusMessage: `${id} completed (exit code 0)`,
    });
    expect(h.statusChanges).toEqual(['completed']);
    const result = (await h.store.getTaskResult(created.taskId)) as { content: { text: string }[] };
    expect(result.content[0]?.text).toContain(`[task: ${id}; status: completed]`);
    await h.dispose();
  });

  it('cancel stops the Errand task through the stop dispatch as the user and waits for its end', async () => {
    const h = harness();
    const created = await h.store.createTask({}, 1, augmented);
    const { task, id } = await h.startErrandTask();
    h.store.bind(created.taskId, id);
    await h.store.updateTaskStatus(created.taskId, 'cancelled', 'stop it');
    expect(task.cancelReasons).toEqual(['stop it']);
    const snapshot = h.tasks.get(id, h.owner);
    expect(snapshot).toMatchObject({ status: 'killed', stopInitiator: 'user' });
    expect((await h.store.getTask(created.taskId))?.status).toBe('cancelled');
    await h.dispose();
  });

  it('a cancel the producer refuses leaves the task working and fails the request', async () => {
    const h = harness();
    const created = await h.store.createTask({}, 1, augmented);
    const task = scriptedTask({ kind: 'bash', owner: h.owner, onCancel: 'throw' });
    const { id } = await h.tasks.start(task.spec);
    h.store.bind(created.taskId, id);
    await expect(h.store.updateTaskStatus(created.taskId, 'cancelled')).rejects.toMatchObject({
      code: 'CANCEL_FAILED',
    });
    expect((await h.store.getTask(created.taskId))?.status).toBe('working');
    task.settle();
    await h.tasks.wait(id, 1000, h.owner);
    await h.dispose();
  });

  it('hides inline tasks (ordinary calls), hands their result out once, then forgets them', async () => {
    const h = harness();
    const inline = await h.store.createTask({}, 1, ordinary);
    expect(h.store.isInline(inline.taskId)).toBe(true);
    expect(await h.store.getTask(inline.taskId)).toBeNull();
    const result = { content: [{ type: 'text' as const, text: 'plain' }], isError: false };
    expect(h.store.completeInline(inline.taskId, result).status).toBe('completed');
    expect((await h.store.listTasks()).tasks).toEqual([]);
    expect(await h.store.getTaskResult(inline.taskId)).toBe(result);
    await expect(h.store.getTaskResult(inline.taskId)).rejects.toMatchObject({ code: 'MCP_TASK_NOT_FOUND' });
    expect(h.store.size).toBe(0);
    await h.dispose();
  });

  it('caps the ttl, expires finished tasks ttl after they finish, and keeps running ones', async () => {
    const h = harness({ maxTtlMs: 10_000, defaultTtlMs: 2000 });
    expect((await h.store.createTask({ ttl: 99_999 }, 1, augmented)).ttl).toBe(10_000);
    const finished = await h.store.createTask({}, 2, augmented);
    expect(finished.ttl).toBe(2000);
    h.store.fail(finished.taskId, { content: [{ type: 'text', text: 'bad input' }] });
    const running = await h.store.createTask({}, 3, augmented);
    h.advance(1999);
    expect(await h.store.getTask(finished.taskId)).toMatchObject({
      status: 'failed',
      statusMessage: 'bad input',
    });
    h.advance(1);
    expect(await h.store.getTask(finished.taskId)).toBeNull();
    h.advance(1_000_000);
    expect((await h.store.getTask(running.taskId))?.status).toBe('working');
    await h.dispose();
  });

  it('makes room by dropping the oldest finished task, and refuses when every slot is running', async () => {
    const h = harness({ maxTasks: 2 });
    const first = await h.store.createTask({}, 1, augmented);
    const second = await h.store.createTask({}, 2, augmented);
    h.store.fail(first.taskId, { content: [{ type: 'text', text: 'x' }] });
    const third = await h.store.createTask({}, 3, augmented);
    expect(await h.store.getTask(first.taskId)).toBeNull();
    expect((await h.store.listTasks()).tasks.map((task) => task.taskId)).toEqual([
      second.taskId,
      third.taskId,
    ]);
    await expect(h.store.createTask({}, 4, augmented)).rejects.toMatchObject({ code: 'MCP_TASK_LIMIT' });
    // Inline tasks are transient and never take a slot.
    expect(h.store.isInline((await h.store.createTask({}, 5, ordinary)).taskId)).toBe(true);
    await h.dispose();
  });

  it('pages tasks/list with a cursor and refuses one it did not hand out', async () => {
    const h = harness({ listPageSize: 2 });
    const ids: string[] = [];
    for (let index = 0; index < 5; index += 1)
      ids.push((await h.store.createTask({}, index, augmented)).taskId);
    const first = await h.store.listTasks();
    expect(first.tasks.map((task) => task.taskId)).toEqual(ids.slice(0, 2));
    const second = await h.store.listTasks(first.nextCursor);
    expect(second.tasks.map((task) => task.taskId)).toEqual(ids.slice(2, 4));
    const last = await h.store.listTasks(second.nextCursor);
    expect(last).toEqual({ tasks: [expect.objectContaining({ taskId: ids[4] })] });
    await expect(h.store.listTasks('not-a-cursor')).rejects.toMatchObject({ code: 'MCP_INVALID_CURSOR' });
    await h.dispose();
  });

  it('validates its options with messages naming the field', () => {
    const dependencies = {
      tasks: createTaskService(),
      owner: createOwner('x'),
      stop: createStopDispatch({ tasks: createTaskService() }),
      outputOf: () => undefined,
    };
    expect(() => new ErrandTaskStore(dependencies, { maxTasks: 0 })).toThrow(
      'Expected `maxTasks` to be a positive integer, got 0 (number)',
    );
    expect(() => new ErrandTaskStore(dependencies, { maxTtlMs: 100, defaultTtlMs: 200 })).toThrow(
      'Expected `defaultTtlMs` to be no greater than `maxTtlMs` (100), got 200 (number)',
    );
  });
});

describe('mcpTaskStatusOf', () => {
  const snapshot = (status: TaskSnapshot['status'], reason?: string) =>
    ({ status, detail: reason === undefined ? {} : { reason } }) as unknown as TaskSnapshot;

  it('maps Errand outcomes to MCP statuses: a command that ran to its end is completed, whatever its exit code', () => {
    expect(mcpTaskStatusOf(snapshot('running'), false)).toBe('working');
    expect(mcpTaskStatusOf(snapshot('stopping'), true)).toBe('cancelled');
    expect(mcpTaskStatusOf(snapshot('completed', 'completed'), false)).toBe('completed');
    expect(mcpTaskStatusOf(snapshot('failed', 'completed'), false)).toBe('completed');
    expect(mcpTaskStatusOf(snapshot('killed', 'timed_out'), false)).toBe('completed');
    expect(mcpTaskStatusOf(snapshot('killed', 'cancelled'), false)).toBe('cancelled');
    expect(mcpTaskStatusOf(snapshot('failed', 'spawn_error'), false)).toBe('failed');
    expect(mcpTaskStatusOf(snapshot('lost', 'lost'), false)).toBe('failed');
  });
});
