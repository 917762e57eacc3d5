/**
 * Tool shapes for the common SDKs, from the same definitions: OpenAI, Anthropic, MCP. The Vercel AI SDK
 * adapter (and its steering bridge) lives in `./ai-sdk/`, so only its users need the `ai` package.
 */
export * from './anthropic.js';
export * from './mcp.js';
export * from './openai.js';
export * from './openai-chat-model.js';
export * from './tool-lookup.js';
