/**
 * The AI SDK's own OpenTelemetry spans (`@ai-sdk/otel`) joined by Errand's, with the SDK's in-memory
 * exporter: the SDK runs the bash tool inside its `execute_tool bash` span, the task started there is that
 * span's child (the adapter adds no second `execute_tool`), and the steered notification's delivery is a
 * span in the harness's turn, linked to the task's span. The command waits on a FIFO the test opens.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OpenTelemetry } from '@ai-sdk/otel';
import type { LanguageModelV4GenerateResult } from '@ai-sdk/provider';
import { generateText, isStepCount } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { capturingLogger } from '../../../test/support/registry.js';
import { parentSpanId, startTestTracing } from '../../../test/support/tracing.js';
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

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('AI SDK adapter tracing', () => {
  it("joins the SDK's execute_tool span and links the steered delivery to the task span", async () => {
    const telemetry = startTestTracing();
    cleanups.push(() => telemetry.close());
    const tracing = telemetry.tracing;
    const directory = mkdtempSync(join(tmpdir(), 'errand-ai-sdk-trace-'));
    cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
    const fifo = join(directory, 'go');
    await new Promise<void>((resolve, reject) =>
      spawn('mkfifo', [fifo], { stdio: 'ignore' }).on('exit', (code) =>
        code === 0 ? resolve() : reject(new Error(`mkfifo exited ${code}`)),
      ),
    );
    const tasks = createTaskService({ logger: capturingLogger(), tracing });
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
      tracing,
      logger: capturingLogger(),
      readOutputTail: (snapshot) => producer.snapshot(snapshot.id, trusted)?.text,
      onSteer: () => steered(),
    });
    cleanups.push(() => bridge.dispose());
    const keepWorking = defineTool({
      name: 'keep_working',
      description: 'Does unrelated work.',
      inputSchema: z.object({}),
      async execute() {
        await writeFile(fifo, 'go\n');
        await steeredOnce;
        return { text: 'Refactored the parser.', isError: false };
      },
    });
    const tools = toAiSdkTools([bash, keepWorking, ...taskTools.tools], { caller: owner, tracing });
    let calls = 0;
    const model = new MockLanguageModelV4({
      doGenerate: async () => {
        calls += 1;
        if (calls === 1) {
          return toolCall('call_bash', 'bash', {
            command: `read -r word < '${fifo}'; echo "finished on $word"`,
            run_in_background: true,
          });
        }
        if (calls === 2) return toolCall('call_work', 'keep_working', {});
        return {
          content: [{ type: 'text', text: 'Done.' }],
          finishReason: { unified: 'stop', raw: 'stop' },
          usage,
          warnings: [],
        };
      },
    });
    // The harness's own span around the generation: where the steered delivery belongs.
    const turn = tracing.startSpan('harness turn');
    const result = await tracing.withSpan(turn, () =>
      generateText({
        model,
        tools,
        prompt: 'Start the waiting command in the background, then refactor the parser.',
        stopWhen: isStepCount(10),
        experimental_steering: bridge.nextSteering(),
        telemetry: { integrations: [new OpenTelemetry({ tracer: telemetry.provider.getTracer('ai-sdk') })] },
      }),
    );
    turn.end();
    expect(result.text).toBe('Done.');
    await tasks.wait('bash-1', 10_000, trusted);

    // One execute_tool span per call, the SDK's: Errand joined it instead of adding its own.
    const sdkTool = telemetry.only('execute_tool bash');
    expect(sdkTool.instrumentationScope.name).toBe('ai-sdk');
    const taskSpan = telemetry.only('task bash');
    expect(parentSpanId(taskSpan)).toBe(sdkTool.spanContext().spanId);
    expect(taskSpan.spanContext().traceId).toBe(sdkTool.spanContext().traceId);
    expect(taskSpan.attributes).toMatchObject({ 'errand.task.status': 'completed', 'process.exit.code': 0 });
    const delivery = telemetry.only('deliver_notifications');
    expect(parentSpanId(delivery)).toBe(turn.traceparent?.split('-')[2]);
    expect(delivery.attributes).toMatchObject({ 'errand.notification.source': 'ai_sdk_steering' });
    expect(delivery.links.map((link) => link.context.spanId)).toEqual([taskSpan.spanContext().spanId]);
  });
});
