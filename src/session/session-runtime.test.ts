import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createTaskService } from '../registry/index.js';
import { createMemorySessionStore, openSqliteSessionStore } from '../store/index.js';
import { createTrustedCaller } from '../tasks/index.js';
import { scriptedModel, scriptedTask } from '../testing/index.js';
import { defineTool } from '../tools/index.js';
import { createSessionRuntime, type SessionRuntime, type SessionRuntimeOptions } from './session-runtime.js';

/** These tests start and settle tasks themselves: they are the runtime's task controller. */
function collected(runtime: SessionRuntime): SessionRuntime {
  runtime.tasks.attachController('test');
  return runtime;
}

/** A task service that counts the subscriptions made to it, so a test can tell nothing attached. */
function watchedTaskService() {
  const tasks = createTaskService();
  const subscriptions: string[] = [];
  const watched = new Proxy(tasks, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (property === 'onTasksChanged' || property === 'onTaskDone' || property === 'attachController') {
          subscriptions.push(property);
        }
        return Reflect.apply(value, target, args);
      };
    },
  });
  return { tasks: watched, subscriptions };
}

describe('session runtime options', () => {
  it.each<[string, Partial<SessionRuntimeOptions>]>([
    ['tasks', { tasks: {} as never }],
    ['tools', { tools: 'none' as never }],
    ['beforeUserPrompt', { beforeUserPrompt: 1 as never }],
    ['onSessionShutdown', { onSessionShutdown: true as never }],
    ['now', { now: 5 as never }],
    ['systemPrompt', { systemPrompt: 5 as never }],
    ['cwd', { cwd: '' }],
    ['env', { env: 'PATH=/bin' as never }],
    ['logger', { logger: {} as never }],
    ['limits', { limits: null as never }],
    ['limits.maxStepsPerTurn', { limits: { maxStepsPerTurn: 0 } }],
    ['limits.deliveryRetryMs', { limits: { deliveryRetryMs: 0 } }],
    ['limits.deliveryRetryMaxMs', { limits: { deliveryRetryMs: 5000, deliveryRetryMaxMs: 1000 } }],
    ['notifications.wakeBudget', { notifications: { wakeBudget: -1 } }],
    ['notifications.lanes.bash', { notifications: { lanes: { bash: 'loud' as never } } }],
  ])('rejects a bad %s when the runtime is created, naming it', (field, options) => {
    expect(() =>
      createSessionRuntime({ store: createMemorySessionStore(), model: scriptedModel(), ...options }),
    ).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', context: expect.objectContaining({ field }) }),
    );
  });

  it('a bad notification option fails before the runtime attaches to the service or writes a session', async () => {
    const store = createMemorySessionStore();
    const { tasks, subscriptions } = watchedTaskService();
    expect(() =>
      createSessionRuntime({
        store,
        tasks,
        model: scriptedModel(),
        notifications: { maxNotificationBytes: 0 },
      }),
    ).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(store.listSessions()).toEqual([]);
    expect(subscriptions).toEqual([]);
    await tasks.dispose();
  });

  it('createSession names a bad environment before writing anything', async () => {
    const store = createMemorySessionStore();
    const runtime = createSessionRuntime({ store, model: scriptedModel() });
    expect(() => runtime.createSession({ id: 's1', env: 'PATH=/bin' as never })).toThrow(
      expect.objectContaining({
        code: 'INVALID_ARGUMENT',
        context: expect.objectContaining({ field: 'env' }),
      }),
    );
    expect(store.listSessions()).toEqual([]);
    await runtime.dispose();
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['systemPromt', { systemPromt: 'x' }, 'did you mean `systemPrompt`?'],
    ['limits.maxSteps', { limits: { maxSteps: 3 } }, 'known options: `limits.maxStepsPerTurn`'],
    [
      'notifications.wakebudget',
      { notifications: { wakebudget: 1 } },
      'did you mean `notifications.wakeBudget`?',
    ],
    [
      'notifications.outputTail.lines',
      { notifications: { outputTail: { maxLines: 1, maxBytes: 1, lines: 1 } } },
      'known options: `notifications.outputTail.maxLines`',
    ],
    // The runtime sets the policy's owner itself: a caller's one is not an option of `notifications`.
    ['notifications.owner', { notifications: { owner: {} } }, 'known options: `notifications.defaultLane`'],
  ])('rejects the unknown key %s before attaching to the service', async (field, options, hint) => {
    const store = createMemorySessionStore();
    const { tasks, subscriptions } = watchedTaskService();
    const create = () => createSessionRuntime({ store, tasks, model: scriptedModel(), ...options });
    expect(create).toThrow(
      expect.objectContaining({ code: 'UNKNOWN_OPTION', context: expect.objectContaining({ field }) }),
    );
    expect(create).toThrow(`Unknown option \`${field}\` for createSessionRuntime`);
    expect(create).toThrow(hint);
    expect(subscriptions).toEqual([]);
    await tasks.dispose();
  });

  it('createSession and resumeSession reject unknown keys before writing anything', async () => {
    const store = createMemorySessionStore();
    const runtime = createSessionRuntime({ store, model: scriptedModel() });
    expect(() => runtime.createSession({ id: 's1', titel: 'x' } as never)).toThrow(
      expect.objectContaining({
        code: 'UNKNOWN_OPTION',
        message: 'Unknown option `titel` for createSession (did you mean `title`?)',
      }),
    );
    expect(store.listSessions()).toEqual([]);
    store.createSession({ id: 's2', cwd: '/' });
    expect(() => runtime.resumeSession('s2', { cwd: '/' } as never)).toThrow(
      expect.objectContaining({
        code: 'UNKNOWN_OPTION',
        message: expect.stringContaining('`cwd` for resumeSession'),
      }),
    );
    expect(runtime.getSession('s2')).toBeUndefined();
    await runtime.dispose();
  });
});

