/**
 * A real client: the AI SDK's own generateText loop, driven by its mock model, works with a background
 * task through the adapter — start it, keep working, receive the notification through steering, and
 * read the result with task_output.
 */
import type { LanguageModelV4CallOptions, LanguageModelV4GenerateResult } from '@ai-sdk/provider';
import { generateText, isStepCount } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { capturingLogger, flushMicrotasks, serviceForTest } from '../../../test/support/registry.js';
import { createOwner, type TaskService } from '../../tasks/index.js';
import { type ScriptedTask, scriptedTask } from '../../testing/index.js';
import { type AnyToolDefinition, createTaskTools, defineTool, type TaskTools } from '../../tools/index.js';
import { createAiSdkNotificationBridge, toAiSdkTool, toAiSdkTools } from './index.js';

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

function toolCall(toolCallId: string, toolName: string, input: unknown): LanguageModelV4GenerateResult {
  return {
    content: [{ type: 'tool-call', toolCallId, toolName, input: JSON.stringify(input) }],
    finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
    usage,
    warnings: [],
  };
}

function answer(text: string): LanguageModelV4GenerateResult {
  return {
    content: [{ type: 'text', text }],
    finishReason: { unified: 'stop', raw: 'stop' },
    usage,
    warnings: [],
  };
}

/** Every text the model was shown: user messages and tool results. */
function promptText(options: LanguageModelV4CallOptions): string {
  const texts: string[] = [];
  for (const message of options.prompt) {
    if (message.role === 'system') continue;
    for (const part of message.content) {
      if (part.type === 'text') texts.push(part.text);
      if (part.type === 'tool-result' && (part.output.type === 'text' || part.output.type === 'error-text')) {
        texts.push(part.output.value);
      }
    }
  }
  return texts.join('\n');
}

const toDispose: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const dispose of toDispose.splice(0).reverse()) await dispose();
});

/** A background tool over scripted tasks, and a foreground tool during which the task ends. */
function world(): {
  tasks: TaskService;
  taskTools: TaskTools;
  jobs: ScriptedTask[];
  tools: ReturnType<typeof toAiSdkTools>;
  definitions: readonly AnyToolDefinition[];
  owner: ReturnType<typeof createOwner>;
} {
  const { tasks } = serviceForTest();
  const taskTools = createTaskTools({ tasks });
  const owner = createOwner('chat-1');
  const jobs: ScriptedTask[] = [];
  const startJob = defineTool({
    name: 'start_job',
    description: 'Starts a job in the background.',
    inputSchema: z.object({ description: z.string() }),
    async execute(input, context) {
      const job = scriptedTask({
        kind: 'bash',
        label: input.description,
        ...(context.caller ? { owner: context.caller } : {}),
        spec: { detail: { toolUseId: context.toolCallId, description: input.description } },
      });
      jobs.push(job);
      const { id } = await tasks.start(job.spec);
      return {
        text: `Started ${id} in the background.`,
        isError: false,
        value: { kind: 'background', taskId: id },
      };
    },
  });
  const keepWorking = defineTool({
    name: 'keep_working',
    description: 'Does unrelated work.',
    inputSchema: z.object({}),
    async execute() {
      // The background job finishes while the model does something else.
      const job = jobs[0];
      job?.push('3 passed\n');
      job?.settle({ status: 'completed', detail: { exitCode: 0, outputTail: '3 passed' } });
      await flushMicrotasks();
      return { text: 'Refactored the parser.', isError: false };
    },
  });
  const definitions = [startJob, keepWorking, ...taskTools.tools];
  const tools = toAiSdkTools(definitions, { caller: owner });
  toDispose.push(
    () => taskTools.dispose(),
    () => tasks.dispose(),
  );
  return { tasks, taskTools, jobs, tools, definitions, owner };
}

