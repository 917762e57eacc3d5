/**
 * The real client against the real producer: the AI SDK's generateText, driven by its mock model, runs
 * a background bash command through the adapter, keeps working, receives the `<task-notification>`
 * through steering, and reads the output with task_output. The command waits on a FIFO the test opens,
 * so nothing depends on timing.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LanguageModelV4CallOptions, LanguageModelV4GenerateResult } from '@ai-sdk/provider';
import { generateText, isStepCount } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { capturingLogger } from '../../../test/support/registry.js';
import { BashProducer } from '../../producers/bash/bash-producer.js';
import { createBashTool } from '../../producers/bash/bash-tool.js';
import { BashExecutor } from '../../producers/bash/executor.js';
import { createTaskService } from '../../registry/index.js';
import { createOwner, createTrustedCaller } from '../../tasks/index.js';
import { createTaskTools, defineTool } from '../../tools/index.js';
import { createAiSdkNotificationBridge, toAiSdkTools } from './index.js';

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

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('AI SDK adapter with the bash producer', () => {
  it('runs a real background command: start, keep working, notified by steering, collect', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'errand-ai-sdk-'));
    cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
    const fifo = join(directory, 'go');
    await new Promise<void>((resolve, reject) =>
      spawn('mkfifo', [fifo], { stdio: 'ignore' }).on('exit', (code) =>
        code === 0 ? resolve() : reject(new Error(`mkfifo exited ${code}`)),
      ),
    );

    const tasks = createTaskService({ logger: capturingLogger() });
    const taskTools = createTaskTools({ tasks });
    const executor = new BashExecutor({ logger: capturingLogger(), killGraceMs: 300 });
    const producer = new BashProducer({ tasks, executor });
    const bash = createBashTool({ producer });
    const owner = createOwner('chat-1');
    const trusted = createTrustedCaller('test');
    cleanups.push(
      () => tasks.dispose(),
      () => executor.dispose(),
      () => producer.dispose(),
      () => taskTools.dispose(),
    );

    let steered!: () => void;
    const steeredOnce = new Promise<void>((resolve) => (steered = resolve));
    const bridge = createAiSdkNotificationBridge({
      tasks,
      owner,
      logger: capturingLogger(),
      // The tail comes from the producer's non-consuming view, never from the model's read cursor.
      readOutputTail: (snapshot) => producer.snapshot(snapshot.id, trusted)?.text,
      onSteer: () => steered(),
    });
    cleanups.push(() => bridge.dispose());

    const keepWorking = defineTool({
      name: 'keep_working',
      description: 'Does unrelated work.',
      inputSchema: z.object({}),
      async execute() {
        // Unblocks the background command, then goes on until its notification has been steered in.
        await writeFile(fifo, 'go\n');
        await steeredOnce;
        return { text: 'Refactored the parser.', isError: false };
      },
    });
    const tools = toAiSdkTools([bash, keepWorking, ...taskTools.tools], { caller: owner });

    const seen: string[] = [];
    const model = new MockLanguageModelV4({
      doGenerate: async (options) => {
        const prompt = promptText(options);
        seen.push(prompt);
        switch (seen.length) {
          case 1:
            return toolCall('call_bash', 'bash', {
              command: `echo started; read -r word < '${fifo}'; echo "finished on $word"`,
              description: 'wait for the go signal',
              run_in_background: true,
            });
          case 2:
            return toolCall('call_work', 'keep_working', {});
          case 3:
            return toolCall('call_read', 'task_output', { task_id: /<task-id>([^<]+)</.exec(prompt)?.[1] });
          default:
            return {
              content: [{ type: 'text', text: 'It finished.' }],
              finishReason: { unified: 'stop', raw: 'stop' },
              usage,
              warnings: [],
            };
        }
      },
    });

    const result = await generateText({
      model,
      tools,
      prompt: 'Start the waiting command in the background, then refactor the parser.',
      stopWhen: isStepCount(10),
      experimental_steering: bridge.nextSteering(),
    });

    expect(result.text).toBe('It finished.');
    expect(seen[1]).toMatch(/bash-1/);
    const notification = result.steps[2]?.experimental_steeringMessages?.[0]?.content;
    expect(notification).toEqual(expect.stringContaining('<task-id>bash-1</task-id>'));
    expect(notification).toEqual(expect.stringContaining('<tool-use-id>call_bash</tool-use-id>'));
    expect(notification).toEqual(
      expect.stringContaining(
        '<summary>Background command "wait for the go signal" completed (exit code 0)</summary>',
      ),
    );
    expect(notification).toEqual(
      expect.stringContaining('<output-tail>\nstarted\nfinished on go\n</output-tail>'),
    );
    expect(notification).toMatch(/<output-file>[^<]+<\/output-file>/);
    const read = result.steps[2]?.toolResults[0]?.output as { text: string } | undefined;
    expect(read?.text).toBe('started\nfinished on go\n[status: completed (exit code 0)]');
    expect(tasks.get('bash-1', owner).reported).toBe(true);
  });
});
