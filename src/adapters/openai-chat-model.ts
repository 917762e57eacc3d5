/**
 * A model port for any OpenAI-compatible chat-completions endpoint (OpenAI, a local server, a gateway),
 * configured by options or by environment for the CLI. Plain `fetch`, no SDK. With `onTextDelta` it asks
 * for a streamed reply (`stream: true`, server-sent chunks) and hands each piece of text on as it arrives;
 * an endpoint that answers with a plain completion instead is read as one, and one that refuses streaming
 * is asked again without it (and, once that worked, never asked to stream again).
 */
import type { ModelMessage, ModelPort, ModelRequest, ModelResponse } from '../session/index.js';
import { ErrandError, MAX_TIMER_DELAY_MS } from '../tasks/index.js';
import { defineOptions, type OptionsInput, option } from '../tasks/options.js';
import { readChatCompletionStream, type StreamedCompletion } from './openai-chat-stream.js';

/** The options of `createOpenAiChatModel`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
const openAiChatModelOptions = defineOptions('createOpenAiChatModel', {
  /** The API root, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8080/v1`. */
  baseUrl: option.required(
    option.custom<string>(
      'an http(s) URL',
      (value) => typeof value === 'string' && /^https?:\/\//.test(value),
    ),
  ),
  model: option.required(option.string()),
  /** Sent as a bearer token when given. */
  apiKey: option.string({ nonEmpty: false }),
  /** The longest a request may take. Default 120000 ms. */
  timeoutMs: option.integer({ min: 1, max: MAX_TIMER_DELAY_MS, default: 120_000 }),
  /** `max_tokens` of each response. Default: the endpoint's. */
  maxTokens: option.integer({ min: 1 }),
  /** `temperature` of each request. Default: the endpoint's. */
  temperature: option.custom<number>(
    'a number',
    (value) => typeof value === 'number' && Number.isFinite(value),
  ),
  /** More request headers (over `Content-Type` and the bearer token). Default none. */
  headers: option.record(option.string({ nonEmpty: false })),
  /** The `fetch` requests go through. Default: the global `fetch`. */
  fetch: option.func<typeof fetch>({ fallback: () => fetch }),
  /**
   * Stream replies: `true` always asks for a stream, `false` never, `'auto'` streams when `onTextDelta` is
   * given. Default `'auto'`.
   */
  stream: option.oneOf([true, false, 'auto'], { default: 'auto' }),
  /** Receives the reply's text piece by piece as it is generated (streaming only). Must not throw. */
  onTextDelta: option.func<(text: string) => void>(),
});

/** Options of `createOpenAiChatModel`. */
export type OpenAiChatModelOptions = OptionsInput<typeof openAiChatModelOptions.rules>;

export class ModelRequestError extends ErrandError {
  constructor(message: string, context: Record<string, unknown>, cause?: unknown) {
    super('MODEL_REQUEST_FAILED', 'system', message, { context, cause });
  }
}

const MAX_ERROR_BODY = 2000;

interface ChatToolCall {
  readonly id: string;
  readonly type: 'function';
  readonly function: { readonly name: string; readonly arguments: string };
}

type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ChatToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

export function toChatMessages(system: string | undefined, messages: readonly ModelMessage[]): ChatMessage[] {
  const chat: ChatMessage[] = system ? [{ role: 'system', content: system }] : [];
  for (const message of messages) {
    switch (message.role) {
      case 'system':
      case 'user':
        chat.push({ role: message.role, content: message.text });
        break;
      case 'assistant':
        chat.push({
          role: 'assistant',
          content: message.text === '' ? null : message.text,
          ...(message.toolCalls.length === 0
            ? {}
            : {
                tool_calls: message.toolCalls.map((call) => ({
                  id: call.id,
                  type: 'function' as const,
                  function: { name: call.name, arguments: JSON.stringify(call.input ?? {}) },
                })),
              }),
        });
        break;
      case 'tool':
        for (const result of message.results) {
          chat.push({ role: 'tool', tool_call_id: result.toolCallId, content: result.output });
        }
        break;
    }
  }
  return chat;
}

function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text === '' ? '{}' : text);
  } catch {
    // Validation of the tool's input reports the problem to the model.
    return text;
  }
}

const FINISH_REASONS: Record<string, ModelResponse['finishReason']> = {
  stop: 'stop',
  tool_calls: 'tool_calls',
  function_call: 'tool_calls',
  length: 'length',
  content_filter: 'content_filter',
};

