/**
 * A scripted model endpoint on 127.0.0.1 for driving real coding-agent clients offline: it speaks the
 * Gemini API (`models/<model>:streamGenerateContent`, `:generateContent`, `:countTokens`, the shape the
 * Gemini CLI calls at `GOOGLE_GEMINI_BASE_URL`) and the OpenAI Responses API over SSE (`POST
 * /v1/responses`, what the Codex CLI calls through a model provider's `base_url`) and the Anthropic Messages
 * API (`POST /v1/messages`, streamed or not, what Claude Code calls at `ANTHROPIC_BASE_URL`). Every request is kept,
 * in order, so a test can assert on what the client sent the model. A script decides each main-turn
 * answer; the clients' side requests (a JSON-schema classification, a title) get a fixed answer.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One call to the model as the script sees it. */
export interface ModelRequest {
  readonly api: 'gemini' | 'responses' | 'anthropic';
  /** The request body, parsed. */
  readonly body: Record<string, unknown>;
  /** The request body as received (for substring assertions across the whole conversation). */
  readonly raw: string;
  /** The names of the tools the client offered. */
  readonly tools: readonly string[];
  /** 1 for the first main-turn request, and so on. */
  readonly turn: number;
}

export type ModelReply =
  | { readonly kind: 'tool'; readonly name: string; readonly args: Record<string, unknown> }
  | { readonly kind: 'text'; readonly text: string };

export type ModelScript = (request: ModelRequest) => ModelReply;

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly raw: string;
  /** Whether the script answered it (a main turn) or it got a fixed answer (a side request). */
  readonly main: boolean;
}

export interface ScriptedModelServer {
  /** `http://127.0.0.1:<port>` */
  readonly origin: string;
  readonly requests: RecordedRequest[];
  /** The main-turn requests, in order. */
  readonly turns: ModelRequest[];
  close(): Promise<void>;
}

