import { describe, expect, it } from 'vitest';
import { createTaskService } from '../registry/index.js';
import { createMemorySessionStore } from '../store/index.js';
import { scriptedModel, scriptedTask } from '../testing/index.js';
import { createSessionRuntime, type SessionRuntimeOptions } from './session-runtime.js';

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
    ['wakeBudget', { notifications: { wakeBudget: -1 } }],
    ['lanes.bash', { notifications: { lanes: { bash: 'loud' as never } } }],
  ])('rejects a bad %s when the runtime is created, naming it', (field, options) => {
    expect(() =>
      createSessionRuntime({ store: createMemorySessionStore(), model: scriptedModel(), ...options }),
    ).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', context: expect.objectContaining({ field }) }),
    );
  });

  it('a bad notification option fails before the runtime attaches to the service or writes a session', async () => {
    const store = createMemorySessionStore();
    const tasks = createTaskService();
    expect(() =>
      createSessionRuntime({
        store,
        tasks,
        model: scriptedModel(),
        notifications: { maxNotificationBytes: 0 },
      }),
    ).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(store.listSessions()).toEqual([]);
    await expect(tasks.start(scriptedTask().spec)).rejects.toMatchObject({ code: 'NO_CONTROLLER' });
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
    const tasks = createTaskService();
    const create = () => createSessionRuntime({ store, tasks, model: scriptedModel(), ...options });
    expect(create).toThrow(
      expect.objectContaining({ code: 'UNKNOWN_OPTION', context: expect.objectContaining({ field }) }),
    );
    expect(create).toThrow(`Unknown option \`${field}\` for createSessionRuntime`);
    expect(create).toThrow(hint);
    await expect(tasks.start(scriptedTask().spec)).rejects.toMatchObject({ code: 'NO_CONTROLLER' });
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
