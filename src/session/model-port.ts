/**
 * The model port: messages and tool specs in, one assistant message out. The scripted model (tests, the
 * demo), the AI SDK adapter and the OpenAI-compatible client all implement it.
 */
import type { JsonSchema } from '../tools/index.js';

export interface ModelToolCall {
  readonly id: string;
  readonly name: string;
  readonly input: unknown;
}

export interface ModelToolResult {
  readonly toolCallId: string;
  readonly toolName: string;
  readonly output: string;
  readonly isError: boolean;
}

export type ModelMessage =
  | { readonly role: 'system'; readonly text: string }
  | { readonly role: 'user'; readonly text: string; readonly modelOnly: boolean }
  | { readonly role: 'assistant'; readonly text: string; readonly toolCalls: readonly ModelToolCall[] }
  | { readonly role: 'tool'; readonly results: readonly ModelToolResult[] };

export interface ModelToolSpec {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: JsonSchema;
}

export interface ModelRequest {
  readonly system: string | undefined;
  /**
   * The conversation, oldest first: a fresh array, but its messages are the session's own (kept in memory
   * between requests), so a port reads them and never modifies them.
   */
  readonly messages: readonly ModelMessage[];
  readonly tools: readonly ModelToolSpec[];
  /** True when this request continues a response that was cut off at the output-token limit. */
  readonly continuation: boolean;
}

/** `length`: the response hit the output-token limit and the loop asks for a continuation. */
export type FinishReason = 'stop' | 'tool_calls' | 'length' | 'content_filter' | 'error' | 'other';

export interface ModelUsage {
  readonly inputTokens: number;
  readonly outputTokens: number;
}

export interface ModelResponse {
  readonly text: string;
  readonly toolCalls: readonly ModelToolCall[];
  readonly finishReason: FinishReason;
  readonly usage?: ModelUsage;
}

export interface ModelPort {
  /** A short name for logs and the UI, e.g. `scripted` or `openai:gpt-4.1`. */
  readonly name: string;
  generate(request: ModelRequest, signal: AbortSignal): Promise<ModelResponse>;
}
