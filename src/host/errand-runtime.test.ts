import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { capturingLogger } from '../../test/support/registry.js';
import { createMemorySessionStore, openSqliteSessionStore } from '../store/index.js';
import { createTrustedCaller } from '../tasks/index.js';
import { scriptedModel, scriptedTask } from '../testing/index.js';
import { defineTool } from '../tools/index.js';
import { createErrandRuntime, ERRAND_RUNTIME_DEFAULTS, type ErrandRuntimeOptions } from './errand-runtime.js';

const directories: string[] = [];

afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function home(): string {
  const directory = mkdtempSync(join(tmpdir(), 'errand-host-'));
  directories.push(directory);
  return directory;
}

describe('creating the assembled runtime', () => {
  it.each<[string, Partial<ErrandRuntimeOptions>, string]>([
    ['a session limit', { limits: { maxStepsPerTurn: 0 } }, 'limits.maxStepsPerTurn'],
    ['a task-service option', { tasks: { maxLiveTasks: 0 } }, 'tasks.maxLiveTasks'],
    ['an executor option', { bash: { executor: { killGraceMs: -1 } } }, 'bash.executor.killGraceMs'],
    ['a delivery-policy option', { notifications: { wakeBudget: -1 } }, 'notifications.wakeBudget'],
    ['a subagent model', { model: () => scriptedModel() }, 'subagents.model'],
    ['a notification tail read size', { notificationTailReadBytes: 0 }, 'notificationTailReadBytes'],
    ['a bash tool bound', { bash: { tool: { defaultTimeoutMs: 700_000 } } }, 'bash.tool.defaultTimeoutMs'],
    [
      'an executor cross-option rule',
      {
        bash: {
          executor: { spawn: () => undefined as never, launcher: { launch: () => undefined as never } },
        },
      },
      'bash.executor.launcher',
    ],
    ['a pty option', { pty: { maxScreenBytes: 1 } }, 'pty.maxScreenBytes'],
    ['a task tools option', { taskTools: { maxWaitMs: 0 } }, 'taskTools.maxWaitMs'],
    ['a subagent option', { subagents: { maxDepth: 0 } }, 'subagents.maxDepth'],
    ['a subagent profile', { subagents: { profiles: [{ name: 'bad name' }] } }, 'subagents.profiles[0].name'],
    ['a workflow option', { workflows: { cancelGraceMs: -1 } }, 'workflows.cancelGraceMs'],
    ['an event feed option', { events: { ringSize: 0 } }, 'events.ringSize'],
  ])('fails on %s before anything is opened', async (_, options, field) => {
    const directory = home();
    await expect(
      createErrandRuntime({
        model: scriptedModel(),
        home: directory,
        pty: false,
        logger: capturingLogger(),
        ...options,
      }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', context: expect.objectContaining({ field }) });
    // One pass checks every part's options first: the data directory stays empty.
    expect(readdirSync(directory)).toEqual([]);
  });
});

describe('unknown option keys', () => {
  it.each<[string, Record<string, unknown>, string]>([
    ['systemPromt', { systemPromt: 'x' }, '(did you mean `systemPrompt`?)'],
    ['tasks.maxLiveTask', { tasks: { maxLiveTask: 1 } }, '(did you mean `tasks.maxLiveTasks`?)'],
    ['bash.executer', { bash: { executer: {} } }, '(did you mean `bash.executor`?)'],
    [
      'bash.executor.killGrace',
      { bash: { executor: { killGrace: 1 } } },
      'did you mean `bash.executor.killGraceMs`?',
    ],
    ['bash.producer.outputLimitByte', { bash: { producer: { outputLimitByte: 1 } } }, 'outputLimitBytes'],
    // The runtime gives the producer its executor: a caller's one is not an option there.
    ['bash.producer.executor', { bash: { producer: { executor: {} } } }, 'known options:'],
    ['bash.tool.maxTimeout', { bash: { tool: { maxTimeout: 1 } } }, 'bash.tool.maxTimeoutMs'],
    ['pty.maxRuntimeMs', { pty: { maxRuntimeMs: 1000 } }, '(did you mean `pty.runtimeCapMs`?)'],
    ['pty.terminateGraceMs', { pty: { terminateGraceMs: 1000 } }, '(did you mean `pty.killGraceMs`?)'],
    ['pty.tasks', { pty: { tasks: {} } }, 'known options: `pty.shell`'],
    ['taskTools.maxWait', { taskTools: { maxWait: 1 } }, 'taskTools.maxWaitMs'],
    ['subagents.maxDepht', { subagents: { maxDepht: 2 } }, 'subagents.maxDepth'],
    ['subagents.limits.maxSteps', { subagents: { limits: { maxSteps: 2 } } }, 'known options:'],
    ['subagents.profiles[0].prompt', { subagents: { profiles: [{ name: 'p', prompt: 'x' }] } }, 'known'],
    ['workflows.directroy', { workflows: { directroy: '/tmp' } }, 'workflows.directory'],
    ['notifications.wakeBudjet', { notifications: { wakeBudjet: 1 } }, 'notifications.wakeBudget'],
    ['limits.maxStep', { limits: { maxStep: 1 } }, 'known options: `limits.maxStepsPerTurn`'],
    ['events.ringsize', { events: { ringsize: 1 } }, 'events.ringSize'],
    // The runtime's feed reads its own sessions' ledgers.
    ['events.ledger', { events: { ledger: {} } }, 'Unknown option `events.ledger`'],
  ])('rejects %s before opening the store', async (field, options, hint) => {
    const directory = home();
    const creating = createErrandRuntime({
      model: scriptedModel(),
      home: directory,
      logger: capturingLogger(),
      ...options,
    } as ErrandRuntimeOptions);
    await expect(creating).rejects.toMatchObject({
      code: 'UNKNOWN_OPTION',
      fault: 'caller',
      context: expect.objectContaining({ field }),
    });
    await expect(creating).rejects.toThrow(`Unknown option \`${field}\` for createErrandRuntime`);
    await expect(creating).rejects.toThrow(hint);
    expect(readdirSync(directory)).toEqual([]);
  });
});

describe('notificationTailReadBytes', () => {
  it('defaults to 4096 bytes', () => {
    expect(ERRAND_RUNTIME_DEFAULTS.notificationTailReadBytes).toBe(4096);
  });

  it.each([
    [
      9000,
      'Expected `notificationTailReadBytes` to be a positive integer no greater than 8192, got 9000 (number)',
    ],
    [
      1.5,
      'Expected `notificationTailReadBytes` to be a positive integer no greater than 8192, got 1.5 (number)',
    ],
    [
      '4096',
      'Expected `notificationTailReadBytes` to be a positive integer no greater than 8192, got "4096" (string)',
    ],
  ])('refuses %o, naming the field and the value, before opening a store', async (value, message) => {
    const directory = home();
    const creating = createErrandRuntime({
      model: scriptedModel(),
      home: directory,
      pty: false,
      logger: capturingLogger(),
      notificationTailReadBytes: value as never,
    });
    await expect(creating).rejects.toThrow(message);
    await expect(creating).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', fault: 'caller' });
    expect(readdirSync(directory)).toEqual([]);
  });
});

describe('disposing the assembled runtime', () => {
  it('stops a running subagent without waking its parent session for the stop', async () => {
    const parent = scriptedModel([
      {
        toolCalls: [
          {
            name: 'agent',
            input: { prompt: 'Wait for ever.', description: 'wait', run_in_background: true },
          },
        ],
      },
      { text: 'The subagent is waiting.' },
    ]);
    let childAsked = false;
    const runtime = await createErrandRuntime({
      model: parent,
      store: createMemorySessionStore(),
      pty: false,
      logger: capturingLogger(),
      subagents: {
        model: () =>
          scriptedModel([
            () => {
              childAsked = true;
              return new Promise(() => {});
            },
          ]),
      },
    });
    const session = runtime.createSession({ id: 'main' });
    await session.send('start a subagent');
    await vi.waitFor(() => expect(childAsked).toBe(true));
    await runtime.dispose();
    // Disposal is not a background result: the parent's model is not asked about it.
    expect(parent.requests).toHaveLength(2);
    // Nor is the stop admitted as a notification at all: the session was already shutting down.
    expect(runtime.store.listLedger('main').filter((entry) => entry.kind === 'notification')).toEqual([]);
  });
});

describe('commands addressed to the runtime through the store', () => {
  const trustedCaller = createTrustedCaller('test');
  async function runtimeWithWork(options: Partial<ErrandRuntimeOptions> = {}) {
    const store = createMemorySessionStore();
    const runtime = await createErrandRuntime({
      model: scriptedModel(),
      store,
      pty: false,
      logger: capturingLogger(),
      commandPollMs: 3_600_000,
      ...options,
    });
    const session = runtime.createSession();
    const task = scriptedTask({ kind: 'bash', label: 'sleep 30', owner: session.owner, background: true });
    const started = await runtime.tasks.start(task.spec);
    return { store, runtime, session, taskId: started.id };
  }

  it('stops the work as the person on a cancel_background_work and answers acknowledged', async () => {
    const { store, runtime, session, taskId } = await runtimeWithWork();
    try {
      const command = store.submitCommand({
        sessionId: session.id,
        runtime: runtime.sessions.instanceId,
        type: 'cancel_background_work',
        workId: taskId,
      });
      await runtime.pollCommands();
      expect(store.getCommand(command.id)).toMatchObject({ state: 'acknowledged' });
      await vi.waitFor(() => expect(runtime.tasks.get(taskId, trustedCaller).status).toBe('killed'));
      expect(runtime.tasks.get(taskId, trustedCaller).stopInitiator).toBe('user');
      expect(store.getTask(taskId, session.id)).toMatchObject({ status: 'killed', stopInitiator: 'user' });

      const again = store.submitCommand({
        sessionId: session.id,
        runtime: runtime.sessions.instanceId,
        type: 'cancel_background_work',
        workId: taskId,
      });
      const unknown = store.submitCommand({
        sessionId: session.id,
        runtime: runtime.sessions.instanceId,
        type: 'cancel_background_work',
        workId: 'bash-999',
      });
      const elsewhere = store.submitCommand({
        sessionId: session.id,
        runtime: 'another-runtime',
        type: 'cancel_background_work',
        workId: taskId,
      });
      await runtime.pollCommands();
      expect(store.getCommand(again.id)).toMatchObject({ state: 'rejected', reason: 'not_running' });
      expect(store.getCommand(unknown.id)).toMatchObject({ state: 'rejected', reason: 'not_found' });
      expect(store.getCommand(elsewhere.id)).toMatchObject({ state: 'pending' });
    } finally {
      await runtime.dispose();
    }
  });

  it('expires a command older than commandMaxAgeMs instead of running it', async () => {
    const { store, runtime, session, taskId } = await runtimeWithWork({ commandMaxAgeMs: 1 });
    try {
      const now = vi.spyOn(Date, 'now');
      const command = store.submitCommand({
        sessionId: session.id,
        runtime: runtime.sessions.instanceId,
        type: 'cancel_background_work',
        workId: taskId,
      });
      now.mockReturnValue(command.createdAt + 1000);
      await runtime.pollCommands();
      now.mockRestore();
      expect(store.getCommand(command.id)).toMatchObject({ state: 'expired' });
      expect(runtime.tasks.get(taskId, trustedCaller).status).toBe('running');
    } finally {
      await runtime.dispose();
    }
  });

  it('does not poll a memory store unless asked, and validates its options', async () => {
    const store = createMemorySessionStore();
    const runtime = await createErrandRuntime({ model: scriptedModel(), store, pty: false });
    try {
      const session = runtime.createSession();
      const command = store.submitCommand({
        sessionId: session.id,
        runtime: runtime.sessions.instanceId,
        type: 'cancel_background_work',
        workId: 'bash-1',
      });
      await runtime.pollCommands();
      expect(store.getCommand(command.id)?.state).toBe('pending');
    } finally {
      await runtime.dispose();
    }
    for (const [field, value] of [
      ['commandPollMs', 0],
      ['commandPollMs', true],
      ['commandMaxAgeMs', 0],
    ] as const) {
      await expect(
        createErrandRuntime({ model: scriptedModel(), store, pty: false, [field]: value }),
      ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', context: expect.objectContaining({ field }) });
    }
  });

  it('polls by default a store that declares other processes share it', async () => {
    const store = {
      ...createMemorySessionStore(),
      capabilities: { sharedAcrossProcesses: true, persistent: true },
    };
    const runtime = await createErrandRuntime({ model: scriptedModel(), store, pty: false });
    try {
      const session = runtime.createSession();
      const command = store.submitCommand({
        sessionId: session.id,
        runtime: runtime.sessions.instanceId,
        type: 'cancel_background_work',
        workId: 'bash-1',
      });
      await runtime.pollCommands();
      expect(store.getCommand(command.id)).toMatchObject({ state: 'rejected', reason: 'not_found' });
    } finally {
      await runtime.dispose();
    }
  });
});

describe('disposing from inside a session turn', () => {
  it('closes its own store only after that session wrote its end', async () => {
    const home = mkdtempSync(join(tmpdir(), 'errand-host-self-dispose-'));
    try {
      const logger = capturingLogger();
      const runtime = await createErrandRuntime({
        model: scriptedModel([{ toolCalls: [{ name: 'shutdown', input: {} }] }, { text: 'never asked' }]),
        home,
        pty: false,
        logger,
        tools: (_session, assembled) => [
          defineTool({
            name: 'shutdown',
            description: 'Disposes the runtime it runs in.',
            inputSchema: z.object({}),
            async execute() {
              await assembled.dispose();
              return { text: 'disposed', isError: false, value: undefined };
            },
          }),
        ],
      });
      const session = runtime.createSession({ id: 's1' });
      await expect(session.send('stop everything')).resolves.toMatchObject({ reason: 'interrupted' });
      await vi.waitFor(() => expect(session.state).toBe('closed'));
      const store = openSqliteSessionStore({ home });
      try {
        await vi.waitFor(() =>
          expect(store.getSession('s1')).toMatchObject({ state: 'closed', holder: undefined }),
        );
      } finally {
        store.close();
      }
      expect(logger.warnings).toEqual([]);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
