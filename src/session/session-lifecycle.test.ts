import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { flushMicrotasks } from '../../test/support/registry.js';
import {
  runtimeForTest,
  settleEventLoop,
  startTaskTool,
  switchableStore,
  type TaskBoard,
} from '../../test/support/session.js';
import { deferred } from '../../test/support/waiting.js';
import { createMemorySessionStore, type SessionStore } from '../store/index.js';
import { defineTool } from '../tools/index.js';
import type { ModelPort, ModelResponse } from './model-port.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('the configuration barrier', () => {
  it('an input queued behind a configuration that is still applying waits for it', async () => {
    const order: string[] = [];
    const { runtime } = runtimeForTest([
      () => {
        order.push('model request');
        return { text: 'ok' };
      },
    ]);
    const session = runtime.createSession({ id: 's1' });
    vi.useFakeTimers();
    const applying = deferred();
    let started = false;
    const configured = session.configure('switch model', async () => {
      started = true;
      await applying.promise;
      order.push('configured');
    });
    await vi.advanceTimersByTimeAsync(10);
    expect(started).toBe(true);
    const reply = session.send('hello');
    let idle = false;
    void session.whenIdle().then(() => {
      idle = true;
    });
    // Well past the drain's longest delay: a second drain had every chance to start a turn.
    await vi.advanceTimersByTimeAsync(1_000);
    expect(order).toEqual([]);
    expect(idle).toBe(false);
    applying.resolve();
    await vi.advanceTimersByTimeAsync(10);
    await configured;
    await reply;
    expect(order).toEqual(['configured', 'model request']);
    await vi.advanceTimersByTimeAsync(10);
    expect(idle).toBe(true);
    vi.useRealTimers();
    await runtime.dispose();
  });

  it('takeQueuedNotifications delivers nothing queued behind a configuration that is still applying', async () => {
    const { runtime } = runtimeForTest([]);
    const session = runtime.createSession({ id: 's1' });
    vi.useFakeTimers();
    const applying = deferred();
    let started = false;
    const configured = session.configure('switch model', async () => {
      started = true;
      await applying.promise;
    });
    await vi.advanceTimersByTimeAsync(10);
    expect(started).toBe(true);
    session.deliverNotification({
      taskId: 'scripted-1',
      label: 'late',
      text: '<task-notification/>',
      lane: 'quiet',
      branchGeneration: 0,
      idempotencyKey: 'late',
    });
    expect(session.takeQueuedNotifications({ source: 'mcp_tool_result' })).toEqual([]);
    applying.resolve();
    await vi.advanceTimersByTimeAsync(10);
    await configured;
    vi.useRealTimers();
    expect(session.takeQueuedNotifications({ source: 'mcp_tool_result' })).toHaveLength(1);
    await runtime.dispose();
  });
});

describe('the input ledger', () => {
  it('a user-prompt hook that throws discards the input’s ledger entry instead of leaving it queued', async () => {
    const { runtime, store, model } = runtimeForTest([{ text: 'never asked' }], {
      beforeUserPrompt: () => {
        throw new Error('hook failed');
      },
    });
    const session = runtime.createSession({ id: 's1' });
    await expect(session.send('hello')).resolves.toMatchObject({ reason: 'error', error: 'hook failed' });
    expect(model.requests).toHaveLength(0);
    expect(store.listQueued('s1')).toEqual([]);
    expect(store.listLedger('s1').map((entry) => [entry.kind, entry.state, entry.reason])).toEqual([
      ['user_input', 'discarded', 'delivery_failed'],
    ]);
    await runtime.dispose();
  });
});

