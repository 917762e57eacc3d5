import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { deferred, nextEvent, notifications, settled } from '../../../test/support/waiting.js';
import { createTaskService } from '../../registry/index.js';
import {
  createSessionRuntime,
  type ModelRequest,
  type Session,
  type SessionEvent,
  type SessionRuntime,
} from '../../session/index.js';
import { createMemorySessionStore, type SessionStore } from '../../store/index.js';
import { ErrandError, type Logger, type TaskService, type TaskSnapshot } from '../../tasks/index.js';
import {
  lastUserText,
  type ScriptedStep,
  type ScriptedTask,
  scriptedModel,
  scriptedTask,
} from '../../testing/index.js';
import {
  type AnyToolDefinition,
  createStopDispatch,
  createTaskTools,
  defineTool,
  executeTool,
  toolResult,
} from '../../tools/index.js';
import { createManualClock } from '../bash/index.js';
import {
  type AgentTool,
  createAgentMessageTool,
  createAgentTool,
  createSubagentProducer,
  type SubagentProducer,
  type SubagentProducerOptions,
} from './index.js';

const quietLogger: Logger & { warnings: string[] } = {
  warnings: [],
  warn(message) {
    this.warnings.push(message);
  },
};

interface Harness {
  readonly store: SessionStore;
  readonly tasks: TaskService;
  readonly runtime: SessionRuntime;
  readonly subagents: SubagentProducer;
  readonly agentTool: AgentTool;
  readonly parentModel: ReturnType<typeof scriptedModel>;
  readonly childModel: ReturnType<typeof scriptedModel>;
  readonly session: Session;
  readonly taskTools: ReturnType<typeof createTaskTools>;
}

const opened: Harness[] = [];

afterEach(async () => {
  for (const harness of opened.splice(0)) {
    await harness.subagents.dispose();
    await harness.runtime.dispose();
    harness.taskTools.dispose();
    await harness.tasks.dispose();
  }
});

function harness(
  parentSteps: ScriptedStep[],
  childSteps: ScriptedStep[],
  options: {
    readonly producer?: Partial<SubagentProducerOptions>;
    readonly tool?: Omit<Parameters<typeof createAgentTool>[0], 'producer'>;
    readonly limits?: Parameters<typeof createSessionRuntime>[0]['limits'];
    readonly extraTools?: (session: Session) => AnyToolDefinition[];
  } = {},
): Harness {
  const store = createMemorySessionStore();
  const tasks = createTaskService({ logger: quietLogger });
  const parentModel = scriptedModel(parentSteps);
  const childModel = scriptedModel(childSteps);
  let runtime: SessionRuntime | undefined;
  // The parent's task tools serve the parent runtime's sessions, not the children.
  const taskTools = createTaskTools({
    tasks,
    controllerScope: { serves: (owner) => runtime?.getSession(owner.sessionId)?.owner === owner },
  });
  const subagents = createSubagentProducer({
    tasks,
    store,
    model: childModel,
    logger: quietLogger,
    policyOf: (id) => runtime?.policyOf(id),
    ...options.producer,
  });
  subagents.registerStopStrategy(taskTools.stop);
  const agentTool = createAgentTool({ producer: subagents, ...options.tool });
  const messageTool = createAgentMessageTool({ producer: subagents });
  runtime = createSessionRuntime({
    store,
    tasks,
    model: parentModel,
    logger: quietLogger,
    ...(options.limits ? { limits: options.limits } : {}),
    tools: (session) => [
      agentTool,
      messageTool,
      ...taskTools.tools,
      ...(options.extraTools?.(session) ?? []),
    ],
  });
  const session = runtime.createSession({ id: 'parent' });
  const created: Harness = {
    store,
    tasks,
    runtime,
    subagents,
    agentTool,
    parentModel,
    childModel,
    session,
    taskTools,
  };
  opened.push(created);
  return created;
}

function toolNames(request: ModelRequest): string[] {
  return request.tools.map((tool) => tool.name);
}

