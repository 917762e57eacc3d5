/** A real HTTP endpoint that answers OpenAI chat-completion requests from a script. */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A streamed reply: chunk objects sent as `data:` events, each after the promise before it (if any). */
export type StreamStep = Record<string, unknown> | Promise<void>;

export type FakeReply = (
  body: Record<string, unknown>,
  request: IncomingMessage,
) => { status?: number; body: unknown } | { status?: number; stream: readonly StreamStep[] };

export interface FakeEndpoint {
  readonly url: string;
  readonly bodies: Record<string, unknown>[];
  readonly auth: string[];
  close(): Promise<void>;
}

export async function fakeOpenAiEndpoint(replies: FakeReply[]): Promise<FakeEndpoint> {
  const bodies: Record<string, unknown>[] = [];
  const auth: string[] = [];
  const server: Server = createServer((request, response) => {
    let raw = '';
    request.on('data', (chunk: Buffer) => {
      raw += chunk.toString();
    });
    request.on('end', () => {
      const body = JSON.parse(raw) as Record<string, unknown>;
      bodies.push(body);
      auth.push(request.headers.authorization ?? '');
      const reply = replies.shift()?.(body, request) ?? { status: 500, body: { error: 'no reply scripted' } };
      if ('stream' in reply) {
        void writeStream(response, reply.status ?? 200, reply.stream);
        return;
      }
      response.writeHead(reply.status ?? 200, { 'content-type': 'application/json' });
      response.end(JSON.stringify(reply.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    bodies,
    auth,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function writeStream(
  response: ServerResponse,
  status: number,
  steps: readonly StreamStep[],
): Promise<void> {
  response.writeHead(status, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
  for (const step of steps) {
    if (step instanceof Promise) await step;
    else response.write(`data: ${JSON.stringify(step)}\n\n`);
  }
  response.end('data: [DONE]\n\n');
}

/**
 * The chunks of a streamed completion: the text in `pieces` (a promise between pieces holds the rest
 * back until it settles), then the tool calls, each split in two argument pieces, then the finish reason.
 */
export function streamedCompletion(
  pieces: ReadonlyArray<string | Promise<void>>,
  options: {
    toolCalls?: ReadonlyArray<{ id: string; name: string; arguments: string }>;
    finish?: string;
  } = {},
): StreamStep[] {
  const steps: StreamStep[] = [{ choices: [{ index: 0, delta: { role: 'assistant' } }] }];
  for (const piece of pieces) {
    steps.push(typeof piece === 'string' ? { choices: [{ index: 0, delta: { content: piece } }] } : piece);
  }
  (options.toolCalls ?? []).forEach((call, index) => {
    const half = Math.floor(call.arguments.length / 2);
    steps.push({
      choices: [
        {
          index: 0,
          delta: {
            tool_calls: [
              {
                index,
                id: call.id,
                type: 'function',
                function: { name: call.name, arguments: call.arguments.slice(0, half) },
              },
            ],
          },
        },
      ],
    });
    steps.push({
      choices: [
        { index: 0, delta: { tool_calls: [{ index, function: { arguments: call.arguments.slice(half) } }] } },
      ],
    });
  });
  steps.push({
    choices: [
      {
        index: 0,
        delta: {},
        finish_reason: options.finish ?? (options.toolCalls?.length ? 'tool_calls' : 'stop'),
      },
    ],
  });
  return steps;
}

/** One chat completion with the given assistant message. */
export function completion(message: Record<string, unknown>, finish: string) {
  return {
    body: {
      choices: [{ message: { role: 'assistant', ...message }, finish_reason: finish }],
      usage: { prompt_tokens: 12, completion_tokens: 3 },
    },
  };
}

/** The text of the last message a request carried. */
export function lastMessageText(body: Record<string, unknown>): string {
  const messages = body.messages as Array<{ content?: unknown }>;
  const content = messages.at(-1)?.content;
  return typeof content === 'string' ? content : '';
}
