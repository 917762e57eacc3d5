/** A real HTTP endpoint that answers OpenAI chat-completion requests from a script. */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type FakeReply = (
  body: Record<string, unknown>,
  request: IncomingMessage,
) => { status?: number; body: unknown };

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