describe('interrupting a turn', () => {
  it('leaves notifications that arrived during the interrupted step queued, and they wake the session', async () => {
    const board: TaskBoard = new Map();
    const gate = deferred();
    let slowStarted = false;
    const { runtime, model, store } = runtimeForTest(
      [
        {
          toolCalls: [
            { name: 'start_task', input: { label: 'job' } },
            { name: 'slow', input: {} },
          ],
        },
        { text: 'the job finished' },
      ],
      {
        tools: (session) => [
          startTaskTool(session, board),
          defineTool({
            name: 'slow',
            description: 'Ignores the abort signal.',
            inputSchema: z.object({}),
            async execute() {
              slowStarted = true;
              await gate.promise;
              return { text: 'slow done', isError: false, value: undefined };
            },
          }),
        ],
      },
    );
    const session = runtime.createSession({ id: 's1' });
    const reply = session.send('go');
    await vi.waitFor(() => expect(slowStarted).toBe(true));
    board.get('job')!.settle();
    await vi.waitFor(() => expect(session.queuedCommands).toBe(1));
    expect(session.interrupt()).toBe(true);
    gate.resolve();
    await expect(reply).resolves.toMatchObject({ reason: 'interrupted' });
    await vi.waitFor(() => expect(model.requests).toHaveLength(2));
    await session.whenIdle();
    const last = model.requests[1]!.messages.at(-1);
    expect(last?.role === 'user' && last.text).toContain('<task-id>scripted-1</task-id>');
    const delivered = store.listLedger('s1').filter((entry) => entry.kind === 'notification');
    expect(delivered.map((entry) => entry.state)).toEqual(['delivered']);
    await runtime.dispose();
  });
});

