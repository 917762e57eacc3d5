/** Anthropic Messages API tools (`input_schema`) from Errand tool definitions, and `tool_result` blocks. */
import type { AnyToolDefinition, ExecuteToolOptions, JsonSchema, ToolContext } from '../tools/index.js';
import { executeTool } from '../tools/index.js';
import { findTool, unknownToolResult } from './tool-lookup.js';

export interface AnthropicTool {
  readonly name: string;
  readonly description: string;
  readonly input_schema: JsonSchema & { readonly type: 'object' };
}

export function toAnthropicTool(definition: AnyToolDefinition): AnthropicTool {
  return {
    name: definition.name,
    description: definition.description,
    input_schema: { ...definition.jsonSchema, type: 'object' },
  };
}

/** A `tool_use` content block of an assistant message. */
export interface AnthropicToolUse {
  readonly id: string;
  readonly name: string;
  readonly input: unknown;
}

export interface AnthropicToolResultBlock {
  readonly type: 'tool_result';
  readonly tool_use_id: string;
  readonly content: string;
  readonly is_error?: true;
}

/** Runs a `tool_use` block and answers it with a `tool_result` block for the next user message. */
export async function executeAnthropicToolUse(
  definitions: readonly AnyToolDefinition[],
  toolUse: AnthropicToolUse,
  context: Omit<ToolContext, 'toolCallId'>,
  options?: ExecuteToolOptions,
): Promise<AnthropicToolResultBlock> {
  const definition = findTool(definitions, toolUse.name);
  const result =
    definition === undefined
      ? unknownToolResult(toolUse.name, definitions)
      : await executeTool(definition, toolUse.input, { ...context, toolCallId: toolUse.id }, options);
  return {
    type: 'tool_result',
    tool_use_id: toolUse.id,
    content: result.text,
    ...(result.isError ? { is_error: true as const } : {}),
  };
}