describe('AI SDK adapter', () => {
  it('drives a background task through generateText: start, keep working, notified by steering, collect', async () => {
    const { tasks, tools, owner } = world();
    const bridge = createAiSdkNotificationBridge({ tasks, owner, logger: capturingLogger(), now: () => 7 });
    toDispose.push(() => bridge.dispose());
    const seen: string[] = [];
    const model = new MockLanguageModelV4({
      doGenerate: async (options) => {
        const prompt = promptText(options);
        seen.push(prompt);
        switch (seen.length) {
          case 1:
            return toolCall('call_start', 'start_job', { description: 'npm test' });
          case 2:
            expect(prompt).toContain('Started bash-1 in the background.');
            return toolCall('call_work', 'keep_working', {});
          case 3: {
            const id = /<task-id>([^<]+)<\/task-id>/.exec(prompt)?.[1];
            return toolCall('call_read', 'task_output', { task_id: id });
          }
          default:
            return answer('The tests pass.');
        }
      },
    });

    const result = await generateText({
      model,
      tools,
      prompt: 'Run the tests in the background and refactor the parser meanwhile.',
      stopWhen: isStepCount(10),
      experimental_steering: bridge.nextSteering(),
    });

    expect(result.text).toBe('The tests pass.');
    expect(result.steps).toHaveLength(4);
    // The notification arrived as a user message at the step boundary after keep_working.
    expect(result.steps[2]?.experimental_steeringMessages).toEqual([
      {
        role: 'user',
        content: [
          '<task-notification>',
          '<task-id>bash-1</task-id>',
          '<tool-use-id>call_start</tool-use-id>',
          '<status>completed</status>',
          '<summary>Background command "npm test" completed (exit code 0)</summary>',
          '<exit-code>0</exit-code>',
          '<output-tail>',
          '3 passed',
          '</output-tail>',
          '<collect>Read it with task_output (task_id "bash-1").</collect>',
          '</task-notification>',
        ].join('\n'),
      },
    ]);
    expect(seen[2]).toContain('<task-notification>');
    // The model read the output with task_output.
    const read = result.steps[2]?.toolResults[0];
    expect(read?.toolName).toBe('task_output');
    expect((read?.output as { text: string } | undefined)?.text).toBe(
      '3 passed\n[status: completed (exit code 0)]',
    );
    expect(seen[3]).toContain('3 passed\n[status: completed (exit code 0)]');
    expect(tasks.get('bash-1', owner).reported).toBe(true);
    expect(bridge.pending).toEqual([]);
  });

  it('holds a notification that arrives between generations, asks to wake, and delivers it with the next one', async () => {
    const { tasks, owner, jobs, tools } = world();
    const woken: string[] = [];
    const bridge = createAiSdkNotificationBridge({
      tasks,
      owner,
      logger: capturingLogger(),
      onWakeup: (notification) => woken.push(notification.taskId),
    });
    toDispose.push(() => bridge.dispose());
    await tools.start_job?.execute?.(
      { description: 'build' },
      { toolCallId: 'call_1', messages: [], context: {} },
    );
    jobs[0]?.settle({ status: 'failed', detail: { exitCode: 2 } });
    await flushMicrotasks();
    expect(woken).toEqual(['bash-1']);
    expect(bridge.pending.map((notification) => notification.taskId)).toEqual(['bash-1']);

    const model = new MockLanguageModelV4({ doGenerate: answer('Noted: the build failed.') });
    const result = await generateText({ model, prompt: 'hi', experimental_steering: bridge.nextSteering() });
    expect(result.text).toBe('Noted: the build failed.');
    expect(promptText(model.doGenerateCalls[0] as LanguageModelV4CallOptions)).toContain(
      '<summary>Background command "build" failed with exit code 2</summary>',
    );
    expect(bridge.pending).toEqual([]);
  });

  it('keeps a notification the run ended before delivering, and returns its claim on dispose', async () => {
    const { tasks, owner, jobs, tools } = world();
    const bridge = createAiSdkNotificationBridge({
      tasks,
      owner,
      logger: capturingLogger(),
      lanes: { bash: 'quiet' },
    });
    const steering = bridge.nextSteering();
    await generateText({
      model: new MockLanguageModelV4({ doGenerate: answer('done') }),
      prompt: 'x',
      experimental_steering: steering,
    });
    await tools.start_job?.execute?.(
      { description: 'lint' },
      { toolCallId: 'call_1', messages: [], context: {} },
    );
    jobs[0]?.settle();
    await flushMicrotasks();
    expect(bridge.pending).toHaveLength(1);
    expect(tasks.get('bash-1', owner).reported).toBe(true);
    bridge.dispose();
    expect(tasks.get('bash-1', owner).reported).toBe(false);
  });

  it("returns on dispose only the claim of the attempt it holds, never a resumed attempt's", async () => {
    const { tasks, owner } = world();
    const bridge = createAiSdkNotificationBridge({
      tasks,
      owner,
      logger: capturingLogger(),
      lanes: { bash: 'quiet' },
    });
    const first = scriptedTask({ kind: 'bash', label: 'lint', owner });
    const { id } = await tasks.start(first.spec);
    first.settle();
    await flushMicrotasks();
    // Attempt 1's notification waits for a generation, holding its claim.
    expect(bridge.pending.map((notification) => notification.attempt)).toEqual([1]);
    // The task is re-registered under its id; a waiter receives attempt 2's end and so takes its claim.
    const second = scriptedTask({ kind: 'bash', label: 'lint', owner, spec: { resumeId: id } });
    await tasks.start(second.spec);
    const waited = tasks.wait(id, 60_000, owner);
    second.settle();
    expect(await waited).toMatchObject({ attempt: 2, reported: true });
    await flushMicrotasks();
    bridge.dispose();
    // Attempt 1's claim is not attempt 2's to return: the waiter already reported that end.
    expect(tasks.get(id, owner)).toMatchObject({ attempt: 2, reported: true });
  });

  describe('an end the model read with a tool call is not told again', () => {
    it('drops the waiting notification once task_output shows the end: the next generation carries none', async () => {
      const { tasks, owner, definitions } = world();
      const bridge = createAiSdkNotificationBridge({
        tasks,
        owner,
        logger: capturingLogger(),
        lanes: { bash: 'quiet' },
      });
      toDispose.push(() => bridge.dispose());
      const tools = toAiSdkTools(definitions, { caller: owner, notifications: bridge });
      const held: number[] = [];
      const first = new MockLanguageModelV4({
        doGenerate: async () => {
          switch (first.doGenerateCalls.length) {
            case 1:
              return toolCall('call_start', 'start_job', { description: 'npm test' });
            case 2:
              return toolCall('call_work', 'keep_working', {});
            case 3:
              // The quiet notification waits in the bridge for the next generation.
              held.push(bridge.pending.length);
              return toolCall('call_read', 'task_output', { task_id: 'bash-1' });
            default:
              return answer('The tests pass.');
          }
        },
      });
      const run = await generateText({
        model: first,
        tools,
        prompt: 'Run the tests in the background and refactor the parser meanwhile.',
        stopWhen: isStepCount(10),
        experimental_steering: bridge.nextSteering(),
      });
      expect(run.text).toBe('The tests pass.');
      expect(held).toEqual([1]);
      expect((run.steps[2]?.toolResults[0]?.output as { text: string } | undefined)?.text).toBe(
        '3 passed\n[status: completed (exit code 0)]',
      );
      expect(bridge.pending).toEqual([]);

      const second = new MockLanguageModelV4({ doGenerate: answer('Anything else?') });
      const next = await generateText({
        model: second,
        prompt: 'What now?',
        experimental_steering: bridge.nextSteering(),
      });
      expect(next.steps[0]?.experimental_steeringMessages).toBeUndefined();
      expect(promptText(second.doGenerateCalls[0] as LanguageModelV4CallOptions)).not.toContain(
        '<task-notification>',
      );
    });

    it('takes a steered notification out at the step boundary with prepareStep when the step read the end', async () => {
      const { tasks, owner, jobs, definitions } = world();
      const bridge = createAiSdkNotificationBridge({ tasks, owner, logger: capturingLogger() });
      toDispose.push(() => bridge.dispose());
      const tools = toAiSdkTools(definitions, { caller: owner, notifications: bridge });
      const steered: string[] = [];
      const model = new MockLanguageModelV4({
        doGenerate: async () => {
          switch (model.doGenerateCalls.length) {
            case 1:
              return toolCall('call_start', 'start_job', { description: 'npm test' });
            case 2:
              // The job ends while the model thinks: its notification is steered into this generation.
              jobs[0]?.push('3 passed\n');
              jobs[0]?.settle({ status: 'completed', detail: { exitCode: 0, outputTail: '3 passed' } });
              await flushMicrotasks();
              steered.push(...bridge.pending.map((notification) => notification.taskId));
              return toolCall('call_read', 'task_output', { task_id: 'bash-1' });
            default:
              return answer('The tests pass.');
          }
        },
      });
      const run = await generateText({
        model,
        tools,
        prompt: 'Run the tests in the background.',
        stopWhen: isStepCount(10),
        experimental_steering: bridge.nextSteering(),
        prepareStep: bridge.prepareStep,
      });
      expect(run.text).toBe('The tests pass.');
      // Not waiting in the bridge: handed to the running generation's steering.
      expect(steered).toEqual([]);
      const third = promptText(model.doGenerateCalls[2] as LanguageModelV4CallOptions);
      expect(third).toContain('3 passed\n[status: completed (exit code 0)]');
      expect(third).not.toContain('<task-notification>');
      expect(run.steps.map((step) => step.experimental_steeringMessages)).toEqual([
        undefined,
        undefined,
        undefined,
      ]);
      expect(bridge.pending).toEqual([]);
      expect(tasks.get('bash-1', owner).reported).toBe(true);
    });

    it('keeps the claim of the dropped notification taken: no second notification, none returned on dispose', async () => {
      const { tasks, owner, jobs, definitions } = world();
      const bridge = createAiSdkNotificationBridge({
        tasks,
        owner,
        logger: capturingLogger(),
        lanes: { bash: 'quiet' },
      });
      const tools = toAiSdkTools(definitions, { caller: owner, notifications: bridge });
      const execution = { messages: [], context: {} };
      await tools.start_job?.execute?.({ description: 'lint' }, { toolCallId: 'call_1', ...execution });
      jobs[0]?.settle();
      await flushMicrotasks();
      expect(bridge.pending.map((notification) => notification.taskId)).toEqual(['bash-1']);

      const read = await tools.task_output?.execute?.(
        { task_id: 'bash-1' },
        { toolCallId: 'c2', ...execution },
      );
      expect(read).toMatchObject({
        isError: false,
        value: { taskId: 'bash-1', status: 'completed', attempt: 1 },
      });
      expect(bridge.pending).toEqual([]);
      expect(tasks.get('bash-1', owner).reported).toBe(true);
      // The policy asked again (a resume sweep) finds the end reported and tells nobody.
      expect(await bridge.policy.deliver(tasks.get('bash-1', owner))).toEqual({
        delivered: false,
        reason: 'already_claimed',
      });
      expect(bridge.pending).toEqual([]);
      bridge.dispose();
      // The model read the end: its claim is not returned for someone else to report it again.
      expect(tasks.get('bash-1', owner).reported).toBe(true);
    });

    it('drops a notification of the reported attempt that arrives later, and delivers a later attempt', async () => {
      const { tasks, owner } = world();
      const woken: Array<[string, number]> = [];
      // The notifier claims the end at settlement and hands the notification on only after reading the
      // output tail; this one waits until the test lets it go.
      let releaseTail: (tail: string) => void = () => {};
      const tail = new Promise<string>((resolve) => {
        releaseTail = resolve;
      });
      const bridge = createAiSdkNotificationBridge({
        tasks,
        owner,
        logger: capturingLogger(),
        readOutputTail: () => tail,
        onWakeup: (notification) => woken.push([notification.taskId, notification.attempt]),
      });
      toDispose.push(() => bridge.dispose());
      const first = scriptedTask({ kind: 'bash', label: 'build', owner });
      const { id } = await tasks.start(first.spec);
      first.settle();
      await flushMicrotasks();
      // Claimed, still being formatted: the model reads the end in between.
      expect(tasks.get(id, owner)).toMatchObject({ attempt: 1, reported: true });
      expect(bridge.pending).toEqual([]);
      bridge.taskEndTold({ taskId: id, attempt: 1 });
      releaseTail('ok');
      await flushMicrotasks();
      expect(bridge.pending).toEqual([]);
      expect(woken).toEqual([]);
      expect(tasks.get(id, owner).reported).toBe(true);

      // A resumed task is a new attempt: its end is told as usual.
      const second = scriptedTask({ kind: 'bash', label: 'build', owner, spec: { resumeId: id } });
      await tasks.start(second.spec);
      second.settle({ status: 'failed', detail: { exitCode: 1 } });
      await flushMicrotasks();
      expect(bridge.pending.map((notification) => [notification.taskId, notification.attempt])).toEqual([
        [id, 2],
      ]);
      expect(woken).toEqual([[id, 2]]);
    });

    it('drops waiting notifications up to the reported attempt, all of them when no attempt is known', async () => {
      const { tasks, owner } = world();
      const bridge = createAiSdkNotificationBridge({
        tasks,
        owner,
        logger: capturingLogger(),
        lanes: { bash: 'quiet' },
      });
      toDispose.push(() => bridge.dispose());
      const first = scriptedTask({ kind: 'bash', label: 'build', owner });
      const { id } = await tasks.start(first.spec);
      first.settle();
      await flushMicrotasks();
      const second = scriptedTask({ kind: 'bash', label: 'build', owner, spec: { resumeId: id } });
      await tasks.start(second.spec);
      second.settle();
      await flushMicrotasks();
      const other = scriptedTask({ kind: 'bash', label: 'lint', owner });
      const { id: otherId } = await tasks.start(other.spec);
      other.settle();
      await flushMicrotasks();
      const held = () => bridge.pending.map((notification) => [notification.taskId, notification.attempt]);
      expect(held()).toEqual([
        [id, 1],
        [id, 2],
        [otherId, 1],
      ]);

      bridge.taskEndTold({ taskId: id, attempt: 1 });
      expect(held()).toEqual([
        [id, 2],
        [otherId, 1],
      ]);
      bridge.taskEndTold({ taskId: id });
      expect(held()).toEqual([[otherId, 1]]);
    });

    it('remembers the reported ends of the last 256 task ids', async () => {
      const { tasks, owner } = world();
      const bridge = createAiSdkNotificationBridge({ tasks, owner, logger: capturingLogger() });
      toDispose.push(() => bridge.dispose());
      const oldest = scriptedTask({ kind: 'bash', label: 'build', owner });
      const { id: oldestId } = await tasks.start(oldest.spec);
      const kept = scriptedTask({ kind: 'bash', label: 'lint', owner });
      const { id: keptId } = await tasks.start(kept.spec);
      bridge.taskEndTold({ taskId: oldestId, attempt: 1 });
      bridge.taskEndTold({ taskId: keptId, attempt: 1 });
      for (let index = 0; index < 255; index += 1) {
        bridge.taskEndTold({ taskId: `other-${index}`, attempt: 1 });
      }
      // 257 task ids: the oldest was forgotten, so its notification is delivered; the next is still known.
      oldest.settle();
      kept.settle();
      await flushMicrotasks();
      expect(bridge.pending.map((notification) => notification.taskId)).toEqual([oldestId]);
    });

    it('rejects a report without a task id', () => {
      const { tasks, owner } = world();
      const bridge = createAiSdkNotificationBridge({ tasks, owner, logger: capturingLogger() });
      toDispose.push(() => bridge.dispose());
      expect(() => bridge.taskEndTold({ taskId: 7 } as never)).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
      );
      expect(() => bridge.taskEndTold({ taskId: 'bash-1', attempt: 1.5 })).toThrow(
        'Expected `attempt` to be an integer or undefined, got 1.5 (number)',
      );
    });

    it('a call aborted while it ran reports no end: its result does not reach the model', async () => {
      const reported: unknown[] = [];
      const aborted = new AbortController();
      const endReader = defineTool({
        name: 'end_reader',
        description: 'Answers with how a task ended, even when aborted.',
        inputSchema: z.object({}),
        execute: async () => {
          // The generation is aborted while the tool runs (a wait that was interrupted still answers).
          aborted.abort();
          return {
            text: '[status: completed]',
            isError: false,
            value: { taskId: 'bash-1', status: 'completed', attempt: 1 },
            taskEnds: [{ taskId: 'bash-1', attempt: 1 }],
          };
        },
      });
      const tool = toAiSdkTool(endReader, {
        caller: createOwner('s1'),
        notifications: { taskEndTold: (end) => reported.push(end) },
      });
      await tool.execute?.(
        {},
        { toolCallId: 'call_1', messages: [], abortSignal: aborted.signal, context: undefined as never },
      );
      expect(reported).toEqual([]);
      await tool.execute?.({}, { toolCallId: 'call_2', messages: [], context: undefined as never });
      expect(reported).toEqual([{ taskId: 'bash-1', attempt: 1 }]);
    });
  });

  it('holds at most maxPendingNotifications; one more is refused, its claim returned for task_output', async () => {
    const { tasks, owner } = world();
    const logger = capturingLogger();
    const bridge = createAiSdkNotificationBridge({
      tasks,
      owner,
      logger,
      lanes: { bash: 'quiet' },
      maxPendingNotifications: 1,
    });
    toDispose.push(() => bridge.dispose());
    const first = scriptedTask({ kind: 'bash', label: 'build', owner });
    const second = scriptedTask({ kind: 'bash', label: 'lint', owner });
    const { id: firstId } = await tasks.start(first.spec);
    const { id: secondId } = await tasks.start(second.spec);
    first.settle();
    second.settle();
    await flushMicrotasks();
    expect(bridge.pending.map((notification) => notification.taskId)).toEqual([firstId]);
    expect(tasks.get(firstId, owner).reported).toBe(true);
    expect(tasks.get(secondId, owner).reported).toBe(false);
    expect(logger.warnings.map((warning) => warning.message)).toEqual([
      `task ${secondId}: enqueueing its notification failed; the claim was returned`,
    ]);
    expect(() => createAiSdkNotificationBridge({ tasks, owner, logger, maxPendingNotifications: 0 })).toThrow(
      'Expected `maxPendingNotifications` to be a positive integer, got 0 (number)',
    );
  });

  it('answers a failing call as error text the model sees', async () => {
    const { tasks } = serviceForTest();
    const taskTools = createTaskTools({ tasks });
    toDispose.push(() => taskTools.dispose());
    const sdkTool = toAiSdkTool(taskTools.taskKill);
    const output = await sdkTool.execute?.(
      { task_id: 'bash-9' },
      { toolCallId: 'c', messages: [], context: {} },
    );
    expect(output).toMatchObject({ isError: true });
    expect(await sdkTool.toModelOutput?.({ toolCallId: 'c', input: {}, output: output as never })).toEqual({
      type: 'error-text',
      value:
        'Error [TASK_NOT_FOUND]: No task with id "bash-9". Check the id; task_list shows the tasks you can use.',
    });
  });
});