describe('a store that fails while queued notifications are delivered', () => {
  /** A turn whose tool waits on `gate` while the task `job` it started ends, so its notification is injected mid-turn. */
  function midTurnScenario(
    steps: Parameters<typeof runtimeForTest>[0],
    options: Parameters<typeof runtimeForTest>[1] = {},
  ) {
    const board: TaskBoard = new Map();
    const gate = deferred();
    const { store, failing } = switchableStore();
    let slowStarted = false;
    const test = runtimeForTest(steps, {
      store,
      limits: { deliveryRetryMs: 1 },
      ...options,
      tools: (session) => [
        startTaskTool(session, board),
        defineTool({
          name: 'slow',
          description: 'Waits for the test.',
          inputSchema: z.object({}),
          async execute() {
            slowStarted = true;
            await gate.promise;
            return { text: 'slow done', isError: false, value: undefined };
          },
        }),
      ],
    });
    return { ...test, board, gate, failing, started: () => slowStarted };
  }

  it('mid-turn: the turn ends with the error, the notification stays queued in memory and in the ledger, and is delivered once when the store works again', async () => {
    const { runtime, model, store, logger, board, gate, failing, started } = midTurnScenario([
      {
        toolCalls: [
          { name: 'start_task', input: { label: 'job' } },
          { name: 'slow', input: {} },
        ],
      },
      { text: 'the job finished' },
    ]);
    const session = runtime.createSession({ id: 's1' });
    const reply = session.send('go');
    await vi.waitFor(() => expect(started()).toBe(true));
    board.get('job')!.settle({ status: 'completed' });
    await vi.waitFor(() => expect(session.queuedCommands).toBe(1));
    failing.add('commitDelivery');
    gate.resolve();

    const outcome = await reply;
    expect(outcome).toMatchObject({ reason: 'error' });
    expect(outcome.error).toContain('store unavailable (commitDelivery)');
    expect(outcome.error).toContain('scripted-1');
    expect(model.requests).toHaveLength(1);
    const warning = logger.warnings.find((entry) => entry.message.includes('turn 1 failed'));
    expect(String(warning?.context?.error)).toContain('store unavailable');
    // The queue and the ledger agree: the notification is still waiting in both.
    expect(session.queuedCommands).toBe(1);
    expect(store.listQueued('s1').map((entry) => entry.taskId)).toEqual(['scripted-1']);

    failing.delete('commitDelivery');
    await vi.waitFor(() => expect(model.requests).toHaveLength(2));
    await session.whenIdle();
    const notifications = session
      .messages()
      .filter((message) => message.content.text?.includes('<task-id>scripted-1'));
    expect(notifications).toHaveLength(1);
    expect(
      store
        .listLedger('s1')
        .filter((entry) => entry.kind === 'notification')
        .map((entry) => entry.state),
    ).toEqual(['delivered']);
    expect(session.queuedCommands).toBe(0);
    await runtime.dispose();
  });

  it('ahead of a person’s input: the turn fails, the input is discarded, the notification waits for the next turn', async () => {
    const { runtime, model, store, board, failing } = midTurnScenario(
      [
        { toolCalls: [{ name: 'start_task', input: { label: 'job' } }] },
        { text: 'started' },
        { text: 'answer with the job as context' },
      ],
      // Quiet: only a person's input takes it.
      { notifications: { defaultLane: 'quiet' } },
    );
    const session = runtime.createSession({ id: 's1' });
    await session.send('start');
    board.get('job')!.settle({ status: 'completed' });
    await vi.waitFor(() => expect(session.queuedCommands).toBe(1));
    failing.add('commitDelivery');
    const outcome = await session.send('what happened?');
    expect(outcome).toMatchObject({ reason: 'error' });
    expect(outcome.error).toContain('store unavailable (commitDelivery)');
    expect(model.requests).toHaveLength(2);
    failing.delete('commitDelivery');
    expect(store.listLedger('s1').map((entry) => [entry.kind, entry.state, entry.reason ?? null])).toEqual([
      ['user_input', 'delivered', null],
      ['notification', 'queued', null],
      ['user_input', 'discarded', 'delivery_failed'],
    ]);
    expect(session.queuedCommands).toBe(1);
    await expect(session.send('and now?')).resolves.toMatchObject({ reason: 'completed' });
    const last = model.requests[2]!.messages.slice(-2);
    expect(last.map((message) => message.role === 'user' && message.text)).toEqual([
      expect.stringContaining('<task-id>scripted-1</task-id>'),
      'and now?',
    ]);
    expect(
      store
        .listLedger('s1')
        .filter((entry) => entry.kind === 'notification')
        .map((entry) => entry.state),
    ).toEqual(['delivered']);
    expect(session.queuedCommands).toBe(0);
    await runtime.dispose();
  });

  it('at the start of a background turn: the batch goes back to the queue and the next turn delivers it once', async () => {
    const { runtime, model, store, board, failing } = midTurnScenario([
      { toolCalls: [{ name: 'start_task', input: { label: 'job' } }] },
      { text: 'started' },
      { text: 'noted the job' },
      { text: 'hello again' },
    ]);
    const session = runtime.createSession({ id: 's1' });
    await session.send('start');
    failing.add('commitDelivery');
    board.get('job')!.settle({ status: 'completed' });
    // The wake-up turn fails to record the batch, and the retries fail too while the store is down.
    await vi.waitFor(() => expect(store.listQueued('s1')).toHaveLength(1));
    await vi.waitFor(() =>
      expect(
        runtime.store.listMessages('s1').filter((message) => message.source === 'background_task'),
      ).toEqual([]),
    );
    expect(session.queuedCommands).toBe(1);
    expect(model.requests).toHaveLength(2);
    failing.delete('commitDelivery');
    await vi.waitFor(() => expect(model.requests).toHaveLength(3));
    await session.whenIdle();
    expect(session.messages().filter((message) => message.source === 'background_task')).toHaveLength(1);
    expect(
      store
        .listLedger('s1')
        .filter((entry) => entry.kind === 'notification')
        .map((entry) => entry.state),
    ).toEqual(['delivered']);
    await runtime.dispose();
  });
});

