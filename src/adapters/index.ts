/**
 * Tool shapes for the common SDKs, from the same definitions: OpenAI, Anthropic, MCP. The Vercel AI SDK
 * adapter (and its steering bridge) lives in `./ai-sdk/`, so only its users need the `ai` package.
 */
export {
  type AnthropicTool,
  type AnthropicToolResultBlock,
  type AnthropicToolUse,
  executeAnthropicToolUse,
  toAnthropicTool,
} from './anthropic.js';
export {
  type McpRequestFacts,
  type McpToolResult,
  type RegisterMcpToolsOptions,
  registerMcpTools,
} from './mcp.js';
export {
  executeOpenAIToolCall,
  type OpenAIChatFunctionTool,
  type OpenAIFunctionCall,
  type OpenAIResponsesFunctionTool,
  restoreOptionalNulls,
  toOpenAIChatTool,
  toOpenAIChatToolMessage,
  toOpenAIFunctionCallOutput,
  toOpenAIResponsesTool,
  toStrictJsonSchema,
} from './openai.js';
export {
  createOpenAiChatModel,
  type EnvironmentModelOptions,
  ModelRequestError,
  type OpenAiChatModelOptions,
  openAiChatModelFromEnvironment,
  toChatMessages,
} from './openai-chat-model.js';
export { findTool, unknownToolResult } from './tool-lookup.js';
