import { describe, expect, it } from 'vitest';
import { runtimeForTest, settleEventLoop, switchableStore } from '../../test/support/session.js';

describe('Session.takeQueuedNotifications (a surface delivering outside a model turn)', () => {
  it('takes quiet notifications in order, marks them delivered once, and never wakes the model', async () => {
    const { runtime, model, board, store } = runtimeForTest(
      [
        { toolCalls: [{ name: 'start_task', input: { label: 'a' } }] },
        { toolCalls: [{ name: 'start_task', input: { label: 'b' } }] },
        { toolCalls: [{ name: 'start_task', input: { label: 'c' } }] },
        { text: 'started' },
      ],
      { notifications: { wakeBudget: 0 } },
    );
    const session = runtime.createSession({ id: 's1' });
    await session.send('start three');
    const requests = model.requests.length;
    for (const label of ['a', 'b', 'c']) board.get(label)!.settle({ status: 'completed' });
    await settleEventLoop();
    await session.whenIdle();
    expect(model.requests).toHaveLength(requests);
    expect(session.queuedCommands).toBe(3);

    const first = session.takeQueuedNotifications({ source: 'surface_result', limit: 2 });
    expect(first.map((notification) => notification.taskId)).toEqual(['scripted-1', 'scripted-2']);
    expect(first[0]?.text).toContain('<task-notification>');
    const rest = session.takeQueuedNotifications({ source: 'surface_result' });
    expect(rest.map((notification) => notification.label)).toEqual(['c']);
    expect(session.takeQueuedNotifications({ source: 'surface_result' })).toEqual([]);

    const ledger = store.listLedger('s1').filter((entry) => entry.kind === 'notification');
    expect(ledger.map((entry) => entry.state)).toEqual(['delivered', 'delivered', 'delivered']);
    const messages = session.messages().filter((message) => message.source === 'surface_result');
    expect(messages).toHaveLength(2);
    expect(messages.every((message) => message.visibility === 'model-only')).toBe(true);
    expect(model.requests).toHaveLength(requests);
    await runtime.dispose();
  });

  it('validates its options and takes nothing once the session is closing', async () => {
    const { runtime } = runtimeForTest([]);
    const session = runtime.createSession({ id: 's1' });
    expect(() => session.takeQueuedNotifications({ source: '' })).toThrow(
      'Expected `source` to be a non-empty string, got "" (string)',
    );
    expect(() => session.takeQueuedNotifications({ source: 'x', limit: 0 })).toThrow(
      'Expected `limit` to be a positive integer, got 0 (number)',
    );
    const closing = session.close();
    expect(session.takeQueuedNotifications({ source: 'x' })).toEqual([]);
    await closing;
    await runtime.dispose();
  });

  it('a store that fails to record the delivery throws NOTIFICATION_DELIVERY_FAILED and keeps the notifications queued, in order', async () => {
    const { store, failing } = switchableStore();
    const { runtime, board } = runtimeForTest(
      [
        { toolCalls: [{ name: 'start_task', input: { label: 'a' } }] },
        { toolCalls: [{ name: 'start_task', input: { label: 'b' } }] },
        { text: 'started' },
      ],
      { store, notifications: { wakeBudget: 0 } },
    );
    const session = runtime.createSession({ id: 's1' });
    await session.send('start two');
    for (const label of ['a', 'b']) board.get(label)!.settle({ status: 'completed' });
    await settleEventLoop();
    await session.whenIdle();
    expect(session.queuedCommands).toBe(2);

    failing.add('commitDelivery');
    let thrown: unknown;
    try {
      session.takeQueuedNotifications({ source: 'surface_result', limit: 1 });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({
      code: 'NOTIFICATION_DELIVERY_FAILED',
      fault: 'system',
      context: { taskIds: ['scripted-1'] },
    });
    expect(String((thrown as Error).message)).toContain('store unavailable (commitDelivery)');
    expect(session.queuedCommands).toBe(2);
    expect(store.listQueued('s1').map((entry) => entry.taskId)).toEqual(['scripted-1', 'scripted-2']);

    failing.delete('commitDelivery');
    const delivered = session.takeQueuedNotifications({ source: 'surface_result' });
    expect(delivered.map((notification) => notification.taskId)).toEqual(['scripted-1', 'scripted-2']);
    expect(session.takeQueuedNotifications({ source: 'surface_result' })).toEqual([]);
    expect(store.listQueued('s1')).toEqual([]);
    expect(session.messages().filter((message) => message.source === 'surface_result')).toHaveLength(1);
    await runtime.dispose();
  });

  it('reserveQueuedNotifications holds them out of the queue until commit records them or release puts them back in order', async () => {
    const { runtime, board, store } = runtimeForTest(
      [
        { toolCalls: [{ name: 'start_task', input: { label: 'a' } }] },
        { toolCalls: [{ name: 'start_task', input: { label: 'b' } }] },
        { toolCalls: [{ name: 'start_task', input: { label: 'c' } }] },
        { text: 'started' },
      ],
      { notifications: { wakeBudget: 0 } },
    );
    const session = runtime.createSession({ id: 's1' });
    await session.send('start three');
    for (const label of ['a', 'b']) board.get(label)!.settle({ status: 'completed' });
    await settleEventLoop();
    await session.whenIdle();

    const held = session.reserveQueuedNotifications({ source: 'surface_result' });
    expect(held.state).toBe('reserved');
    expect(held.notifications.map((notification) => notification.taskId)).toEqual([
      'scripted-1',
      'scripted-2',
    ]);
    expect(session.queuedCommands).toBe(0);
    expect(session.takeQueuedNotifications({ source: 'surface_result' })).toEqual([]);
    // Still queued in the ledger: nothing is delivered until the surface commits.
    expect(store.listQueued('s1')).toHaveLength(2);

    board.get('c')!.settle({ status: 'completed' });
    await settleEventLoop();
    expect(session.queuedCommands).toBe(1);
    held.release();
    expect(held.state).toBe('released');
    expect(held.commit()).toEqual([]);

    const again = session.reserveQueuedNotifications({ source: 'surface_result', limit: 2 });
    expect(again.notifications.map((notification) => notification.taskId)).toEqual([
      'scripted-1',
      'scripted-2',
    ]);
    expect(again.commit().map((notification) => notification.taskId)).toEqual(['scripted-1', 'scripted-2']);
    expect(again.state).toBe('committed');
    again.release();
    expect(session.queuedCommands).toBe(1);

    // Shutdown discards what a surface still holds; a late commit records nothing.
    const late = session.reserveQueuedNotifications({ source: 'surface_result' });
    await session.close();
    expect(late.state).toBe('released');
    expect(late.commit()).toEqual([]);
    expect(
      store
        .listLedger('s1')
        .filter((entry) => entry.kind === 'notification')
        .map((entry) => entry.state),
    ).toEqual(['delivered', 'delivered', 'discarded']);
    expect(session.messages().filter((message) => message.source === 'surface_result')).toHaveLength(1);
    await runtime.dispose();
  });
});
