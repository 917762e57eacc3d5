import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { runtimeForTest, settleEventLoop } from '../../test/support/session.js';
import { createMemorySessionStore, type SessionStore } from '../store/index.js';
import { lastUserText } from '../testing/index.js';
import { defineTool } from '../tools/index.js';
import type { SessionEvent } from './session-events.js';

function notificationTexts(request: { messages: readonly { role: string; text?: string }[] }): string[] {
  return request.messages
    .filter((message) => message.role === 'user' && (message.text ?? '').includes('<task-notification>'))
    .map((message) => message.text ?? '');
}

describe('session turns', () => {
  it('keeps the conversation from its own writes: its model requests read no message from the store', async () => {
    const store = createMemorySessionStore();
    let reads = 0;
    const counted: SessionStore = Object.create(store, {
      listMessages: {
        value: (...args: Parameters<SessionStore['listMessages']>) => {
          reads += 1;
          return store.listMessages(...args);
        },
      },
    });
    const { runtime, model } = runtimeForTest(
      [
        { toolCalls: [{ name: 'start_task', input: { label: 'build' } }] },
        { text: 'started' },
        { text: 'second' },
        { text: 'third' },
      ],
      { store: counted },
    );
    const session = runtime.createSession({ id: 's1' });
    await session.send('one');
    await session.send('two');
    await session.send('three');
    expect(model.requests).toHaveLength(4);
    expect(model.requests[3]!.messages.map((message) => message.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'user',
      'assistant',
      'user',
    ]);
    // The first request reads the conversation once; every write after it reaches the view from the session.
    expect(reads).toBe(1);
    expect(session.messages()).toEqual(store.listMessages('s1'));
    await runtime.dispose();
  });

  it('runs request → tool calls → results → next request until the model stops', async () => {
    const { runtime, model, board } = runtimeForTest([
      { toolCalls: [{ name: 'start_task', input: { label: 'build' } }] },
      { text: 'started the build' },
    ]);
    const session = runtime.createSession({ id: 's1' });
    const outcome = await session.send('please build');
    expect(outcome).toMatchObject({ reason: 'completed', text: 'started the build' });
    expect(model.requests).toHaveLength(2);
    expect(board.get('build')?.runCalls).toBe(1);
    const roles = session.messages().map((message) => message.role);
    expect(roles).toEqual(['user', 'assistant', 'tool', 'assistant']);
    await runtime.dispose();
  });

  it('injects a notification between a batch of tool results and the next request', async () => {
    const { runtime, model, board } = runtimeForTest([
      { toolCalls: [{ name: 'start_task', input: { label: 'tests' } }] },
      async () => {
        // The task finishes while the model is thinking about its next step.
        board.get('tests')!.settle({ status: 'completed', detail: { exitCode: 0 } });
        await settleEventLoop();
        return { toolCalls: [{ name: 'start_task', input: { label: 'lint' } }] };
      },
      { text: 'done' },
    ]);
    const session = runtime.createSession({ id: 's1' });
    await session.send('go');
    expect(model.requests).toHaveLength(3);
    expect(notificationTexts(model.requests[1]!)).toEqual([]);
    const third = model.requests[2]!;
    const last = third.messages.at(-1)!;
    expect(last.role).toBe('user');
    expect(last.role === 'user' && last.text).toContain('<task-id>scripted-1</task-id>');
    expect(third.messages.at(-2)?.role).toBe('tool');
    const injected = session.messages().find((message) => message.source === 'task_notification_steer');
    expect(injected?.visibility).toBe('model-only');
    await runtime.dispose();
  });

  it('does not inject during an output-truncation continuation', async () => {
    const { runtime, model, board } = runtimeForTest([
      { toolCalls: [{ name: 'start_task', input: { label: 'a' } }] },
      async () => {
        board.get('a')!.settle();
        await settleEventLoop();
        return { text: 'part one', finishReason: 'length' };
      },
      (request) => ({ text: request.continuation ? 'part two' : 'unexpected' }),
      { text: 'after' },
    ]);
    const session = runtime.createSession({ id: 's1' });
    await session.send('go');
    expect(model.requests[2]?.continuation).toBe(true);
    expect(notificationTexts(model.requests[2]!)).toEqual([]);
    // The turn ended after the continuation; the notification waited and woke the idle session once.
    await session.whenIdle();
    expect(model.requests).toHaveLength(4);
    expect(notificationTexts(model.requests[3]!)).toHaveLength(1);
    await runtime.dispose();
  });

  it('an empty reply ends the turn without recording an empty message', async () => {
    const { runtime } = runtimeForTest([{ text: '' }]);
    const session = runtime.createSession({ id: 's1' });
    await expect(session.send('hello')).resolves.toMatchObject({ reason: 'completed', text: '' });
    expect(session.messages().map((message) => message.role)).toEqual(['user']);
    await runtime.dispose();
  });

  it('a tool that breaks its contract is answered with an error; no tool call is left without a result', async () => {
    const { runtime, model } = runtimeForTest(
      [{ toolCalls: [{ name: 'broken', input: {} }] }, { text: 'recovered' }],
      {
        tools: () => [
          defineTool({
            name: 'broken',
            description: 'Returns nothing.',
            inputSchema: z.object({}),
            execute: async () => undefined as never,
          }),
        ],
      },
    );
    const session = runtime.createSession({ id: 's1' });
    await expect(session.send('go')).resolves.toMatchObject({ reason: 'completed', text: 'recovered' });
    const tool = model.requests[1]!.messages.at(-1);
    expect(tool?.role).toBe('tool');
    expect(tool?.role === 'tool' && tool.results[0]).toMatchObject({ isError: true });
    expect(session.messages().map((message) => message.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    await runtime.dispose();
  });

  it('interrupting a turn stops the turn, not the background tasks', async () => {
    const { runtime, board } = runtimeForTest([
      { toolCalls: [{ name: 'start_task', input: { label: 'server' } }] },
      () => new Promise(() => {}),
    ]);
    const session = runtime.createSession({ id: 's1' });
    const turn = session.send('start the server');
    await new Promise<void>((resolve) => {
      const stop = session.on((event) => {
        if (event.type === 'tool-call-end') {
          stop();
          resolve();
        }
      });
    });
    await settleEventLoop();
    expect(session.interrupt()).toBe(true);
    await expect(turn).resolves.toMatchObject({ reason: 'interrupted' });
    const server = runtime.tasks.list(session.owner)[0]!;
    expect(server.status).toBe('running');
    expect(board.get('server')!.cancelReasons).toEqual([]);
    await runtime.dispose();
  });
});

describe('idle delivery', () => {
  it('a burst of completions while idle starts exactly one turn with one batched message', async () => {
    const labels = ['alpha', 'beta', 'gamma', 'delta', 'epsilon'];
    const { runtime, model, board } = runtimeForTest([
      { toolCalls: labels.map((label) => ({ name: 'start_task', input: { label } })) },
      { text: 'all started' },
      (request) => ({ text: `got ${notificationTexts(request).length} message(s)` }),
    ]);
    const session = runtime.createSession({ id: 's1' });
    const events: SessionEvent[] = [];
    session.on((event) => events.push(event));
    await session.send('start five');
    for (const label of labels) board.get(label)!.settle();
    await session.whenIdle();
    await settleEventLoop();
    await session.whenIdle();
    const turns = events.filter((event) => event.type === 'turn-start');
    expect(turns).toHaveLength(2);
    expect(turns[1]).toMatchObject({ source: 'background_task', title: 'alpha, beta, gamma +2' });
    expect(model.requests).toHaveLength(3);
    const batch = notificationTexts(model.requests[2]!);
    expect(batch).toHaveLength(1);
    expect(batch[0]!.split('\n\n<task-notification>')).toHaveLength(5);
    const delivered = session.messages().filter((message) => message.source === 'background_task');
    expect(delivered).toHaveLength(1);
    expect(delivered[0]?.visibility).toBe('model-only');
    await runtime.dispose();
  });

  it('the quiet lane injects without waking; the next request carries it', async () => {
    const { runtime, model, board } = runtimeForTest(
      [
        { toolCalls: [{ name: 'start_task', input: { label: 'index' } }] },
        { text: 'indexing in the background' },
        (request) => ({
          text: `saw ${notificationTexts(request).length}; user said ${lastUserText(request)}`,
        }),
      ],
      { notifications: { lanes: { scripted: 'quiet' } } },
    );
    const session = runtime.createSession({ id: 's1' });
    await session.send('index the repo');
    board.get('index')!.settle();
    await settleEventLoop(10);
    await session.whenIdle();
    expect(model.requests).toHaveLength(2);
    expect(session.queuedCommands).toBe(1);
    const outcome = await session.send('what happened?');
    expect(outcome.text).toBe('saw 1; user said what happened?');
    await runtime.dispose();
  });

  it('the wake budget degrades to quiet delivery and a user message restores it', async () => {
    const { runtime, model, board } = runtimeForTest(
      [
        { toolCalls: ['t1', 't2', 't3', 't4'].map((label) => ({ name: 'start_task', input: { label } })) },
        { text: 'started' },
      ],
      { notifications: { wakeBudget: 2 } },
    );
    const session = runtime.createSession({ id: 's1' });
    await session.send('start four');
    const requestsAfter = () => model.requests.length;
    for (const label of ['t1', 't2', 't3']) {
      board.get(label)!.settle();
      await settleEventLoop(10);
      await session.whenIdle();
    }
    // t1 and t2 woke the session; t3 exceeded the budget and waits quietly.
    expect(requestsAfter()).toBe(4);
    expect(session.queuedCommands).toBe(1);
    await session.send('hello again');
    expect(requestsAfter()).toBe(5);
    expect(notificationTexts(model.requests[4]!).some((text) => text.includes('t3'))).toBe(true);
    board.get('t4')!.settle();
    await settleEventLoop(10);
    await session.whenIdle();
    expect(requestsAfter()).toBe(6);
    await runtime.dispose();
  });

  it('a burst that wakes the agent once costs one wake-up of the budget', async () => {
    const { runtime, model, board } = runtimeForTest(
      [
        { toolCalls: ['a', 'b', 'c', 'd', 'e'].map((label) => ({ name: 'start_task', input: { label } })) },
        { text: 'started' },
      ],
      { notifications: { wakeBudget: 2 } },
    );
    const session = runtime.createSession({ id: 's1' });
    await session.send('start five');
    for (const label of ['a', 'b', 'c']) board.get(label)!.settle();
    await settleEventLoop(10);
    await session.whenIdle();
    expect(model.requests).toHaveLength(3);
    // One wake-up was spent on the burst of three: the next completion still wakes the agent.
    board.get('d')!.settle();
    await settleEventLoop(10);
    await session.whenIdle();
    expect(model.requests).toHaveLength(4);
    board.get('e')!.settle();
    await settleEventLoop(10);
    await session.whenIdle();
    expect(model.requests).toHaveLength(4);
    expect(session.queuedCommands).toBe(1);
    await runtime.dispose();
  });

  it('a configuration command is a barrier: later notifications wait behind it, in order', async () => {
    const order: string[] = [];
    const { runtime, model, board } = runtimeForTest([
      { toolCalls: ['first', 'second'].map((label) => ({ name: 'start_task', input: { label } })) },
      { text: 'started' },
      (request) => {
        order.push(`turn with ${notificationTexts(request).length} notification message(s)`);
        return { text: 'ok' };
      },
      (request) => {
        order.push(`turn with ${notificationTexts(request).length} notification message(s)`);
        return { text: 'ok' };
      },
    ]);
    const session = runtime.createSession({ id: 's1' });
    await session.send('start');
    const release = session.holdIdleDrain();
    board.get('first')!.settle();
    await settleEventLoop(10);
    const configured = session.configure('switch model', () => {
      order.push('configured');
    });
    board.get('second')!.settle();
    await settleEventLoop(10);
    expect(model.requests).toHaveLength(2);
    release();
    await configured;
    await settleEventLoop(10);
    await session.whenIdle();
    expect(order).toEqual([
      'turn with 1 notification message(s)',
      'configured',
      'turn with 2 notification message(s)',
    ]);
    const texts = notificationTexts(model.requests[2]!);
    expect(texts[0]).toContain('scripted-1');
    expect(texts[0]).not.toContain('scripted-2');
    await runtime.dispose();
  });
});

describe('rewind', () => {
  it('drops a late result at enqueue: the task belongs to an abandoned branch', async () => {
    const { runtime, model, board, store } = runtimeForTest([
      { toolCalls: [{ name: 'start_task', input: { label: 'old' } }] },
      { text: 'started' },
    ]);
    const session = runtime.createSession({ id: 's1' });
    await session.send('start');
    expect(session.rewind(0)).toBe(1);
    board.get('old')!.settle();
    await settleEventLoop(10);
    await session.whenIdle();
    expect(model.requests).toHaveLength(2);
    expect(
      store
        .listLedger('s1', { states: ['queued', 'delivered'] })
        .filter((entry) => entry.kind === 'notification'),
    ).toEqual([]);
    await runtime.dispose();
  });

  it('drops a late result again before persisting, when the branch moved while it was queued', async () => {
    const { runtime, model, board, store } = runtimeForTest([
      { toolCalls: [{ name: 'start_task', input: { label: 'old' } }] },
      { text: 'started' },
    ]);
    const session = runtime.createSession({ id: 's1' });
    await session.send('start');
    const release = session.holdIdleDrain();
    board.get('old')!.settle();
    await settleEventLoop(10);
    expect(store.listQueued('s1')).toHaveLength(1);
    // Another writer moves the branch behind the session's back; only the persist-time check can see it.
    store.rewind('s1', 0);
    release();
    await settleEventLoop(10);
    await session.whenIdle();
    expect(model.requests).toHaveLength(2);
    const entries = store.listLedger('s1').filter((entry) => entry.kind === 'notification');
    expect(entries.map((entry) => [entry.state, entry.reason])).toEqual([['discarded', 'branch_changed']]);
    await runtime.dispose();
  });
  it('drops a stale notification that a person\u2019s input would carry as context, before persisting', async () => {
    const { runtime, board, store } = runtimeForTest(
      [
        { toolCalls: [{ name: 'start_task', input: { label: 'old' } }] },
        { text: 'started' },
        { text: 'answered' },
      ],
      { notifications: { lanes: { scripted: 'quiet' } } },
    );
    const session = runtime.createSession({ id: 's1' });
    await session.send('start');
    board.get('old')!.settle();
    await settleEventLoop(10);
    expect(store.listQueued('s1')).toHaveLength(1);
    // Another writer moves the branch behind the session's back; only the persist-time check can see it.
    store.rewind('s1', 0);
    await expect(session.send('next')).resolves.toMatchObject({ text: 'answered' });
    const entries = store.listLedger('s1').filter((entry) => entry.kind === 'notification');
    expect(entries.map((entry) => [entry.state, entry.reason])).toEqual([['discarded', 'branch_changed']]);
    await runtime.dispose();
  });
});

describe('creating sessions', () => {
  it('a tools factory that throws leaves the stored session closed, not open', async () => {
    const { runtime, store } = runtimeForTest([], {
      tools: () => {
        throw new Error('tools unavailable');
      },
    });
    expect(() => runtime.createSession({ id: 's1' })).toThrow('tools unavailable');
    expect(store.getSession('s1')?.state).toBe('closed');
    expect(runtime.getSession('s1')).toBeUndefined();
    await runtime.dispose();
  });
});

describe('user-prompt hooks', () => {
  it('run for a person\u2019s input and are skipped for background-task turns', async () => {
    const seen: string[] = [];
    const { runtime, model, board } = runtimeForTest(
      [
        { toolCalls: [{ name: 'start_task', input: { label: 'job' } }] },
        { text: 'started' },
        (request) => ({
          text: lastUserText(request).includes('<task-notification>') ? 'got it' : 'unexpected',
        }),
      ],
      {
        beforeUserPrompt: (text) => {
          seen.push(text);
          return `${text} [checked]`;
        },
      },
    );
    const session = runtime.createSession({ id: 's1' });
    await session.send('run the job');
    board.get('job')!.settle();
    await settleEventLoop(10);
    await session.whenIdle();
    expect(seen).toEqual(['run the job']);
    expect(lastUserText(model.requests[0]!)).toBe('run the job [checked]');
    expect(model.requests).toHaveLength(3);
    await runtime.dispose();
  });
});

describe('shutdown', () => {
  it('beginShutdown blocks notifications at once', async () => {
    const { runtime } = runtimeForTest([]);
    const session = runtime.createSession({ id: 's1' });
    const closed = session.beginShutdown();
    expect(session.shuttingDown).toBe(true);
    expect(
      session.deliverNotification({
        taskId: 'scripted-9',
        label: 'late',
        text: '<task-notification/>',
        branchGeneration: 0,
        idempotencyKey: 'late',
      }),
    ).toEqual({ admitted: false, reason: 'shutting_down' });
    await closed;
    expect(session.state).toBe('closed');
    await runtime.dispose();
  });

  it('closing a session blocks notifications, cancels its tasks and discards what is queued', async () => {
    const { runtime, board, store } = runtimeForTest([
      { toolCalls: ['a', 'b'].map((label) => ({ name: 'start_task', input: { label } })) },
      { text: 'started' },
    ]);
    const session = runtime.createSession({ id: 's1' });
    await session.send('start');
    const release = session.holdIdleDrain();
    board.get('a')!.settle();
    await settleEventLoop(10);
    await session.close();
    release();
    expect(board.get('b')!.cancelReasons).toEqual(['owner disposal']);
    expect(
      store
        .listLedger('s1')
        .filter((entry) => entry.kind === 'notification')
        .map((entry) => entry.state),
    ).toEqual(['discarded']);
    expect(store.getSession('s1')?.state).toBe('closed');
    expect(runtime.getSession('s1')).toBeUndefined();
    await runtime.dispose();
  });
});