describe('one runtime per open session', () => {
  it('refuses to resume a session another runtime of this process has open, until it closes or is disposed', async () => {
    const store = createMemorySessionStore();
    const first = collected(createSessionRuntime({ store, model: scriptedModel([]) }));
    const second = collected(createSessionRuntime({ store, model: scriptedModel([]) }));
    const session = first.createSession({ id: 's1' });
    first.createSession({ id: 's2' });
    const { id } = await first.tasks.start(scriptedTask({ kind: 'bash', owner: session.owner }).spec);
    expect(() => second.resumeSession('s1')).toThrow(
      expect.objectContaining({
        code: 'SESSION_IN_USE',
        context: expect.objectContaining({ sessionId: 's1' }),
      }),
    );
    // The running task was not marked lost by the refused resume.
    expect(store.getTask(id, 's1')).toMatchObject({ status: 'running' });
    await session.close();
    expect(store.getSession('s1')?.holder).toBeUndefined();
    const resumed = second.resumeSession('s1');
    expect(() => first.resumeSession('s1')).toThrow(expect.objectContaining({ code: 'SESSION_IN_USE' }));
    // A disposed runtime holds nothing: its sessions were closed, and a holder it left is stale.
    await first.dispose();
    expect(second.resumeSession('s2').id).toBe('s2');
    await resumed.close();
    await second.dispose();
  });

  it('replaces a holder its process left behind (a crash) and one of a runtime that is gone', async () => {
    const store = createMemorySessionStore();
    store.createSession({ id: 's1', cwd: '/' });
    // A pid that no process has (beyond pid_max) and a runtime of this process that is not registered.
    store.acquireSession('s1', { runtime: 'gone', pid: 4_194_304 + 7, acquiredAt: 0 }, () => false);
    const runtime = createSessionRuntime({ store, model: scriptedModel([]) });
    expect(runtime.resumeSession('s1').id).toBe('s1');
    await runtime.closeSession('s1');
    store.acquireSession('s1', { runtime: 'gone', pid: process.pid, acquiredAt: 0 }, () => false);
    expect(runtime.resumeSession('s1').id).toBe('s1');
    await runtime.dispose();
  });

  it('a createSession or resumeSession that fails after taking the holder leaves no holder behind', async () => {
    const store = createMemorySessionStore();
    let failTools = true;
    const failing = createSessionRuntime({
      store,
      model: scriptedModel([]),
      tools: () => {
        if (failTools) throw new Error('tools unavailable');
        return [];
      },
    });
    const other = createSessionRuntime({ store, model: scriptedModel([]) });
    expect(() => failing.createSession({ id: 's1' })).toThrow('tools unavailable');
    expect(store.getSession('s1')?.holder).toBeUndefined();
    // Nobody has the session open: another runtime may resume it while the failing one still lives.
    const resumed = other.resumeSession('s1');
    await resumed.close();
    expect(() => failing.resumeSession('s1')).toThrow('tools unavailable');
    expect(store.getSession('s1')?.holder).toBeUndefined();
    expect(other.resumeSession('s1').id).toBe('s1');
    failTools = false;
    await other.dispose();
    await failing.dispose();
  });
});