export function createOpenAiChatModel(input: OpenAiChatModelOptions): ModelPort {
  const options = openAiChatModelOptions.resolve(input);
  const { timeoutMs, fetch: doFetch } = options;
  const mode = options.stream;
  const url = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  /** Set once the endpoint refused a streamed request and took the same one without streaming. */
  let streamRefused = false;

  const post = async (body: Record<string, unknown>, signal: AbortSignal): Promise<Response> => {
    try {
      return await doFetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(body.stream === true ? { accept: 'text/event-stream, application/json' } : {}),
          ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
          ...options.headers,
        },
        body: JSON.stringify(body),
        signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]),
      });
    } catch (error) {
      if (signal.aborted) throw error;
      throw new ModelRequestError(`The model request to ${url} failed`, { url }, error);
    }
  };

  const failure = async (response: Response): Promise<ModelRequestError> => {
    const text = await response.text().catch(() => '');
    return new ModelRequestError(
      `The model endpoint answered ${response.status}: ${text.slice(0, MAX_ERROR_BODY)}`,
      { url, status: response.status },
    );
  };

  return {
    name: `openai:${options.model}`,
    async generate(request: ModelRequest, signal: AbortSignal): Promise<ModelResponse> {
      const body: Record<string, unknown> = {
        model: options.model,
        messages: toChatMessages(request.system, request.messages),
        ...(request.tools.length === 0
          ? {}
          : {
              tools: request.tools.map((tool) => ({
                type: 'function',
                function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
              })),
            }),
        ...(options.maxTokens === undefined ? {} : { max_tokens: options.maxTokens }),
        ...(options.temperature === undefined ? {} : { temperature: options.temperature }),
      };
      const streaming =
        mode === true || (mode === 'auto' && options.onTextDelta !== undefined && !streamRefused);
      let response = await post(streaming ? { ...body, stream: true } : body, signal);
      if (streaming && mode === 'auto' && !response.ok && STREAM_REFUSAL_STATUSES.has(response.status)) {
        // Perhaps the endpoint does not stream: the same request without it decides.
        await response.body?.cancel().catch(() => {});
        response = await post(body, signal);
        if (response.ok) streamRefused = true;
      }
      if (!response.ok) throw await failure(response);
      const type = response.headers.get('content-type') ?? '';
      if (type.includes('text/event-stream') && response.body !== null) {
        let streamed: StreamedCompletion;
        try {
          streamed = await readChatCompletionStream(response.body, options.onTextDelta);
        } catch (error) {
          if (signal.aborted) throw error;
          throw new ModelRequestError(
            `The model endpoint's stream failed: ${error instanceof Error ? error.message : String(error)}`,
            { url },
            error,
          );
        }
        return toModelResponse(streamed.text, streamed.toolCalls, streamed.finishReason, streamed.usage);
      }
      // Not a stream (not asked for one, or the endpoint answered a plain completion anyway).
      const text = await response.text();
      let payload: {
        choices?: Array<{
          message?: { content?: string | null; tool_calls?: ChatToolCall[] };
          finish_reason?: string;
        }>;
        usage?: { prompt_tokens?: number; completion_tokens?: number };
      };
      try {
        payload = JSON.parse(text);
      } catch (error) {
        throw new ModelRequestError(
          'The model endpoint answered with something that is not JSON',
          { url },
          error,
        );
      }
      const choice = payload.choices?.[0];
      if (!choice?.message)
        throw new ModelRequestError('The model endpoint answered without a choice', { url });
      const content = choice.message.content ?? '';
      // Asked to stream but answered whole: a viewer still gets the text.
      if (streaming && content !== '') {
        try {
          options.onTextDelta?.(content);
        } catch {
          // A viewer's failure does not end the reply.
        }
      }
      const calls = (choice.message.tool_calls ?? []).map((call) => ({
        id: call.id,
        name: call.function?.name ?? '',
        arguments: call.function?.arguments ?? '',
      }));
      return toModelResponse(content, calls, choice.finish_reason, payload.usage);
    },
  };
}

/** Statuses with which an endpoint may refuse `stream: true` (then it is asked once more without it). */
const STREAM_REFUSAL_STATUSES: ReadonlySet<number> = new Set([400, 404, 405, 415, 422, 501]);

function toModelResponse(
  text: string,
  calls: ReadonlyArray<{ id: string; name: string; arguments: string }>,
  finishReason: string | undefined,
  usage: { prompt_tokens?: number; completion_tokens?: number } | undefined,
): ModelResponse {
  const toolCalls = calls.map((call, index) => ({
    id: call.id || `call_${index + 1}`,
    name: call.name,
    input: parseArguments(call.arguments),
  }));
  return {
    text,
    toolCalls,
    finishReason: FINISH_REASONS[finishReason ?? ''] ?? (toolCalls.length > 0 ? 'tool_calls' : 'other'),
    ...(usage
      ? { usage: { inputTokens: usage.prompt_tokens ?? 0, outputTokens: usage.completion_tokens ?? 0 } }
      : {}),
  };
}

/** Options of `openAiChatModelFromEnvironment` besides the environment itself. */
export interface EnvironmentModelOptions {
  /** Receives the reply's text as it streams (see `OpenAiChatModelOptions.onTextDelta`). */
  readonly onTextDelta?: (text: string) => void;
}

/**
 * The model configured by environment: `ERRAND_MODEL` (required), `ERRAND_BASE_URL` or `OPENAI_BASE_URL`
 * (default `https://api.openai.com/v1`), `ERRAND_API_KEY` or `OPENAI_API_KEY`, and `ERRAND_STREAM=0` to
 * never ask for streamed replies. Undefined without a model.
 */
export function openAiChatModelFromEnvironment(
  environment: Readonly<Record<string, string | undefined>> = process.env,
  extra: EnvironmentModelOptions = {},
): ModelPort | undefined {
  const model = environment.ERRAND_MODEL;
  if (!model) return undefined;
  const apiKey = environment.ERRAND_API_KEY ?? environment.OPENAI_API_KEY;
  const noStream = ['0', 'false', 'off', 'no'].includes((environment.ERRAND_STREAM ?? '').toLowerCase());
  return createOpenAiChatModel({
    baseUrl: environment.ERRAND_BASE_URL ?? environment.OPENAI_BASE_URL ?? 'https://api.openai.com/v1',
    model,
    ...(apiKey ? { apiKey } : {}),
    ...(noStream ? { stream: false } : {}),
    ...(extra.onTextDelta ? { onTextDelta: extra.onTextDelta } : {}),
  });
}
