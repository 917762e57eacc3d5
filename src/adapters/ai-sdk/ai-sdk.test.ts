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
import { createTaskTools, defineTool, type TaskTools } from '../../tools/index.js';
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
  const tools = toAiSdkTools([startJob, keepWorking, ...taskTools.tools], { caller: owner });
  toDispose.push(
    () => taskTools.dispose(),
    () => tasks.dispose(),
  );
  return { tasks, taskTools, jobs, tools, owner };
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
