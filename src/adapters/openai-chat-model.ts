/**
 * A model port for any OpenAI-compatible chat-completions endpoint (OpenAI, a local server, a gateway),
 * configured by options or by environment for the CLI. Plain `fetch`, no SDK.
 */
import type { ModelMessage, ModelPort, ModelRequest, ModelResponse } from '../session/index.js';
import { ErrandError, MAX_TIMER_DELAY_MS } from '../tasks/index.js';
import { defineOptions, type OptionsInput, option } from '../tasks/options.js';

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
  const url = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`;

  return {
    name: `openai:${options.model}`,
    async generate(request: ModelRequest, signal: AbortSignal): Promise<ModelResponse> {
      const body = {
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
      let response: Response;
      try {
        response = await doFetch(url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
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
      const text = await response.text();
      if (!response.ok) {
        throw new ModelRequestError(
          `The model endpoint answered ${response.status}: ${text.slice(0, MAX_ERROR_BODY)}`,
          { url, status: response.status },
        );
      }
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
      const toolCalls = (choice.message.tool_calls ?? []).map((call, index) => ({
        id: call.id || `call_${index + 1}`,
        name: call.function?.name ?? '',
        input: parseArguments(call.function?.arguments ?? ''),
      }));
      return {
        text: choice.message.content ?? '',
        toolCalls,
        finishReason:
          FINISH_REASONS[choice.finish_reason ?? ''] ?? (toolCalls.length > 0 ? 'tool_calls' : 'other'),
        ...(payload.usage
          ? {
              usage: {
                inputTokens: payload.usage.prompt_tokens ?? 0,
                outputTokens: payload.usage.completion_tokens ?? 0,
              },
            }
          : {}),
      };
    },
  };
}

/**
 * The model configured by environment: `ERRAND_MODEL` (required), `ERRAND_BASE_URL` or `OPENAI_BASE_URL`
 * (default `https://api.openai.com/v1`), `ERRAND_API_KEY` or `OPENAI_API_KEY`. Undefined without a model.
 */
export function openAiChatModelFromEnvironment(
  environment: Readonly<Record<string, string | undefined>> = process.env,
): ModelPort | undefined {
  const model = environment.ERRAND_MODEL;
  if (!model) return undefined;
  const apiKey = environment.ERRAND_API_KEY ?? environment.OPENAI_API_KEY;
  return createOpenAiChatModel({
    baseUrl: environment.ERRAND_BASE_URL ?? environment.OPENAI_BASE_URL ?? 'https://api.openai.com/v1',
    model,
    ...(apiKey ? { apiKey } : {}),
  });
}
