/**
 * OpenAI function tools from Errand tool definitions, for the Chat Completions and the Responses APIs.
 * Schemas are strict-mode compatible: every property required, optional ones nullable, no additional
 * properties, and only keywords strict mode accepts. A call's nulls for optional properties are turned
 * back into absent ones before the definition validates the input with its full schema (so constraints
 * strict mode cannot express are still enforced).
 */
import type {
  AnyToolDefinition,
  ExecuteToolOptions,
  JsonSchema,
  ToolContext,
  ToolResult,
} from '../tools/index.js';
import { executeTool, toolError } from '../tools/index.js';
import { findTool, unknownToolResult } from './tool-lookup.js';

// Keywords strict mode accepts everywhere; constraints beyond them are checked by the definition's schema.
const STRICT_KEYWORDS = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'anyOf',
  'enum',
  'const',
  'description',
  'title',
  '$defs',
  'definitions',
  '$ref',
]);

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isObjectSchema(schema: Record<string, unknown>): boolean {
  return schema.type === 'object' || (schema.type === undefined && isObject(schema.properties));
}

function nullable(schema: JsonSchema): JsonSchema {
  const type = schema.type;
  if (typeof type === 'string') {
    const widened: JsonSchema = { ...schema, type: [type, 'null'] };
    if (Array.isArray(schema.enum)) widened.enum = [...schema.enum, null];
    return widened;
  }
  if (Array.isArray(type)) return type.includes('null') ? schema : { ...schema, type: [...type, 'null'] };
  if (Array.isArray(schema.anyOf)) return { ...schema, anyOf: [...schema.anyOf, { type: 'null' }] };
  return { anyOf: [schema, { type: 'null' }] };
}

/** Converts a JSON Schema to the form OpenAI's strict mode accepts. */
export function toStrictJsonSchema(schema: JsonSchema): JsonSchema {
  const strict: JsonSchema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (!STRICT_KEYWORDS.has(key)) continue;
    if (key === 'properties' || key === '$defs' || key === 'definitions') {
      strict[key] = Object.fromEntries(
        Object.entries(value as Record<string, JsonSchema>).map(([name, child]) => [
          name,
          toStrictJsonSchema(child),
        ]),
      );
    } else if (key === 'items' && isObject(value)) {
      strict[key] = toStrictJsonSchema(value);
    } else if (key === 'anyOf' && Array.isArray(value)) {
      strict[key] = value.map((child: JsonSchema) => toStrictJsonSchema(child));
    } else {
      strict[key] = value;
    }
  }
  if (Array.isArray(schema.oneOf))
    strict.anyOf = schema.oneOf.map((child: JsonSchema) => toStrictJsonSchema(child));
  if (isObjectSchema(schema)) {
    const properties = (strict.properties ?? {}) as Record<string, JsonSchema>;
    const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
    strict.type = 'object';
    strict.properties = Object.fromEntries(
      Object.entries(properties).map(([name, child]) => [name, required.has(name) ? child : nullable(child)]),
    );
    strict.required = Object.keys(properties);
    strict.additionalProperties = false;
  }
  return strict;
}

/**
 * Removes the nulls strict mode made a model send for optional properties, following the original
 * schema: `{ task_id: "bash-1", wait: null }` becomes `{ task_id: "bash-1" }`.
 */
export function restoreOptionalNulls(schema: JsonSchema, value: unknown): unknown {
  if (Array.isArray(value)) {
    const items = schema.items;
    return isObject(items) ? value.map((item) => restoreOptionalNulls(items, item)) : value;
  }
  if (!isObject(value) || !isObjectSchema(schema)) return value;
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  const restored: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    if (child === null && !required.has(key) && key in properties) continue;
    const childSchema = properties[key];
    restored[key] = childSchema === undefined ? child : restoreOptionalNulls(childSchema, child);
  }
  return restored;
}

export interface OpenAIChatFunctionTool {
  readonly type: 'function';
  readonly function: {
    readonly name: string;
    readonly description: string;
    readonly parameters: JsonSchema;
    readonly strict: true;
  };
}

export interface OpenAIResponsesFunctionTool {
  readonly type: 'function';
  readonly name: string;
  readonly description: string;
  readonly parameters: JsonSchema;
  readonly strict: true;
}

/** A Chat Completions function tool (`tools: [...]` of `chat.completions.create`). */
export function toOpenAIChatTool(definition: AnyToolDefinition): OpenAIChatFunctionTool {
  return {
    type: 'function',
    function: {
      name: definition.name,
      description: definition.description,
      parameters: toStrictJsonSchema(definition.jsonSchema),
      strict: true,
    },
  };
}

/** A Responses API function tool (`tools: [...]` of `responses.create`). */
export function toOpenAIResponsesTool(definition: AnyToolDefinition): OpenAIResponsesFunctionTool {
  return {
    type: 'function',
    name: definition.name,
    description: definition.description,
    parameters: toStrictJsonSchema(definition.jsonSchema),
    strict: true,
  };
}

/** A function call as either API reports it: its name and its JSON-encoded arguments. */
export interface OpenAIFunctionCall {
  readonly name: string;
  readonly arguments: string;
}

/**
 * Runs a model's function call: parses its arguments, restores optional nulls, and executes the
 * definition of that name (validation, policy and output limit included).
 */
export async function executeOpenAIToolCall(
  definitions: readonly AnyToolDefinition[],
  call: OpenAIFunctionCall,
  context: ToolContext,
  options?: ExecuteToolOptions,
): Promise<ToolResult> {
  const definition = findTool(definitions, call.name);
  if (definition === undefined) return unknownToolResult(call.name, definitions);
  let parsed: unknown;
  try {
    parsed = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
  } catch (error) {
    return toolError(
      `Error [INVALID_TOOL_INPUT]: invalid input for ${definition.name}: the arguments are not JSON (${(error as Error).message})`,
    );
  }
  return executeTool(definition, restoreOptionalNulls(definition.jsonSchema, parsed), context, options);
}

/** The Chat Completions message that answers a tool call. */
export function toOpenAIChatToolMessage(
  toolCallId: string,
  result: ToolResult,
): { readonly role: 'tool'; readonly tool_call_id: string; readonly content: string } {
  return { role: 'tool', tool_call_id: toolCallId, content: result.text };
}

/** The Responses API input item that answers a function call. */
export function toOpenAIFunctionCallOutput(
  callId: string,
  result: ToolResult,
): { readonly type: 'function_call_output'; readonly call_id: string; readonly output: string } {
  return { type: 'function_call_output', call_id: callId, output: result.text };
}