export async function startScriptedModelServer(script: ModelScript): Promise<ScriptedModelServer> {
  const requests: RecordedRequest[] = [];
  const turns: ModelRequest[] = [];
  let callCounter = 0;

  const answer = (request: IncomingMessage, response: ServerResponse, raw: string): void => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    const path = url.pathname;
    let body: Record<string, unknown> = {};
    try {
      body = raw === '' ? {} : (JSON.parse(raw) as Record<string, unknown>);
    } catch {
      // Not JSON: recorded as is.
    }
    const record = (main: boolean) => requests.push({ method: request.method ?? '', path, raw, main });

    if (request.method === 'POST' && path.endsWith('/responses')) {
      const tools = responsesToolNames(body);
      const main = tools.length > 0;
      record(main);
      const reply: ModelReply = main
        ? script(remember({ api: 'responses', body, raw, tools, turn: turns.length + 1 }))
        : { kind: 'text', text: 'ok' };
      writeResponsesStream(response, reply, `call_${++callCounter}`);
      return;
    }
    if (request.method === 'POST' && path.endsWith('/messages/count_tokens')) {
      record(false);
      json(response, { input_tokens: 1 });
      return;
    }
    if (request.method === 'POST' && path.endsWith('/messages')) {
      const tools = anthropicToolNames(body);
      const main = tools.length > 0;
      record(main);
      const reply: ModelReply = main
        ? script(remember({ api: 'anthropic', body, raw, tools, turn: turns.length + 1 }))
        : { kind: 'text', text: 'ok' };
      writeAnthropicMessage(
        response,
        reply,
        `toolu_${String(++callCounter).padStart(4, '0')}`,
        body.stream === true,
      );
      return;
    }
    const gemini = /models\/[^/:]+:(streamGenerateContent|generateContent|countTokens)$/.exec(path);
    if (request.method === 'POST' && gemini) {
      if (gemini[1] === 'countTokens') {
        record(false);
        json(response, { totalTokens: 1 });
        return;
      }
      const tools = geminiToolNames(body);
      const schema = geminiResponseSchema(body);
      const main = tools.length > 0 && schema === undefined;
      record(main);
      const reply: ModelReply = main
        ? script(remember({ api: 'gemini', body, raw, tools, turn: turns.length + 1 }))
        : { kind: 'text', text: sideAnswer(schema) };
      const chunk = geminiChunk(reply, raw);
      if (gemini[1] === 'generateContent') json(response, chunk);
      else {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.end(`data: ${JSON.stringify(chunk)}\n\n`);
      }
      return;
    }
    record(false);
    if (request.method === 'GET' && path.endsWith('/models')) {
      json(response, { object: 'list', data: [], models: [] });
      return;
    }
    response.writeHead(404, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ error: { message: `not scripted: ${request.method} ${path}` } }));
  };

  const remember = (request: ModelRequest): ModelRequest => {
    turns.push(request);
    return request;
  };

  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      try {
        answer(request, response, Buffer.concat(chunks).toString('utf8'));
      } catch (error) {
        response.writeHead(500, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: { message: String(error) } }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    turns,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function json(response: ServerResponse, body: unknown): void {
  response.writeHead(200, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

// ---------------------------------------------------------------- OpenAI Responses API

function responsesToolNames(body: Record<string, unknown>): string[] {
  const names: string[] = [];
  const visit = (tools: unknown, prefix: string) => {
    if (!Array.isArray(tools)) return;
    for (const tool of tools as Array<Record<string, unknown>>) {
      if (typeof tool.name === 'string') names.push(`${prefix}${tool.name}`);
      // A namespace groups tools (an MCP server's).
      if (Array.isArray(tool.tools)) visit(tool.tools, typeof tool.name === 'string' ? `${tool.name}.` : '');
    }
  };
  visit(body.tools, '');
  return names;
}

function writeResponsesStream(response: ServerResponse, reply: ModelReply, callId: string): void {
  const id = `resp_${callId}`;
  const item =
    reply.kind === 'tool'
      ? {
          type: 'function_call',
          id: `fc_${callId}`,
          call_id: callId,
          ...splitNamespace(reply.name),
          arguments: JSON.stringify(reply.args),
        }
      : {
          type: 'message',
          role: 'assistant',
          id: `msg_${callId}`,
          content: [{ type: 'output_text', text: reply.text }],
        };
  const events = [
    { type: 'response.created', response: { id } },
    { type: 'response.output_item.done', item },
    {
      type: 'response.completed',
      response: {
        id,
        usage: {
          input_tokens: 10,
          input_tokens_details: null,
          output_tokens: 5,
          output_tokens_details: null,
          total_tokens: 15,
        },
      },
    },
  ];
  response.writeHead(200, { 'content-type': 'text/event-stream' });
  response.end(events.map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`).join(''));
}

/** `namespace.tool` → `{ namespace, name }`; a plain name stays as it is. */
function splitNamespace(name: string): { name: string; namespace?: string } {
  const dot = name.lastIndexOf('.');
  return dot < 0 ? { name } : { namespace: name.slice(0, dot), name: name.slice(dot + 1) };
}

// ---------------------------------------------------------------- Anthropic Messages API

function anthropicToolNames(body: Record<string, unknown>): string[] {
  const tools = body.tools;
  if (!Array.isArray(tools)) return [];
  return (tools as Array<Record<string, unknown>>).flatMap((tool) =>
    typeof tool.name === 'string' ? [tool.name] : [],
  );
}

function writeAnthropicMessage(
  response: ServerResponse,
  reply: ModelReply,
  id: string,
  stream: boolean,
): void {
  const block =
    reply.kind === 'tool'
      ? { type: 'tool_use', id, name: reply.name, input: reply.args }
      : { type: 'text', text: reply.text };
  const stopReason = reply.kind === 'tool' ? 'tool_use' : 'end_turn';
  const usage = {
    input_tokens: 10,
    output_tokens: 5,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
  };
  const message = {
    id: `msg_${id}`,
    type: 'message',
    role: 'assistant',
    model: 'claude-scripted',
    stop_sequence: null,
    usage,
  };
  if (!stream) {
    json(response, { ...message, content: [block], stop_reason: stopReason });
    return;
  }
  const start = reply.kind === 'tool' ? { ...block, input: {} } : { type: 'text', text: '' };
  const delta =
    reply.kind === 'tool'
      ? { type: 'input_json_delta', partial_json: JSON.stringify(reply.args) }
      : { type: 'text_delta', text: reply.text };
  const events = [
    { type: 'message_start', message: { ...message, content: [], stop_reason: null } },
    { type: 'content_block_start', index: 0, content_block: start },
    { type: 'content_block_delta', index: 0, delta },
    { type: 'content_block_stop', index: 0 },
    {
      type: 'message_delta',
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: 5 },
    },
    { type: 'message_stop' },
  ];
  response.writeHead(200, { 'content-type': 'text/event-stream' });
  response.end(events.map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`).join(''));
}

// ---------------------------------------------------------------- Gemini API

function geminiToolNames(body: Record<string, unknown>): string[] {
  const names: string[] = [];
  const tools = (body.tools ?? (body.request as Record<string, unknown> | undefined)?.tools) as unknown;
  if (!Array.isArray(tools)) return names;
  for (const tool of tools as Array<Record<string, unknown>>) {
    const declarations = tool.functionDeclarations;
    if (!Array.isArray(declarations)) continue;
    for (const declaration of declarations as Array<Record<string, unknown>>) {
      if (typeof declaration.name === 'string') names.push(declaration.name);
    }
  }
  return names;
}

function geminiResponseSchema(body: Record<string, unknown>): Record<string, unknown> | undefined {
  const config = (body.generationConfig ?? {}) as Record<string, unknown>;
  const schema = config.responseJsonSchema ?? config.responseSchema;
  if (schema && typeof schema === 'object') return schema as Record<string, unknown>;
  return config.responseMimeType === 'application/json' ? {} : undefined;
}

/** A plausible answer to a side request: every required string property gets a value. */
function sideAnswer(schema: Record<string, unknown> | undefined): string {
  if (schema === undefined) return 'ok';
  const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
  const answer: Record<string, unknown> = {};
  for (const [key, property] of Object.entries(properties)) {
    const choices = property.enum;
    if (Array.isArray(choices) && choices.length > 0) {
      // A "who speaks next" check: the user, so the client does not continue by itself.
      answer[key] = choices.includes('user') ? 'user' : choices[0];
    } else if (property.type === 'boolean') answer[key] = false;
    else if (property.type === 'number' || property.type === 'integer') answer[key] = 0;
    else answer[key] = 'scripted';
  }
  return JSON.stringify(answer);
}

/**
 * The prompt's size is reported as about one token per 4 bytes of the request (a client that compresses
 * its history, as Gemini CLI's `/compress`, compares it with the compressed history's count).
 */
function geminiChunk(reply: ModelReply, raw: string): Record<string, unknown> {
  const promptTokenCount = Math.max(10, Math.ceil(raw.length / 4));
  const part =
    reply.kind === 'tool' ? { functionCall: { name: reply.name, args: reply.args } } : { text: reply.text };
  return {
    candidates: [{ content: { role: 'model', parts: [part] }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount, candidatesTokenCount: 5, totalTokenCount: promptTokenCount + 5 },
    modelVersion: 'scripted',
  };
}
