/**
 * A model port over any Vercel AI SDK `LanguageModel` (any provider): one `generateText` step per request,
 * with Errand's tools offered without `execute`, so the session's turn loop runs them.
 */
import {
  generateText,
  jsonSchema,
  type LanguageModel,
  type ModelMessage as SdkMessage,
  type ToolSet,
  tool,
} from 'ai';
import type { ModelMessage, ModelPort, ModelRequest, ModelResponse } from '../../session/index.js';
import { defineOptions, type OptionsInput, option } from '../../tasks/options.js';

/** The options of `createAiSdkModel`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
const aiSdkModelOptions = defineOptions('createAiSdkModel', {
  /** A name for logs and the UI. Default `ai-sdk`. */
  name: option.string({ default: 'ai-sdk' }),
  /** Retries of a failed request inside the SDK. Default 2. */
  maxRetries: option.integer({ min: 0, default: 2 }),
});

/** Options of `createAiSdkModel`. */
export type AiSdkModelOptions = OptionsInput<typeof aiSdkModelOptions.rules>;

export function toSdkMessages(messages: readonly ModelMessage[]): SdkMessage[] {
  const sdk: SdkMessage[] = [];
  for (const message of messages) {
    switch (message.role) {
      case 'system':
        sdk.push({ role: 'system', content: message.text });
        break;
      case 'user':
        sdk.push({ role: 'user', content: message.text });
        break;
      case 'assistant':
        sdk.push({
          role: 'assistant',
          content: [
            ...(message.text === '' ? [] : [{ type: 'text' as const, text: message.text }]),
            ...message.toolCalls.map((call) => ({
              type: 'tool-call' as const,
              toolCallId: call.id,
              toolName: call.name,
              input: call.input,
            })),
          ],
        });
        break;
      case 'tool':
        sdk.push({
          role: 'tool',
          content: message.results.map((result) => ({
            type: 'tool-result' as const,
            toolCallId: result.toolCallId,
            toolName: result.toolName,
            output: result.isError
              ? { type: 'error-text' as const, value: result.output }
              : { type: 'text' as const, value: result.output },
          })),
        });
        break;
    }
  }
  return sdk;
}

const FINISH_REASONS: Record<string, ModelResponse['finishReason']> = {
  stop: 'stop',
  'tool-calls': 'tool_calls',
  length: 'length',
  'content-filter': 'content_filter',
  error: 'error',
};

export function createAiSdkModel(model: LanguageModel, input: AiSdkModelOptions = {}): ModelPort {
  const options = aiSdkModelOptions.resolve(input);
  return {
    name: options.name,
    async generate(request: ModelRequest, signal: AbortSignal): Promise<ModelResponse> {
      const tools: ToolSet = Object.fromEntries(
        request.tools.map((spec) => [
          spec.name,
          tool({
            description: spec.description,
            inputSchema: jsonSchema(spec.inputSchema as Parameters<typeof jsonSchema>[0]),
          }),
        ]),
      );
      const result = await generateText({
        model,
        ...(request.system ? { system: request.system } : {}),
        messages: toSdkMessages(request.messages),
        tools,
        maxRetries: options.maxRetries,
        abortSignal: signal,
      });
      const toolCalls = result.toolCalls.map((call) => ({
        id: call.toolCallId,
        name: call.toolName,
        input: call.input,
      }));
      return {
        text: result.text,
        toolCalls,
        finishReason: FINISH_REASONS[result.finishReason] ?? (toolCalls.length > 0 ? 'tool_calls' : 'other'),
        usage: { inputTokens: result.usage.inputTokens ?? 0, outputTokens: result.usage.outputTokens ?? 0 },
      };
    },
  };
}