describe('task ids across runtimes on one store', () => {
  it('never repeats an id between runtimes running at once, and continues after the last one used', async () => {
    const store = createMemorySessionStore();
    const first = collected(createSessionRuntime({ store, model: scriptedModel([]) }));
    const second = collected(createSessionRuntime({ store, model: scriptedModel([]) }));
    const a = first.createSession({ id: 'a' });
    const b = second.createSession({ id: 'b' });
    const ids: string[] = [];
    for (let index = 0; index < 3; index += 1) {
      ids.push((await first.tasks.start(scriptedTask({ kind: 'bash', owner: a.owner }).spec)).id);
      ids.push((await second.tasks.start(scriptedTask({ kind: 'bash', owner: b.owner }).spec)).id);
    }
    expect(new Set(ids).size).toBe(6);
    expect(ids.slice(0, 2)).toEqual(['bash-1', 'bash-101']);
    // The second runtime ends: its block was the newest, so what it did not use goes back.
    await second.dispose();
    const third = collected(createSessionRuntime({ store, model: scriptedModel([]) }));
    const c = third.createSession({ id: 'c' });
    expect((await third.tasks.start(scriptedTask({ kind: 'bash', owner: c.owner }).spec)).id).toBe(
      'bash-104',
    );
    await first.dispose();
    await third.dispose();
  });
});

describe('task records in the store', () => {
  it('writes facts JSON cannot hold as they are as their JSON copy, and the rest as published', async () => {
    const store = createMemorySessionStore();
    const runtime = collected(createSessionRuntime({ store, model: scriptedModel([]) }));
    const session = runtime.createSession({ id: 's' });
    const task = scriptedTask({ kind: 'bash', owner: session.owner, spec: { detail: { outputBytes: 3 } } });
    const { id } = await runtime.tasks.start(task.spec);
    expect(store.getTask(id, 's')?.detail).toEqual({ outputBytes: 3 });
    // A producer outside the type's rules: a Date and NaN, which the store refuses as they are.
    task.context!.updateDetail({
      pid: 4242,
      since: new Date(Date.UTC(2026, 0, 2)),
      ratio: Number.NaN,
    } as never);
    expect(store.getTask(id, 's')?.detail).toEqual({
      outputBytes: 3,
      pid: 4242,
      since: '2026-01-02T00:00:00.000Z',
      ratio: null,
    });
    task.settle({ status: 'completed', detail: { exitCode: 0 } });
    await runtime.tasks.wait(id, 1000, createTrustedCaller('test'));
    expect(store.getTask(id, 's')).toMatchObject({ status: 'completed', detail: { exitCode: 0, pid: 4242 } });
    await runtime.dispose();
  });
});

describe('tasks lost with their runtime', () => {
  it('tells the model once: again on the next resume if the session closed before it was told, never after', async () => {
    const store = createMemorySessionStore();
    store.createSession({ id: 's1', cwd: '/' });
    store.upsertTask({
      id: 'bash-3',
      sessionId: 's1',
      kind: 'bash',
      label: 'dev server',
      status: 'running',
      detail: {},
      isBackgrounded: true,
      branchGeneration: 0,
      startedAt: 1_000,
      reported: false,
    });
    const lostEntries = () => store.listLedger('s1').filter((entry) => entry.taskId === 'bash-3');

    // Resumed and closed again before any turn: the quiet notification never reached the model.
    const first = createSessionRuntime({ store, model: scriptedModel([]) });
    await first.resumeSession('s1').close();
    expect(lostEntries().map((entry) => [entry.state, entry.reason ?? null])).toEqual([
      ['discarded', 'shutdown'],
    ]);
    await first.dispose();

    // The next resume tells it again, and this time a turn delivers it.
    const model = scriptedModel([{ text: 'noted' }]);
    const second = createSessionRuntime({ store, model });
    await second.resumeSession('s1').send('what happened?');
    expect(JSON.stringify(model.requests[0])).toContain('<status>lost</status>');
    expect(lostEntries().map((entry) => entry.state)).toEqual(['discarded', 'delivered']);
    await second.dispose();

    // Told once: a third resume adds nothing.
    const third = createSessionRuntime({ store, model: scriptedModel([]) });
    third.resumeSession('s1');
    expect(lostEntries()).toHaveLength(2);
    await third.dispose();
  });
});