describe('background subagent, end to end', () => {
  it('launches, lets the parent keep working, notifies once with result and usage; task_output returns the result', async () => {
    const childGate = deferred();
    const h = harness(
      [
        {
          toolCalls: [
            {
              name: 'agent',
              input: {
                prompt: 'Count the modules in the repo',
                description: 'count modules',
                run_in_background: true,
              },
            },
          ],
        },
        { text: 'The subagent is counting; meanwhile I answer other things.' },
        (request) => ({ text: `still here: ${lastUserText(request)}` }),
        (request) => ({ text: `noted: ${lastUserText(request).includes('<task-id>agent-1</task-id>')}` }),
      ],
      [
        { toolCalls: [{ name: 'task_list' }], usage: { inputTokens: 40, outputTokens: 5 } },
        async () => {
          await childGate.promise;
          return { text: 'There are 3 modules.', usage: { inputTokens: 70, outputTokens: 5 } };
        },
      ],
    );
    const first = await h.session.send('count the modules');
    expect(first.text).toBe('The subagent is counting; meanwhile I answer other things.');
    const [task] = h.tasks.list(h.session.owner);
    expect(task).toMatchObject({ id: 'agent-1', kind: 'agent', status: 'running', isBackgrounded: true });
    const toolResult = h.session.messages().find((message) => message.role === 'tool');
    expect(JSON.stringify(toolResult?.content)).toContain('Started subagent agent-1 in the background');

    // The parent keeps working while the child runs.
    const second = await h.session.send('what time is it?');
    expect(second.text).toBe('still here: what time is it?');
    expect(h.tasks.get('agent-1', h.session.owner).status).toBe('running');

    const woke = nextEvent(h.session, (event) => event.type === 'turn-end' && event.turnId === 3);
    childGate.resolve();
    await woke;
    await h.session.whenIdle();

    const delivered = notifications(h.session);
    expect(delivered).toHaveLength(1);
    expect(delivered[0]).toContain('<task-id>agent-1</task-id>');
    expect(delivered[0]).toContain('<status>completed</status>');
    expect(delivered[0]).toContain('Agent "count modules" completed');
    expect(delivered[0]).toContain('There are 3 modules.');
    expect(delivered[0]).toContain('total_tokens: 120');
    expect(delivered[0]).toContain('tool_uses: 1');
    expect(delivered[0]).toMatch(/duration_ms: \d+/);
    expect(h.parentModel.requests.at(-1)?.messages.at(-1)).toMatchObject({ role: 'user', modelOnly: true });

    const output = await executeTool(
      h.taskTools.taskOutput,
      { task_id: 'agent-1' },
      { caller: h.session.owner, toolCallId: 'call_read', signal: new AbortController().signal },
    );
    expect(output.text).toBe('There are 3 modules.\n[status: completed]');

    // The child's history stays in the child session, never in the parent's.
    const [child] = h.store.listSessions({ parentId: 'parent' });
    expect(child?.state).toBe('closed');
    const childMessages = h.store.listMessages(child!.id);
    expect(childMessages.map((message) => message.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(childMessages[0]?.content.text).toBe('Count the modules in the repo');
    const parentText = JSON.stringify(h.session.messages());
    expect(parentText).not.toContain('task_list');
    expect(h.tasks.get('agent-1', h.session.owner).detail).toMatchObject({
      childSessionId: child!.id,
      usage: { totalTokens: 120, toolUses: 1 },
      reason: 'completed',
    });
  });
});

describe('cancel', () => {
  it('before the child publishes: no child session, killed at once', async () => {
    const modelGate = deferred<ReturnType<typeof scriptedModel>>();
    const h = harness([], [], { producer: { model: () => modelGate.promise } });
    const started = await h.subagents.start({
      prompt: 'do it',
      description: 'early',
      owner: h.session.owner,
    });
    const ended = settled(h.tasks, started.taskId);
    await h.tasks.kill(started.taskId, h.session.owner, 'changed my mind', { initiator: 'user' });
    const snapshot = await ended;
    expect(snapshot).toMatchObject({ status: 'killed', stopInitiator: 'user' });
    expect(snapshot.detail).toMatchObject({ reason: 'cancelled', childSessionId: null });
    // The model arriving late starts nothing.
    const late = scriptedModel([{ text: 'too late' }]);
    modelGate.resolve(late);
    await (await started.result).usage;
    expect(late.requests).toHaveLength(0);
    expect(h.store.listSessions({ parentId: 'parent' })).toEqual([]);
  });

  it('after the child publishes: the child turn is interrupted, its session closed, the task killed', async () => {
    const requested = deferred();
    const h = harness(
      [],
      [
        async () => {
          requested.resolve();
          return new Promise(() => {});
        },
      ],
    );
    const started = await h.subagents.start({
      prompt: 'long work',
      description: 'long',
      owner: h.session.owner,
    });
    await requested.promise;
    const childId = h.subagents.childSessionOf(started.taskId)!;
    expect(h.store.getSession(childId)?.state).toBe('active');
    const ended = settled(h.tasks, started.taskId);
    await h.tasks.kill(started.taskId, h.session.owner, 'enough');
    const snapshot = await ended;
    expect(snapshot.status).toBe('killed');
    expect(snapshot.detail).toMatchObject({ reason: 'cancelled', childSessionId: childId });
    // done settled only after the child's release.
    expect(h.store.getSession(childId)?.state).toBe('closed');
    expect(h.subagents.childRuntime.getSession(childId)).toBeUndefined();
  });
});

describe('the reason of a stop', () => {
  it.each([
    ['the given reason', { reason: 'the user changed the plan' }, 'the user changed the plan'],
    ['the documented default', {}, 'the subagent was cancelled'],
  ])(
    "task_kill with %s: the child's run signal carries it and the final record says it",
    async (_, input, expected) => {
      const seen: unknown[] = [];
      const hanging = deferred();
      const h = harness([], [{ toolCalls: [{ name: 'hang', input: {} }] }], {
        producer: {
          tools: () => [
            defineTool({
              name: 'hang',
              description: 'Waits until the call is interrupted.',
              inputSchema: z.object({}),
              execute: (__, context) =>
                new Promise((resolve) => {
                  hanging.resolve();
                  context.signal.addEventListener('abort', () => {
                    seen.push(context.signal.reason);
                    resolve(toolResult('interrupted'));
                  });
                }),
            }),
          ],
        },
      });
      const started = await h.subagents.start({ prompt: 'p', description: 'd', owner: h.session.owner });
      await hanging.promise;
      const ended = settled(h.tasks, started.taskId);
      const killed = await executeTool(
        h.taskTools.taskKill,
        { task_id: started.taskId, ...input },
        { caller: h.session.owner, toolCallId: 'call_kill', signal: new AbortController().signal },
      );
      expect(killed.isError).toBe(false);
      const snapshot = await ended;
      expect(seen).toHaveLength(1);
      expect((seen[0] as Error).message).toBe(expected);
      expect(snapshot).toMatchObject({
        status: 'killed',
        detail: { reason: 'cancelled', stopReason: expected },
      });
      expect(h.store.getTask(started.taskId, 'parent')?.detail).toMatchObject({ stopReason: expected });
    },
  );
});

describe('messages', () => {
  it('a message to a running child is delivered as user input at its next turn boundary', async () => {
    const firstRequest = deferred();
    const firstReply = deferred();
    const h = harness(
      [],
      [
        async () => {
          firstRequest.resolve();
          await firstReply.promise;
          return { text: 'first answer' };
        },
        (request) => ({ text: `also handled: ${lastUserText(request)}` }),
      ],
    );
    const started = await h.subagents.start({
      prompt: 'task one',
      description: 'messages',
      owner: h.session.owner,
    });
    await firstRequest.promise;
    const sent = await executeTool(
      createAgentMessageTool({ producer: h.subagents }),
      { task_id: started.taskId, message: 'and check the tests too' },
      { caller: h.session.owner, toolCallId: 'call_msg', signal: new AbortController().signal },
    );
    expect(sent).toMatchObject({ isError: false, value: { taskId: 'agent-1', delivery: 'forwarded' } });
    firstReply.resolve();
    const result = await started.result;
    expect(result).toMatchObject({ status: 'completed', text: 'also handled: and check the tests too' });
    // The message was not injected mid-request: the first request did not see it.
    expect(lastUserText(h.childModel.requests[0]!)).toBe('task one');
    const childMessages = h.store.listMessages(result.childSessionId!);
    expect(
      childMessages.filter((message) => message.role === 'user').map((message) => message.content.text),
    ).toEqual(['task one', 'and check the tests too']);
    expect(
      childMessages.find((message) => message.content.text === 'and check the tests too')?.visibility,
    ).toBe('all');
  });

  it('a message that arrives before the child publishes waits for it', async () => {
    const modelGate = deferred<ReturnType<typeof scriptedModel>>();
    const child = scriptedModel([{ text: 'one' }, (request) => ({ text: `two: ${lastUserText(request)}` })]);
    const h = harness([], [], { producer: { model: () => modelGate.promise } });
    const started = await h.subagents.start({
      prompt: 'p',
      description: 'early message',
      owner: h.session.owner,
    });
    h.tasks.sendMessage(started.taskId, 'early note', h.session.owner);
    modelGate.resolve(child);
    expect(await started.result).toMatchObject({ status: 'completed', text: 'two: early note' });
  });

  it('a finished continuable subagent resumes under the same task id with its history; a new notification follows', async () => {
    const h = harness(
      [{ text: 'ok' }, { text: 'ok again' }, { text: 'ok thrice' }],
      [
        { text: 'first result' },
        (request) => ({ text: `follow-up seen with ${request.messages.length} messages` }),
      ],
    );
    const firstWake = nextEvent(h.session, (event) => event.type === 'turn-end');
    const started = await h.subagents.start({
      prompt: 'first',
      description: 'resumable',
      owner: h.session.owner,
    });
    await firstWake;
    expect(notifications(h.session)).toHaveLength(1);
    const send = await executeTool(
      createAgentMessageTool({ producer: h.subagents }),
      { task_id: started.taskId, message: 'one more thing' },
      { caller: h.session.owner, toolCallId: 'call_msg', signal: new AbortController().signal },
    );
    expect(send.text).toContain('resumed');
    const resumed = h.tasks.get(started.taskId, h.session.owner);
    expect(resumed).toMatchObject({ id: 'agent-1', status: 'running', attempt: 2, reported: false });
    const result = await h.subagents
      .resume(started.taskId, 'x', { caller: h.session.owner })
      .catch((error) => error);
    expect(ErrandError.hasCode(result, 'SUBAGENT_NOT_CONTINUABLE')).toBe(true);
    const secondWake = nextEvent(h.session, (event) => event.type === 'turn-end');
    const snapshot = await settled(h.tasks, started.taskId);
    expect(snapshot).toMatchObject({ status: 'completed', resultText: 'follow-up seen with 3 messages' });
    await secondWake;
    const delivered = notifications(h.session);
    expect(delivered).toHaveLength(2);
    expect(delivered[1]).toContain('follow-up seen with 3 messages');
    expect(h.store.listSessions({ parentId: 'parent' })).toHaveLength(1);
  });

  it('a profile that is not continuable refuses to resume', async () => {
    const h = harness([], [{ text: 'done' }], {
      producer: { profiles: [{ name: 'oneshot', continuable: false }] },
    });
    const started = await h.subagents.start({ prompt: 'p', profile: 'oneshot', owner: h.session.owner });
    await started.result;
    await expect(
      h.subagents.resume(started.taskId, 'again', { caller: h.session.owner }),
    ).rejects.toMatchObject({
      code: 'SUBAGENT_NOT_CONTINUABLE',
    });
  });
});

describe('foreground subagents', () => {
  it('returns the final text to the call, with no notification', async () => {
    const h = harness(
      [
        { toolCalls: [{ name: 'agent', input: { prompt: 'answer', description: 'fg' } }] },
        (request) => ({ text: `parent saw: ${JSON.stringify(request.messages.at(-1))}` }),
      ],
      [{ text: 'forty-two' }],
    );
    const outcome = await h.session.send('ask it');
    expect(outcome.text).toContain('forty-two');
    expect(outcome.text).toContain('[status: completed]');
    await h.session.whenIdle();
    expect(notifications(h.session)).toEqual([]);
    expect(h.tasks.get('agent-1', h.session.owner)).toMatchObject({ isBackgrounded: false, reported: true });
  });

  it('moves to the background on request and then no longer follows the parent turn', async () => {
    const requested = deferred();
    const release = deferred();
    const h = harness(
      [
        { toolCalls: [{ name: 'agent', input: { prompt: 'slow', description: 'slow one' } }] },
        () => new Promise(() => {}),
      ],
      [
        async () => {
          requested.resolve();
          await release.promise;
          return { text: 'slow result' };
        },
      ],
    );
    const turn = h.session.send('go');
    await requested.promise;
    expect(h.agentTool.foregroundCalls()).toHaveLength(1);
    const toolEnd = nextEvent(h.session, (event) => event.type === 'tool-call-end');
    expect(h.agentTool.promote('agent-1')).toMatchObject({ isBackgrounded: true });
    const end = (await toolEnd) as Extract<SessionEvent, { type: 'tool-call-end' }>;
    expect(end.text).toContain('moved to the background by the user');
    // Interrupting the parent turn now leaves the backgrounded child running.
    await new Promise((resolve) => setImmediate(resolve));
    h.session.interrupt();
    await turn;
    expect(h.tasks.get('agent-1', h.session.owner).status).toBe('running');
    const ended = settled(h.tasks, 'agent-1');
    const notified = nextEvent(h.session, (event) => event.type === 'notification-queued');
    release.resolve();
    expect(await ended).toMatchObject({ status: 'completed', resultText: 'slow result' });
    // Backgrounded, its end is reported by a notification, not by the (long finished) tool call.
    expect(await notified).toMatchObject({ taskId: 'agent-1' });
  });

  it('moves to the background after autoBackgroundMs (a manual clock)', async () => {
    const clock = createManualClock(1_000);
    const requested = deferred();
    const h = harness(
      [
        { toolCalls: [{ name: 'agent', input: { prompt: 'slow', description: 'auto' } }] },
        { text: 'continuing' },
      ],
      [
        async () => {
          requested.resolve();
          return new Promise(() => {});
        },
      ],
      { tool: { autoBackgroundMs: 5_000, clock } },
    );
    const turn = h.session.send('go');
    await requested.promise;
    clock.advance(4_999);
    expect(h.tasks.get('agent-1', h.session.owner).isBackgrounded).toBe(false);
    clock.advance(1);
    expect(await turn).toMatchObject({ text: 'continuing' });
    const toolMessage = h.session.messages().find((message) => message.role === 'tool');
    expect(JSON.stringify(toolMessage?.content)).toContain('still running after 5000 ms');
    expect(h.tasks.get('agent-1', h.session.owner)).toMatchObject({
      status: 'running',
      isBackgrounded: true,
    });
  });

  it('a foreground child follows the parent turn: interrupting the turn stops it', async () => {
    const requested = deferred();
    const h = harness(
      [{ toolCalls: [{ name: 'agent', input: { prompt: 'p', description: 'follows' } }] }],
      [
        async () => {
          requested.resolve();
          return new Promise(() => {});
        },
      ],
    );
    const turn = h.session.send('go');
    await requested.promise;
    const ended = settled(h.tasks, 'agent-1');
    h.session.interrupt();
    expect(await turn).toMatchObject({ reason: 'interrupted' });
    expect(await ended).toMatchObject({ status: 'killed', stopInitiator: 'user' });
  });
});

it('a foreground call aborted while its subagent registers stops the subagent too', async () => {
  const store = createMemorySessionStore();
  const tasks = createTaskService({ logger: quietLogger });
  const registering = deferred();
  const proceed = deferred();
  // A task service whose registration takes a while (a durable or remote provider does I/O there).
  const slowTasks = new Proxy(tasks, {
    get(target, property) {
      if (property === 'start') {
        return async (spec: Parameters<TaskService['start']>[0]) => {
          registering.resolve();
          await proceed.promise;
          return target.start(spec);
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  const childAnswers = deferred();
  const subagents = createSubagentProducer({
    tasks: slowTasks,
    store,
    model: scriptedModel([
      async () => {
        await childAnswers.promise;
        return { text: 'ran to its end' };
      },
    ]),
    logger: quietLogger,
  });
  const runtime = createSessionRuntime({ store, tasks, model: scriptedModel([]), logger: quietLogger });
  try {
    const session = runtime.createSession({ id: 'parent' });
    const controller = new AbortController();
    const call = executeTool(
      createAgentTool({ producer: subagents }),
      { prompt: 'p', description: 'aborted early' },
      { caller: session.owner, toolCallId: 'call_early', signal: controller.signal },
    );
    await registering.promise;
    controller.abort(new Error('the turn was interrupted'));
    proceed.resolve();
    const ended = await new Promise<TaskSnapshot>((resolve) => {
      tasks.onTaskDone((snapshot) => resolve(snapshot));
      setTimeout(() => childAnswers.resolve(), 50);
    });
    expect(ended).toMatchObject({ id: 'agent-1', status: 'killed', stopInitiator: 'user' });
    expect(await call).toMatchObject({ isError: true, value: { status: 'killed' } });
  } finally {
    childAnswers.resolve();
    await subagents.dispose();
    await runtime.dispose();
    await tasks.dispose();
  }
});

describe('who can collect a background subagent', () => {
  it('a parent session without task tools cannot start one: NO_CONTROLLER before any child session exists', async () => {
    const store = createMemorySessionStore();
    const tasks = createTaskService({ logger: quietLogger });
    const childModel = scriptedModel([{ text: 'never asked' }]);
    // The children get task tools (the default): they serve the children, not the parent.
    const subagents = createSubagentProducer({ tasks, store, model: childModel, logger: quietLogger });
    const agentTool = createAgentTool({ producer: subagents });
    const runtime = createSessionRuntime({
      store,
      tasks,
      model: scriptedModel([]),
      logger: quietLogger,
      tools: () => [agentTool],
    });
    try {
      const session = runtime.createSession({ id: 'parent' });
      const result = await executeTool(
        agentTool,
        { prompt: 'p', description: 'nobody collects it', run_in_background: true },
        { caller: session.owner, toolCallId: 'call_1', signal: new AbortController().signal },
      );
      expect(result.isError).toBe(true);
      expect(result.text).toContain('NO_CONTROLLER');
      expect(result.text).toContain('"parent"');
      await expect(subagents.start({ owner: session.owner, prompt: 'p' })).rejects.toMatchObject({
        code: 'NO_CONTROLLER',
      });
      expect(store.listSessions().map((record) => record.id)).toEqual(['parent']);
      expect(childModel.requests).toHaveLength(0);
      expect(tasks.list(session.owner)).toEqual([]);
    } finally {
      await subagents.dispose();
      await runtime.dispose();
      await tasks.dispose();
    }
  });

  it.each([
    [true, 'started scripted-1'],
    [false, 'NO_CONTROLLER'],
  ])(
    "a child's background work is served by the children's task tools (taskTools: %s)",
    async (taskTools, answer) => {
      const started: ScriptedTask[] = [];
      const h = harness(
        [{ toolCalls: [{ name: 'agent', input: { prompt: 'p', description: 'd' } }] }, { text: 'done' }],
        [{ toolCalls: [{ name: 'start_task', input: {} }] }, { text: 'child done' }],
        {
          producer: {
            taskTools,
            tools: () => [
              defineTool({
                name: 'start_task',
                description: 'Starts background work owned by the calling session.',
                inputSchema: z.object({}),
                async execute(_, context) {
                  const task = scriptedTask({ owner: context.caller! });
                  started.push(task);
                  const snapshot = await h.tasks.start(task.spec);
                  return toolResult(`started ${snapshot.id}`);
                },
              }),
            ],
          },
        },
      );
      await h.session.send('go');
      const [child] = h.store.listSessions({ parentId: 'parent' });
      const childTool = h.store.listMessages(child!.id).find((message) => message.role === 'tool');
      expect(JSON.stringify(childTool?.content)).toContain(answer);
      expect(started.map((task) => task.runCalls)).toEqual([taskTools ? 1 : 0]);
      for (const task of started) if (task.runCalls > 0) task.settle();
    },
  );
});

describe('the agent tool', () => {
  it('omits run_in_background when disabled and rejects a forced one with a clear error', async () => {
    const h = harness([], [], { tool: { enableRunInBackground: false } });
    expect(Object.keys((h.agentTool.jsonSchema.properties ?? {}) as object)).toEqual([
      'prompt',
      'description',
    ]);
    const result = await executeTool(
      h.agentTool,
      { prompt: 'p', description: 'd', run_in_background: true },
      { caller: h.session.owner, toolCallId: 'call_1', signal: new AbortController().signal },
    );
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/^Error \[RUN_IN_BACKGROUND_DISABLED\]: /);
    expect(result.text).toContain('call it again without `run_in_background`');
    expect(h.tasks.list(h.session.owner)).toEqual([]);
  });

  it('runs a profile with its system prompt, model and tool allowlist', async () => {
    const reviewer = scriptedModel([{ text: 'looks good' }]);
    const h = harness([], [], {
      producer: {
        profiles: [
          {
            name: 'reviewer',
            description: 'reviews diffs',
            systemPrompt: 'You review code.',
            model: reviewer,
            tools: ['task_list'],
          },
        ],
      },
    });
    expect(h.agentTool.description).toContain('- reviewer: reviews diffs');
    const started = await h.subagents.start({
      prompt: 'review',
      profile: 'reviewer',
      owner: h.session.owner,
    });
    expect(await started.result).toMatchObject({ status: 'completed', text: 'looks good' });
    expect(reviewer.requests[0]?.system).toBe('You review code.');
    expect(toolNames(reviewer.requests[0]!)).toEqual(['task_list']);
    expect(h.childModel.requests).toHaveLength(0);
    await expect(
      h.subagents.start({ prompt: 'x', profile: 'nobody', owner: h.session.owner }),
    ).rejects.toMatchObject({
      code: 'AGENT_PROFILE_NOT_FOUND',
      context: { field: 'profile', value: 'nobody' },
    });
  });

  it('refuses to nest deeper than maxDepth', async () => {
    let nested: string | undefined;
    const h = harness([], [], {
      producer: {
        tools: () => [h.agentTool],
        model: scriptedModel([
          { toolCalls: [{ name: 'agent', input: { prompt: 'deeper', description: 'grandchild' } }] },
          (request) => {
            const last = request.messages.at(-1);
            nested = last?.role === 'tool' ? last.results[0]?.output : undefined;
            return { text: 'done' };
          },
        ]),
      },
    });
    const started = await h.subagents.start({ prompt: 'p', description: 'child', owner: h.session.owner });
    expect(await started.result).toMatchObject({ status: 'completed' });
    expect(nested).toContain('SUBAGENT_DEPTH_EXCEEDED');
  });

  it('a failing child model fails the task with the error', async () => {
    const h = harness([], [], {
      producer: {
        model: {
          name: 'broken',
          generate: () => Promise.reject(new Error('model endpoint unreachable')),
        },
      },
    });
    const started = await h.subagents.start({ prompt: 'p', description: 'broken', owner: h.session.owner });
    const ended = settled(h.tasks, started.taskId);
    expect(await ended).toMatchObject({
      status: 'failed',
      error: 'model endpoint unreachable',
      detail: { reason: 'error' },
    });
  });
});

describe('stopping a subagent through the stop dispatch', () => {
  it("a person's stop notifies the parent that the user stopped it", async () => {
    const requested = deferred();
    const h = harness(
      [(request) => ({ text: `seen: ${lastUserText(request).includes('stopped by the user')}` })],
      [
        async () => {
          requested.resolve();
          return new Promise(() => {});
        },
      ],
    );
    const started = await h.subagents.start({
      prompt: 'p',
      description: 'stoppable',
      owner: h.session.owner,
    });
    await requested.promise;
    const woke = nextEvent(h.session, (event) => event.type === 'turn-end');
    const result = await h.taskTools.stop.stopBackgroundTask(started.taskId, {
      initiator: 'user',
      caller: h.session.owner,
    });
    expect(result).toMatchObject({
      ok: true,
      snapshot: { status: 'killed', stopInitiator: 'user', reported: true },
    });
    expect(await woke).toMatchObject({ text: 'seen: true' });
    const [text] = notifications(h.session);
    expect(text).toContain('<status>stopped</status>');
    expect(text).toContain('Agent "stoppable" was stopped by the user');
  });

  it('a stop notification that cannot be queued returns the claim and reports STOP_NOTIFICATION_FAILED', async () => {
    const requested = deferred();
    const h = harness(
      [],
      [
        async () => {
          requested.resolve();
          return new Promise(() => {});
        },
      ],
      { limits: { maxQueuedCommands: 1 } },
    );
    const started = await h.subagents.start({ prompt: 'p', description: 'unlucky', owner: h.session.owner });
    await requested.promise;
    // The parent's queue is full: a held drain keeps one queued input in it.
    const release = h.session.holdIdleDrain();
    const queued = h.session.send('queued input');
    const error = await h.taskTools.stop
      .stopBackgroundTask(started.taskId, { initiator: 'user', caller: h.session.owner })
      .catch((caught: unknown) => caught);
    expect(ErrandError.hasCode(error, 'STOP_NOTIFICATION_FAILED')).toBe(true);
    expect((error as ErrandError).fault).toBe('system');
    // The subagent did stop; its delivery claim was returned, so the result is still collectible.
    expect(h.tasks.get(started.taskId, h.session.owner)).toMatchObject({ status: 'killed', reported: false });
    const read = await h.tasks.read(started.taskId, h.session.owner);
    expect(read.snapshot.reported).toBe(true);
    release();
    await queued;
  });

  it("a person's stop while the model waits on the subagent tells the model once (the wait answers it)", async () => {
    const requested = deferred();
    const h = harness(
      [],
      [
        async () => {
          requested.resolve();
          return new Promise(() => {});
        },
      ],
    );
    const started = await h.subagents.start({ prompt: 'p', description: 'watched', owner: h.session.owner });
    await requested.promise;
    // The model is blocked in task_output with wait: true when the person presses Stop.
    const modelWait = h.tasks.wait(started.taskId, 60_000, h.session.owner);
    const result = await h.taskTools.stop.stopBackgroundTask(started.taskId, {
      initiator: 'user',
      caller: h.session.owner,
    });
    expect(result).toMatchObject({ ok: true, snapshot: { status: 'killed' } });
    expect(await modelWait).toMatchObject({ status: 'killed', stopInitiator: 'user' });
    await h.session.whenIdle();
    // The model's wait received the end: no notification may tell it a second time.
    expect(notifications(h.session)).toEqual([]);
    expect(h.store.listLedger(h.session.id).filter((entry) => entry.kind === 'notification')).toEqual([]);
    expect(h.tasks.get(started.taskId, h.session.owner).reported).toBe(true);
  });

  it('a stop by the model takes the default path (task_kill reports it)', async () => {
    const requested = deferred();
    const h = harness(
      [],
      [
        async () => {
          requested.resolve();
          return new Promise(() => {});
        },
      ],
    );
    const started = await h.subagents.start({ prompt: 'p', owner: h.session.owner });
    await requested.promise;
    const killed = await executeTool(
      h.taskTools.taskKill,
      { task_id: started.taskId },
      { caller: h.session.owner, toolCallId: 'call_kill', signal: new AbortController().signal },
    );
    expect(killed.text).toContain('Stopped task agent-1.');
    expect(killed.text).toContain('[status: killed');
    await h.session.whenIdle();
    expect(notifications(h.session)).toEqual([]);
  });

  it('a dispatch without the strategy still stops it (the default path)', async () => {
    const requested = deferred();
    const h = harness(
      [],
      [
        async () => {
          requested.resolve();
          return new Promise(() => {});
        },
      ],
    );
    const plain = createStopDispatch({ tasks: h.tasks });
    const started = await h.subagents.start({ prompt: 'p', owner: h.session.owner });
    await requested.promise;
    const result = await plain.stopBackgroundTask(started.taskId, {
      initiator: 'system',
      caller: h.session.owner,
    });
    expect(result).toMatchObject({ ok: true, snapshot: { status: 'stopping', stopInitiator: 'system' } });
    expect(await started.result).toMatchObject({ status: 'killed', reason: 'cancelled' });
  });
});

describe('tool schemas', () => {
  it('agent and agent_message', () => {
    const h = harness([], [], {
      producer: { profiles: [{ name: 'reviewer', description: 'reviews diffs' }] },
    });
    const message = createAgentMessageTool({ producer: h.subagents });
    expect({ name: h.agentTool.name, schema: h.agentTool.jsonSchema }).toMatchSnapshot();
    expect({ name: message.name, schema: message.jsonSchema }).toMatchSnapshot();
  });
});
