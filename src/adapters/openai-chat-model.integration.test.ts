import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  completion,
  type FakeEndpoint,
  type FakeReply,
  fakeOpenAiEndpoint,
  streamedCompletion,
} from '../../test/support/fake-openai.js';
import { capturingLogger } from '../../test/support/registry.js';
import { deferred } from '../../test/support/waiting.js';
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

const ask = { system: undefined, messages: [], tools: [], continuation: false } as const;

describe('streamed replies', () => {
  it('hands each piece of text on as it arrives, before the reply is complete', async () => {
    const gate = deferred();
    const endpoint = await fakeEndpoint([
      () => ({ stream: streamedCompletion(['Hel', 'lo', gate.promise, ', world.']) }),
    ]);
    const pieces: string[] = [];
    const firstTwo = deferred();
    const model = createOpenAiChatModel({
      baseUrl: endpoint.url,
      model: 'm',
      onTextDelta: (text) => {
        pieces.push(text);
        if (pieces.length === 2) firstTwo.resolve();
      },
    });
    const reply = model.generate(ask, new AbortController().signal);
    await firstTwo.promise;
    // The endpoint still holds the rest back: what arrived so far was handed on.
    expect(pieces).toEqual(['Hel', 'lo']);
    gate.resolve();
    expect(await reply).toEqual({ text: 'Hello, world.', toolCalls: [], finishReason: 'stop' });
    expect(pieces).toEqual(['Hel', 'lo', ', world.']);
    expect(endpoint.bodies[0]).toMatchObject({ stream: true });
  });

  it('assembles tool calls from their pieces', async () => {
    const endpoint = await fakeEndpoint([
      () => ({
        stream: streamedCompletion(['Checking.'], {
          toolCalls: [
            { id: 'call_1', name: 'bash', arguments: '{"command":"ls -la","run_in_background":true}' },
            { id: 'call_2', name: 'task_list', arguments: '{}' },
          ],
        }),
      }),
    ]);
    const model = createOpenAiChatModel({ baseUrl: endpoint.url, model: 'm', stream: true });
    expect(await model.generate(ask, new AbortController().signal)).toEqual({
      text: 'Checking.',
      toolCalls: [
        { id: 'call_1', name: 'bash', input: { command: 'ls -la', run_in_background: true } },
        { id: 'call_2', name: 'task_list', input: {} },
      ],
      finishReason: 'tool_calls',
    });
  });

  it('reads a plain completion from an endpoint that ignores `stream`, and still shows its text', async () => {
    const endpoint = await fakeEndpoint([() => completion({ content: 'Whole at once.' }, 'stop')]);
    const pieces: string[] = [];
    const model = createOpenAiChatModel({
      baseUrl: endpoint.url,
      model: 'm',
      onTextDelta: (text) => pieces.push(text),
    });
    expect((await model.generate(ask, new AbortController().signal)).text).toBe('Whole at once.');
    expect(pieces).toEqual(['Whole at once.']);
  });

  it('asks again without streaming when the endpoint refuses it, and stops asking once that worked', async () => {
    const refuse = (body: Record<string, unknown>) =>
      body.stream === true
        ? { status: 400, body: { error: { message: 'stream is not supported' } } }
        : completion({ content: 'plain' }, 'stop');
    const endpoint = await fakeEndpoint([refuse, refuse, refuse]);
    const model = createOpenAiChatModel({ baseUrl: endpoint.url, model: 'm', onTextDelta: () => {} });
    expect((await model.generate(ask, new AbortController().signal)).text).toBe('plain');
    expect((await model.generate(ask, new AbortController().signal)).text).toBe('plain');
    expect(endpoint.bodies.map((body) => body.stream ?? false)).toEqual([true, false, false]);
  });

  it('reports a request the endpoint refuses with or without streaming as that failure, and keeps streaming', async () => {
    const broken = () => ({ status: 400, body: { error: { message: 'bad tool schema' } } });
    const endpoint = await fakeEndpoint([broken, broken, () => ({ stream: streamedCompletion(['ok']) })]);
    const model = createOpenAiChatModel({ baseUrl: endpoint.url, model: 'm', onTextDelta: () => {} });
    await expect(model.generate(ask, new AbortController().signal)).rejects.toMatchObject({
      code: 'MODEL_REQUEST_FAILED',
      message: expect.stringContaining('bad tool schema'),
    });
    expect((await model.generate(ask, new AbortController().signal)).text).toBe('ok');
    expect(endpoint.bodies.map((body) => body.stream ?? false)).toEqual([true, false, true]);
  });

  it('reports an error the stream carries, and never streams with `stream: false`', async () => {
    const endpoint = await fakeEndpoint([
      () => ({
        stream: [
          { choices: [{ index: 0, delta: { content: 'par' } }] },
          { error: { message: 'overloaded' } },
        ],
      }),
      () => completion({ content: 'plain' }, 'stop'),
    ]);
    const streaming = createOpenAiChatModel({ baseUrl: endpoint.url, model: 'm', stream: true });
    await expect(streaming.generate(ask, new AbortController().signal)).rejects.toMatchObject({
      code: 'MODEL_REQUEST_FAILED',
      message: expect.stringContaining('overloaded'),
    });
    const pieces: string[] = [];
    const plain = createOpenAiChatModel({
      baseUrl: endpoint.url,
      model: 'm',
      stream: false,
      onTextDelta: (text) => pieces.push(text),
    });
    expect((await plain.generate(ask, new AbortController().signal)).text).toBe('plain');
    expect(endpoint.bodies[1]?.stream).toBeUndefined();
    expect(pieces).toEqual([]);
    expect(() =>
      createOpenAiChatModel({ baseUrl: endpoint.url, model: 'm', stream: 'yes' as never }),
    ).toThrow('`stream`');
  });

  it('turns streaming off with ERRAND_STREAM=0', async () => {
    const endpoint = await fakeEndpoint([() => completion({ content: 'plain' }, 'stop')]);
    const model = openAiChatModelFromEnvironment(
      { ERRAND_MODEL: 'm', ERRAND_BASE_URL: endpoint.url, ERRAND_STREAM: '0' },
      { onTextDelta: () => {} },
    );
    expect((await model!.generate(ask, new AbortController().signal)).text).toBe('plain');
    expect(endpoint.bodies[0]?.stream).toBeUndefined();
  });
});
