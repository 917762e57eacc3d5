/**
 * One tool definition for every ecosystem: a name, a description, a zod input schema with its JSON
 * Schema, and `execute`. Adapters turn the same definition into AI SDK, OpenAI, Anthropic and MCP tools.
 */
import { type ZodType, z } from 'zod';
import { ErrandError, InvalidArgumentError, type Owner } from '../tasks/index.js';
import { resolveTracing, type TracingSetting } from '../tracing/index.js';
import { ToolCallAbortedError } from './errors.js';
import { limitToolResult } from './output-limit.js';

export type JsonSchema = Record<string, unknown>;

export interface ToolContext {
  /** The session calling the tool; tasks it starts are owned by it. */
  readonly caller: Owner | undefined;
  /** The id of this tool call in the conversation (`<tool-use-id>` in notifications). */
  readonly toolCallId: string;
  /** Aborted when the tool call is interrupted. Published background tasks do not follow it. */
  readonly signal: AbortSignal;
  /** The session's working directory default. */
  readonly cwd?: string;
  /** The session's environment default. */
  readonly env?: Readonly<Record<string, string>>;
}

export interface ToolResult<Value = unknown> {
  readonly text: string;
  readonly isError: boolean;
  /** The canonical value, for example `{ kind: 'background', taskId }`. */
  readonly value?: Value;
  /**
   * The task ends this result shows the model with their output or result (`task_output` on a finished
   * task). Every surface that hands the result to the model tells its notification inbox, which discards
   * those tasks' queued notifications: the model already read what they would say. A status line alone
   * (`task_kill` on a finished task, `task_list`) does not count: the notification carries more.
   * Ignored on an error result.
   */
  readonly taskEnds?: readonly ToldTaskEnd[];
}

/** A task end a tool result showed the model; `attempt` when the result named it. */
export interface ToldTaskEnd {
  readonly taskId: string;
  readonly attempt: number | undefined;
}

/** The canonical value of a call that started background work. */
export interface BackgroundToolValue {
  readonly kind: 'background';
  readonly taskId: string;
}

export interface ToolDefinition<Input = unknown, Value = unknown> {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: ZodType<Input>;
  readonly jsonSchema: JsonSchema;
  execute(input: Input, context: ToolContext): Promise<ToolResult<Value>>;
  /**
   * The byte budget of this call's model-facing text, resolved from the raw input before anything runs,
   * so that every result of the call — invalid input, thrown errors, policy results — is bounded by it.
   * Undefined: unbounded.
   */
  resultLimitBytes?(rawInput: unknown, context: ToolContext): number | undefined;
  /**
   * Looks at the raw input before the schema does and returns the error to answer with, if any: a
   * parameter this instance leaves out of its schema on purpose (a disabled `run_in_background`) is
   * refused with the tool's own code and a sentence the model can act on, not as an unknown key.
   */
  refuseInput?(rawInput: unknown): Error | undefined;
}

/** Any tool definition, whatever its input and value types. */
// biome-ignore lint/suspicious/noExplicitAny: a heterogeneous tool list needs the erased type
export type AnyToolDefinition = ToolDefinition<any, unknown>;

export interface DefineToolOptions<Input, Value> {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: ZodType<Input>;
  execute(input: Input, context: ToolContext): Promise<ToolResult<Value>>;
  resultLimitBytes?(rawInput: unknown, context: ToolContext): number | undefined;
  refuseInput?(rawInput: unknown): Error | undefined;
}

const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

export function defineTool<Input, Value>(
  options: DefineToolOptions<Input, Value>,
): ToolDefinition<Input, Value> {
  // Every ecosystem's tool name rules accept this pattern (OpenAI and Anthropic are the strictest).
  if (typeof options.name !== 'string' || !TOOL_NAME_PATTERN.test(options.name)) {
    throw new InvalidArgumentError('name', 'a tool name of 1-64 letters, digits, "_" or "-"', options.name);
  }
  if (typeof options.execute !== 'function') {
    throw new InvalidArgumentError('execute', 'a function', options.execute);
  }
  if (options.refuseInput !== undefined && typeof options.refuseInput !== 'function') {
    throw new InvalidArgumentError('refuseInput', 'a function', options.refuseInput);
  }
  const jsonSchema = z.toJSONSchema(options.inputSchema, { target: 'draft-2020-12' }) as JsonSchema;
  delete jsonSchema.$schema;
  return Object.freeze({ ...options, jsonSchema });
}

export function toolResult<Value>(text: string, value?: Value): ToolResult<Value> {
  return value === undefined ? { text, isError: false } : { text, isError: false, value };
}

export function toolError(text: string): ToolResult<never> {
  return { text, isError: true };
}

/** Renders an error for the model: the stable code first, then the message. */
export function describeToolError(error: unknown): string {
  if (ErrandError.isInstance(error)) return `Error [${error.code}]: ${error.message}`;
  if (error instanceof Error) return `Error: ${error.message}`;
  return `Error: ${String(error)}`;
}

/**
 * A harness policy that may answer a call instead of the tool (an approval denied, a rate limit).
 * Its result is bounded like the tool's own.
 */
export type ToolPolicy = (call: {
  readonly definition: AnyToolDefinition;
  readonly input: unknown;
  readonly context: ToolContext;
}) => ToolResult | undefined | Promise<ToolResult | undefined>;