describe('closing', () => {
  it('waits for a turn that ignores the abort without polling the event loop', async () => {
    const reply = deferred<ModelResponse>();
    let asked = false;
    const stubborn: ModelPort = {
      name: 'stubborn',
      generate: () => {
        asked = true;
        return reply.promise;
      },
    };
    const { runtime } = runtimeForTest([], { model: stubborn });
    const session = runtime.createSession({ id: 's1' });
    const turn = session.send('hello');
    await vi.waitFor(() => expect(asked).toBe(true));
    vi.useFakeTimers({ toFake: ['setImmediate'] });
    const closing = session.close();
    await flushMicrotasks(50);
    expect(session.state).toBe('shutting_down');
    expect(vi.getTimerCount()).toBe(0);
    vi.useRealTimers();
    reply.resolve({ text: 'late', toolCalls: [], finishReason: 'stop' });
    await closing;
    await expect(turn).resolves.toMatchObject({ reason: 'interrupted' });
    expect(session.state).toBe('closed');
    await runtime.dispose();
  });

  it('a failing owner cleanup still closes the session and settles its queued inputs', async () => {
    const { runtime, store, logger } = runtimeForTest([]);
    const session = runtime.createSession({ id: 's1' });
    session.owner.addCleanup(() => {
      throw new Error('cleanup failed');
    });
    session.holdIdleDrain();
    const pending = session.send('queued behind the hold');
    await expect(session.close()).resolves.toBeUndefined();
    await expect(pending).rejects.toMatchObject({ code: 'SESSION_CLOSED' });
    expect(session.state).toBe('closed');
    expect(store.listQueued('s1')).toEqual([]);
    expect(store.getSession('s1')?.state).toBe('closed');
    expect(runtime.getSession('s1')).toBeUndefined();
    expect(logger.warnings.map((warning) => warning.message).join('\n')).toContain('cleanup');
    await runtime.dispose();
  });

  it('a store that fails while closing still ends in the closed state, and dispose finishes', async () => {
    const inner = createMemorySessionStore();
    const store = new Proxy(inner, {
      get(target, property, receiver) {
        if (property === 'updateSession') {
          return () => {
            throw new Error('disk full');
          };
        }
        const value = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }) as SessionStore;
    const { runtime } = runtimeForTest([], { store });
    const session = runtime.createSession({ id: 's1' });
    let idle = false;
    const closing = session.close();
    void session.whenIdle().then(() => {
      idle = true;
    });
    await expect(closing).resolves.toBeUndefined();
    expect(session.state).toBe('closed');
    await settleEventLoop();
    expect(idle).toBe(true);
    expect(runtime.getSession('s1')).toBeUndefined();
    await runtime.dispose();
    await expect(
      runtime.tasks.start({
        kind: 'scripted',
        label: 'late',
        run: () => ({ cancel() {}, done: new Promise(() => {}) }),
      }),
    ).rejects.toMatchObject({ code: 'SERVICE_DISPOSED' });
  });
});

describe('closing from inside the session’s own turn', () => {
  it('a tool that awaits close() of its own session does not hang: the turn is interrupted and the session closes', async () => {
    const order: string[] = [];
    const { runtime, store, model } = runtimeForTest(
      [{ toolCalls: [{ name: 'end_session', input: {} }] }, { text: 'never asked' }],
      {
        tools: (session) => [
          defineTool({
            name: 'end_session',
            description: 'Closes the session it runs in.',
            inputSchema: z.object({}),
            async execute(_input, context) {
              await session.close();
              order.push(`close resolved (signal aborted: ${context.signal.aborted})`);
              return { text: 'closed', isError: false, value: undefined };
            },
          }),
        ],
      },
    );
    const session = runtime.createSession({ id: 's1' });
    const reply = session.send('bye');
    await vi.waitFor(() => expect(order).toHaveLength(1));
    expect(order).toEqual(['close resolved (signal aborted: true)']);
    await expect(reply).resolves.toMatchObject({ reason: 'interrupted' });
    await session.close();
    expect(session.state).toBe('closed');
    expect(store.getSession('s1')?.state).toBe('closed');
    expect(model.requests).toHaveLength(1);
    expect(runtime.getSession('s1')).toBeUndefined();
    await runtime.dispose();
  });

  it('a tool that awaits close() after a close from outside began does not hang either', async () => {
    const gate = deferred();
    const events: string[] = [];
    const { runtime } = runtimeForTest([{ toolCalls: [{ name: 'linger', input: {} }] }], {
      tools: (session) => [
        defineTool({
          name: 'linger',
          description: 'Ignores the abort, then closes its session.',
          inputSchema: z.object({}),
          async execute() {
            events.push('tool started');
            await gate.promise;
            await session.close();
            events.push(`tool saw ${session.state}`);
            return { text: 'done', isError: false, value: undefined };
          },
        }),
      ],
    });
    const session = runtime.createSession({ id: 's1' });
    const reply = session.send('go');
    await vi.waitFor(() => expect(events).toEqual(['tool started']));
    const closing = session.close().then(() => events.push('outside close resolved'));
    gate.resolve();
    await closing;
    // The tool's close resolved before the turn unwound; the outside one only once the session was closed.
    expect(events).toEqual(['tool started', 'tool saw shutting_down', 'outside close resolved']);
    expect(session.state).toBe('closed');
    await expect(reply).resolves.toMatchObject({ reason: 'interrupted' });
    await runtime.dispose();
  });

  it('a configuration whose apply awaits close() of its own session does not hang', async () => {
    const { runtime, store } = runtimeForTest([]);
    const session = runtime.createSession({ id: 's1' });
    let closedInside = false;
    const configured = session.configure('shut down', async () => {
      await session.close();
      closedInside = true;
    });
    await vi.waitFor(() => expect(closedInside).toBe(true));
    await expect(configured).resolves.toBeUndefined();
    await session.close();
    expect(session.state).toBe('closed');
    expect(store.getSession('s1')?.state).toBe('closed');
    await runtime.dispose();
  });
});

describe('configuring from inside the session’s own turn', () => {
  it('a tool that awaits configure() of its own session does not hang: the change applies right after the turn', async () => {
    const steps: string[] = [];
    const { runtime, model, logger } = runtimeForTest(
      [{ toolCalls: [{ name: 'switch', input: {} }] }, { text: 'switched' }, { text: 'second turn' }],
      {
        tools: (session) => [
          defineTool({
            name: 'switch',
            description: 'Queues a configuration change and awaits it.',
            inputSchema: z.object({}),
            async execute() {
              await session.configure('switch prompt', () => {
                steps.push('applied');
                session.setSystemPrompt('after the switch');
              });
              steps.push('configure resolved');
              await session.configure('broken', () => {
                throw new Error('apply broke');
              });
              return { text: 'queued', isError: false, value: undefined };
            },
          }),
        ],
      },
    );
    const session = runtime.createSession({ id: 's1' });
    await expect(session.send('switch it')).resolves.toMatchObject({ reason: 'completed' });
    // Resolved while queued; applied only once the turn had ended.
    expect(steps[0]).toBe('configure resolved');
    await vi.waitFor(() => expect(steps).toEqual(['configure resolved', 'applied']));
    await vi.waitFor(() =>
      expect(logger.warnings.some((entry) => entry.message.includes('"broken" failed to apply'))).toBe(true),
    );
    await session.send('again');
    expect(JSON.stringify(model.requests.at(-1))).toContain('after the switch');
    await runtime.dispose();
  });
});

describe('argument validation', () => {
  it('configure names a bad label or apply function', async () => {
    const { runtime } = runtimeForTest([]);
    const session = runtime.createSession({ id: 's1' });
    await expect(session.configure('', () => {})).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      context: { field: 'label' },
    });
    await expect(session.configure('switch', 'nope' as never)).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      context: { field: 'apply' },
    });
    expect(session.queuedCommands).toBe(0);
    await runtime.dispose();
  });

  it('send rejects a bad priority or idempotency key instead of throwing', async () => {
    const { runtime, store } = runtimeForTest([]);
    const session = runtime.createSession({ id: 's1' });
    let sent: Promise<unknown> | undefined;
    expect(() => {
      sent = session.send('hello', { priority: 'urgent' as never });
    }).not.toThrow();
    await expect(sent).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', context: { field: 'priority' } });
    expect(() => {
      sent = session.send('hello', { idempotencyKey: 42 as never });
    }).not.toThrow();
    await expect(sent).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      context: { field: 'idempotencyKey' },
    });
    expect(store.listLedger('s1')).toEqual([]);
    await runtime.dispose();
  });
});
