import type { LanguageModelV4CallOptions, LanguageModelV4GenerateResult } from '@ai-sdk/provider';
import { MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { capturingLogger } from '../../../test/support/registry.js';
import { createSessionRuntime } from '../../session/index.js';
import { createMemorySessionStore } from '../../store/index.js';
import { defineTool } from '../../tools/index.js';
import { createAiSdkModel } from './ai-sdk-model.js';

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

describe('AI SDK model port', () => {
  it('runs a session turn on a LanguageModel: the session executes the tool calls', async () => {
    const calls: LanguageModelV4CallOptions[] = [];
    const model = new MockLanguageModelV4({
      doGenerate: async (options): Promise<LanguageModelV4GenerateResult> => {
        calls.push(options);
        if (calls.length === 1) {
          return {
            content: [
              {
                type: 'tool-call',
                toolCallId: 'c1',
                toolName: 'shout',
                input: JSON.stringify({ word: 'hi' }),
              },
            ],
            finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
            usage,
            warnings: [],
          };
        }
        return {
          content: [{ type: 'text', text: 'done' }],
          finishReason: { unified: 'stop', raw: 'stop' },
          usage,
          warnings: [],
        };
      },
    });
    const runtime = createSessionRuntime({
      store: createMemorySessionStore(),
      model: createAiSdkModel(model),
      logger: capturingLogger(),
      tools: () => [
        defineTool({
          name: 'shout',
          description: 'Upper-cases a word.',
          inputSchema: z.object({ word: z.string() }),
          execute: async ({ word }) => ({ text: word.toUpperCase(), isError: false }),
        }),
      ],
    });
    const session = runtime.createSession({ id: 's1' });
    expect((await session.send('shout hi')).text).toBe('done');
    const second = JSON.stringify(calls[1]?.prompt);
    expect(second).toContain('"toolCallId":"c1"');
    expect(second).toContain('HI');
    await runtime.dispose();
  });
});