export interface ExecuteToolOptions {
  /** Runs after input validation and before the tool; a result short-circuits the call. */
  readonly policy?: ToolPolicy;
  /**
   * Where the call's `execute_tool <name>` span goes (OpenTelemetry GenAI conventions); tasks the call
   * starts are its children. A `Tracing`, or false for none. Default: the global OpenTelemetry API when
   * `@opentelemetry/api` is installed.
   */
  readonly tracing?: TracingSetting;
  /**
   * `own` (default): the call gets an `execute_tool` span of its own. `join`: it runs in the span active
   * already (a framework's own `execute_tool` span, as the AI SDK's telemetry makes), adding none.
   */
  readonly toolSpan?: 'own' | 'join';
}

/**
 * Validates raw input against the definition's schema and runs it. Invalid input and thrown errors
 * become error results naming the field, so a model can correct its call. A call whose signal is
 * already aborted fails without running. The definition's result limit is resolved first and applied
 * last, so no path — error or policy — escapes it.
 */
export async function executeTool<Input, Value>(
  definition: ToolDefinition<Input, Value>,
  rawInput: unknown,
  context: ToolContext,
  options: ExecuteToolOptions = {},
): Promise<ToolResult<Value>> {
  const tracing = resolveTracing(options.tracing);
  if (!tracing.enabled || options.toolSpan === 'join') {
    return runLimited(definition, rawInput, context, options);
  }
  const span = tracing.startSpan(`execute_tool ${definition.name}`, {
    attributes: {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': definition.name,
      'gen_ai.tool.call.id': context.toolCallId,
      'gen_ai.tool.type': 'function',
      'gen_ai.conversation.id': context.caller?.sessionId,
    },
  });
  // The API without an SDK: a span that records nothing and names no trace needs no context switch.
  if (!span.recording && span.traceparent === undefined) {
    span.end();
    return runLimited(definition, rawInput, context, options);
  }
  try {
    const result = await tracing.withSpan(span, () => runLimited(definition, rawInput, context, options));
    const value = result.value as { kind?: unknown; taskId?: unknown } | undefined;
    if (value?.kind === 'background' && typeof value.taskId === 'string') {
      span.setAttributes({ 'errand.task.id': value.taskId, 'errand.tool.background': true });
    }
    if (result.isError) span.setError(result.text.split('\n', 1)[0]!.slice(0, 200), 'tool_error');
    return result;
  } finally {
    span.end();
  }
}

async function runLimited<Input, Value>(
  definition: ToolDefinition<Input, Value>,
  rawInput: unknown,
  context: ToolContext,
  options: ExecuteToolOptions,
): Promise<ToolResult<Value>> {
  let limit: number | undefined;
  try {
    limit = definition.resultLimitBytes?.(rawInput, context);
  } catch {
    limit = undefined;
  }
  const result = await runTool(definition, rawInput, context, options);
  return limitToolResult(result, limit);
}

async function runTool<Input, Value>(
  definition: ToolDefinition<Input, Value>,
  rawInput: unknown,
  context: ToolContext,
  options: ExecuteToolOptions,
): Promise<ToolResult<Value>> {
  if (context.signal.aborted) {
    return toolError(describeToolError(new ToolCallAbortedError(definition.name, context.signal.reason)));
  }
  const refusal = refusalOf(definition, rawInput);
  if (refusal !== undefined) return toolError(describeToolError(refusal));
  const parsed = definition.inputSchema.safeParse(rawInput ?? {});
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const field = issue.path.length > 0 ? issue.path.join('.') : '(input)';
      return `\`${field}\`: ${issue.message}`;
    });
    return toolError(
      `Error [INVALID_TOOL_INPUT]: invalid input for ${definition.name}: ${problems.join('; ')}`,
    );
  }
  try {
    if (options.policy) {
      const answer = await options.policy({ definition, input: parsed.data, context });
      if (answer !== undefined) return answer as ToolResult<Value>;
    }
    return await definition.execute(parsed.data, context);
  } catch (error) {
    return toolError(describeToolError(error));
  }
}

/** Whether a call's raw input names `key`, whatever its value (for `refuseInput`). */
export function hasInputKey(key: string, rawInput: unknown): boolean {
  return typeof rawInput === 'object' && rawInput !== null && Object.hasOwn(rawInput, key);
}

function refusalOf(definition: AnyToolDefinition, rawInput: unknown): unknown {
  if (definition.refuseInput === undefined) return undefined;
  try {
    return definition.refuseInput(rawInput);
  } catch (error) {
    return error;
  }
}

/**
 * The task ends a tool result showed the model (its `taskEnds`), none for an error result. Every reader —
 * the turn loop, the MCP server, the AI SDK tools — goes through here.
 */
export function toldTaskEnds(result: ToolResult): readonly ToldTaskEnd[] {
  if (result.isError || !Array.isArray(result.taskEnds)) return [];
  const ends: ToldTaskEnd[] = [];
  for (const end of result.taskEnds as readonly Partial<ToldTaskEnd>[]) {
    // A producer's malformed entry names no task: it discards nothing rather than failing the turn.
    if (typeof end?.taskId !== 'string' || end.taskId === '') continue;
    ends.push({ taskId: end.taskId, attempt: Number.isSafeInteger(end.attempt) ? end.attempt : undefined });
  }
  return ends;
}

/** The first task end a tool result showed the model (see `toldTaskEnds`), or undefined. */
export function toldTaskEnd(result: ToolResult): ToldTaskEnd | undefined {
  return toldTaskEnds(result)[0];
}
