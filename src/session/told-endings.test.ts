/**
 * What the store records as told, and when: a tool result and the ends it showed are one write (a store
 * that refuses it leaves the notification queued, to be told), a delivery marks its endings told, and a
 * resume tells an ending recorded and never told — but never one a teardown caused.
 */
import { describe, expect, it } from 'vitest';
import { capturingLogger, flushMicrotasks } from '../../test/support/registry.js';
import { switchableStore } from '../../test/support/session.js';
import { createMemorySessionStore } from '../store/index.js';
import { scriptedModel, scriptedTask } from '../testing/index.js';
import { createTaskTools } from '../tools/index.js';
import { createSessionRuntime } from './session-runtime.js';

function runtimeWithTools(
  store: ReturnType<typeof createMemorySessionStore>,
  steps: Parameters<typeof scriptedModel>[0],
) {
  const model = scriptedModel(steps);
  let tools: ReturnType<typeof createTaskTools> | undefined;
  const runtime = createSessionRuntime({
    store,
    model,
    logger: capturingLogger(),
    limits: { deliveryRetryMs: 1 },
    tools: () => tools!.tools,
  });
  tools = createTaskTools({ tasks: runtime.tasks });
  return { runtime, model, tools };
}

describe('endings told', () => {
  it('a tool result that read an end is stored with the end told, or not at all', async () => {
    const { store, failing } = switchableStore();
    let taskId = '';
    let end = () => {};
    const { runtime, model, tools } = runtimeWithTools(store, [
      async () => {
        // The build ends while the model thinks: its notification queues behind the running turn.
        end();
        await flushMicrotasks();
        // The model reads the end, and the store refuses the write of the result and its told mark.
        failing.add('transaction');
        return { toolCalls: [{ name: 'task_output', input: { task_id: taskId } }] };
      },
      { text: 'noted' },
    ]);
    const session = runtime.createSession({ id: 's1' });
    const task = scriptedTask({ label: 'build', owner: session.owner });
    taskId = (await runtime.tasks.start(task.spec)).id;
    end = () => {
      task.push('compiled\n');
      task.settle({ status: 'completed', detail: { exitCode: 0 } });
    };
    const failed = await session.send('how is the build?');
    expect(failed.reason).toBe('error');
    failing.clear();
    // The model never saw the result: nothing says it did, and the notification was not discarded.
    expect(session.messages().some((message) => message.role === 'tool')).toBe(false);
    await session.whenIdle();
    // So it is told, once, and marked told with its delivery.
    const told = store.listLedger('s1').filter((entry) => entry.kind === 'notification');
    expect(told.map((entry) => entry.state)).toEqual(['delivered']);
    expect(store.getTask(taskId, 's1')).toMatchObject({ reported: true });
    const notices = session
      .messages()
      .filter((message) => (message.content.text ?? '').includes(`<task-id>${taskId}</task-id>`));
    expect(notices).toHaveLength(1);
    expect(model.requests).toHaveLength(2);
    await runtime.dispose();
    tools.dispose();
  });

  it('a resume tells an ending a host waiter took, once, and never one a teardown caused', async () => {
    const store = createMemorySessionStore();
    const first = runtimeWithTools(store, []);
    const session = first.runtime.createSession({ id: 's1' });
    const waited = scriptedTask({ label: 'waited', owner: session.owner });
    const { id: waitedId } = await first.runtime.tasks.start(waited.spec);
    const stopped = scriptedTask({ label: 'stopped by the close', owner: session.owner });
    const { id: stoppedId } = await first.runtime.tasks.start(stopped.spec);
    const ending = first.runtime.tasks.wait(waitedId, 10_000, session.owner);
    waited.settle({ status: 'completed' });
    expect((await ending).status).toBe('completed');
    // The waiter took the claim: no notification now; the model was not told.
    expect(session.inbox.queued).toBe(0);
    expect(store.getTask(waitedId, 's1')).toMatchObject({ status: 'completed', reported: false });
    await session.close();
    expect(store.getTask(stoppedId, 's1')).toMatchObject({ status: 'killed', reported: true });
    await first.runtime.dispose();
    first.tools.dispose();

    const second = runtimeWithTools(store, [{ text: 'noted' }]);
    const resumed = second.runtime.resumeSession('s1');
    expect(resumed.inbox.queuedNotifications().map((notification) => notification.taskId)).toEqual([
      waitedId,
    ]);
    await resumed.whenIdle();
    expect(store.getTask(waitedId, 's1')).toMatchObject({ reported: true });
    await resumed.close();
    await second.runtime.dispose();
    second.tools.dispose();

    const third = runtimeWithTools(store, []);
    expect(third.runtime.resumeSession('s1').inbox.queued).toBe(0);
    await third.runtime.dispose();
    third.tools.dispose();
  });
});