describe('disposing a runtime from inside a session turn', () => {
  it('keeps holding the session until its turn unwinds, then lets another runtime resume it', async () => {
    const store = createMemorySessionStore();
    const other = createSessionRuntime({ store, model: scriptedModel([]) });
    let seenInside: unknown;
    const runtime = createSessionRuntime({
      store,
      model: scriptedModel([{ toolCalls: [{ name: 'shutdown', input: {} }] }, { text: 'never asked' }]),
      tools: () => [
        defineTool({
          name: 'shutdown',
          description: 'Disposes the runtime it runs in.',
          inputSchema: z.object({}),
          async execute() {
            await runtime.dispose();
            // The session is still closing (this turn has not unwound): nobody else may take it yet.
            try {
              other.resumeSession('s1');
            } catch (error) {
              seenInside = error;
            }
            return { text: 'disposed', isError: false, value: undefined };
          },
        }),
      ],
    });
    const session = runtime.createSession({ id: 's1' });
    await expect(session.send('stop everything')).resolves.toMatchObject({ reason: 'interrupted' });
    expect(seenInside).toMatchObject({ code: 'SESSION_IN_USE' });
    await vi.waitFor(() => expect(session.state).toBe('closed'));
    expect(other.resumeSession('s1').id).toBe('s1');
    await other.dispose();
  });
});

describe("the turn loop's writes", () => {
  it('commit without waiting for the disk, and are durable before anything acts on them', async () => {
    const home = mkdtempSync(join(tmpdir(), 'errand-turn-durable-'));
    const sqlite = openSqliteSessionStore({ home });
    const steps: string[] = [];
    // The store as the runtime sees it, noting each transaction's durability and each wait for the disk.
    const store = Object.create(sqlite, {
      transaction: {
        value: (body: () => unknown, options?: { durability?: string }) => {
          steps.push(`write ${options?.durability ?? 'immediate'}`);
          return sqlite.transaction(body, options as never);
        },
      },
      whenDurable: {
        value: async () => {
          steps.push('wait');
          await sqlite.whenDurable();
          steps.push('durable');
        },
      },
    }) as typeof sqlite;
    const runtime = createSessionRuntime({
      store,
      model: scriptedModel([{ toolCalls: [{ name: 'look', input: {} }] }, { text: 'seen' }]),
      tools: () => [
        defineTool({
          name: 'look',
          description: 'Notes when it runs.',
          inputSchema: z.object({}),
          async execute() {
            steps.push('tool runs');
            return { text: 'looked', isError: false, value: undefined };
          },
        }),
      ],
    });
    try {
      const session = runtime.createSession({ id: 's1' });
      steps.length = 0;
      await expect(session.send('look')).resolves.toMatchObject({ reason: 'completed', text: 'seen' });
      const turn = steps;
      // The reply with the tool call, then its results, then the final reply: each a deferred write, on disk
      // before what follows it.
      const reply = turn.indexOf('tool runs');
      expect(turn.slice(0, reply).filter((step) => step.startsWith('wait') || step === 'durable')).toEqual([
        'wait',
        'durable',
      ]);
      expect(turn.lastIndexOf('write deferred', reply)).toBeLessThan(turn.indexOf('durable'));
      expect(turn.filter((step) => step === 'durable')).toHaveLength(3);
      expect(turn.at(-1)).toBe('durable');
    } finally {
      await runtime.dispose();
      sqlite.close();
      rmSync(home, { recursive: true, force: true });
    }
  });
});
