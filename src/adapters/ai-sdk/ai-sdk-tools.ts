/**
 * Vercel AI SDK tools from Errand tool definitions. Each call runs through `executeTool` — validation,
 * policy, output limit — and reaches the model as text, or as error text when `isError` is set.
 */
import { jsonSchema, type Tool, type ToolExecutionOptions, type ToolSet, tool } from 'ai';
import type { Owner } from '../../tasks/index.js';
import type { AnyToolDefinition, ExecuteToolOptions, ToolResult } from '../../tools/index.js';
import { executeTool } from '../../tools/index.js';

export interface AiSdkToolsOptions extends ExecuteToolOptions {
  /** The session the calls act for, or how to find it from the SDK's execution options. */
  readonly caller?: Owner | ((options: ToolExecutionOptions<unknown>) => Owner | undefined);
}

const neverAborted = new AbortController().signal;

function callerOf(options: AiSdkToolsOptions, execution: ToolExecutionOptions<unknown>): Owner | undefined {
  return typeof options.caller === 'function' ? options.caller(execution) : options.caller;
}

/** One AI SDK tool. Its output is the `ToolResult`; the model sees its text. */
export function toAiSdkTool(
  definition: AnyToolDefinition,
  options: AiSdkToolsOptions = {},
): Tool<unknown, ToolResult> {
  return tool<unknown, ToolResult, never>({
    description: definition.description,
    // No validator here: executeTool validates with the zod schema and answers the model in Errand's words.
    inputSchema: jsonSchema<unknown>(definition.jsonSchema as Parameters<typeof jsonSchema>[0]),
    execute: (input, execution) =>
      executeTool(
        definition,
        input,
        {
          caller: callerOf(options, execution as ToolExecutionOptions<unknown>),
          toolCallId: execution.toolCallId,
          signal: execution.abortSignal ?? neverAborted,
        },
        options,
      ),
    toModelOutput: ({ output }) =>
      output.isError ? { type: 'error-text', value: output.text } : { type: 'text', value: output.text },
  }) as Tool<unknown, ToolResult>;
}

/** A tool set keyed by tool name, for `generateText({ tools })` and agents. */
export function toAiSdkTools(
  definitions: readonly AnyToolDefinition[],
  options: AiSdkToolsOptions = {},
): ToolSet {
  return Object.fromEntries(
    definitions.map((definition) => [definition.name, toAiSdkTool(definition, options)]),
  );
}
