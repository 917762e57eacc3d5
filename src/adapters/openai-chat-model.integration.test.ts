import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  completion,
  type FakeEndpoint,
  type FakeReply,
  fakeOpenAiEndpoint,
} from '../../test/support/fake-openai.js';
import { capturingLogger } from '../../test/support/registry.js';
import { createSessionRuntime } from '../session/index.js';
import { createMemorySessionStore } from '../store/index.js';
import { defineTool } from '../tools/index.js';
import { createOpenAiChatModel, openAiChatModelFromEnvironment } from './openai-chat-model.js';

let endpoint: FakeEndpoint | undefined;

afterEach(async () => {
  await endpoint?.close();
  endpoint = undefined;
});

async function fakeEndpoint(replies: FakeReply[]): Promise<FakeEndpoint> {
  endpoint = await fakeOpenAiEndpoint(replies);
  return endpoint;
}

describe('OpenAI-compatible model port', () => {
  it('drives a session turn: tool call, tool result, final answer', async () => {
    const endpoint = await fakeEndpoint([
      () =>
        completion(
          {
            content: null,
            tool_calls: [
              { id: 'call_a', type: 'function', function: { name: 'add', arguments: '{"a":2,"b":3}' } },
            ],
          },
          'tool_calls',
        ),
      () => completion({ content: 'The sum is 5.' }, 'stop'),
    ]);
    const runtime = createSessionRuntime({
      store: createMemorySessionStore(),
      model: createOpenAiChatModel({ baseUrl: endpoint.url, model: 'test-model', apiKey: 'secret' }),
      systemPrompt: 'Be brief.',
      logger: capturingLogger(),
      tools: () => [
        defineTool({
          name: 'add',
          description: 'Adds two numbers.',
          inputSchema: z.object({ a: z.number(), b: z.number() }),
          execute: async ({ a, b }) => ({ text: String(a + b), isError: false }),
        }),
      ],
    });
    const session = runtime.createSession({ id: 's1' });
    const outcome = await session.send('what is 2 + 3?');
    expect(outcome.text).toBe('The sum is 5.');
    expect(endpoint.auth).toEqual(['Bearer secret', 'Bearer secret']);
    expect(endpoint.bodies[0]).toMatchObject({
      model: 'test-model',
      messages: [
        { role: 'system', content: expect.stringContaining('Be brief.') },
        { role: 'user', content: 'what is 2 + 3?' },
      ],
      tools: [{ type: 'function', function: { name: 'add', parameters: { type: 'object' } } }],
    });
    expect(endpoint.bodies[1]?.messages).toEqual([
      expect.objectContaining({ role: 'system' }),
      { role: 'user', content: 'what is 2 + 3?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'add', arguments: '{"a":2,"b":3}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_a', content: '5' },
    ]);
    await runtime.dispose();
  });

  it('reports an error answer with its status and body', async () => {
    const endpoint = await fakeEndpoint([
      () => ({ status: 429, body: { error: { message: 'rate limited' } } }),
    ]);
    const model = createOpenAiChatModel({ baseUrl: endpoint.url, model: 'm' });
    await expect(
      model.generate(
        { system: undefined, messages: [], tools: [], continuation: false },
        new AbortController().signal,
      ),
    ).rejects.toMatchObject({ code: 'MODEL_REQUEST_FAILED', message: expect.stringContaining('429') });
  });

  it('validates options and reads the environment', () => {
    expect(() => createOpenAiChatModel({ baseUrl: 'ftp://x', model: 'm' })).toThrow(/`baseUrl`/);
    expect(openAiChatModelFromEnvironment({})).toBeUndefined();
    expect(
      openAiChatModelFromEnvironment({ ERRAND_MODEL: 'gpt-x', ERRAND_BASE_URL: 'http://127.0.0.1:1/v1' })
        ?.name,
    ).toBe('openai:gpt-x');
  });
});
