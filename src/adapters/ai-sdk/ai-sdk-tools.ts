/**
 * Vercel AI SDK tools from Errand tool definitions. Each call runs through `executeTool` — validation,
 * policy, output limit — and reaches the model as text, or as error text when `isError` is set. Given the
 * notification bridge, a result that shows how a task ended discards that task's waiting notification.
 */
import { jsonSchema, type Tool, type ToolExecutionOptions, type ToolSet, tool } from 'ai';
import type { Owner } from '../../tasks/index.js';
import { defineOptions, type OptionsInput, option } from '../../tasks/options.js';
import type { AnyToolDefinition, ExecuteToolOptions, ToolResult } from '../../tools/index.js';
import { executeTool, toldTaskEnds } from '../../tools/index.js';
import { tracingOption } from '../../tracing/index.js';
import type { AiSdkNotificationBridge } from './ai-sdk-notifications.js';

const isCaller = (value: unknown) =>
  typeof value === 'function' || typeof (value as Partial<Owner> | null)?.sessionId === 'string';

/** The options of `toAiSdkTool` / `toAiSdkTools`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
const aiSdkToolsOptions = defineOptions('toAiSdkTools', {
  /** Runs after input validation and before the tool; a result short-circuits the call (`executeTool`'s). */
  policy: option.func<NonNullable<ExecuteToolOptions['policy']>>(),
  /** The session the calls act for, or how to find it from the SDK's execution options. */
  caller: option.custom<Owner | ((options: ToolExecutionOptions<unknown>) => Owner | undefined)>(
    'an Owner or a function returning one',
    isCaller,
  ),
  /**
   * The notification bridge of the same session. After every call whose result shows the model how a
   * task ended (its `taskEnds`: `task_output` on a finished task), `notifications.taskEndTold` drops
   * that task's waiting notification, so the model is not told twice. Default: none.
   */
  notifications: option.shaped<Pick<AiSdkNotificationBridge, 'taskEndTold'>>('a notification bridge', [
    'taskEndTold',
  ]),
  /**
   * Where each call's `execute_tool` span goes (`executeTool`'s `tracing`). Default: the global
   * OpenTelemetry API when installed.
   */
  tracing: tracingOption(),
  /**
   * Default `join`: the SDK runs a tool inside its own `execute_tool` span (with its telemetry on, e.g.
   * `@ai-sdk/otel`), so the call adds none and the tasks it starts are children of the SDK's span.
   * `own`: Errand's `execute_tool` span as well (for an SDK without telemetry).
   */
  toolSpan: option.oneOf(['own', 'join'] as const, { default: 'join' }),
});

/** Options of `toAiSdkTool` / `toAiSdkTools`. */
export type AiSdkToolsOptions = OptionsInput<typeof aiSdkToolsOptions.rules>;

const neverAborted = new AbortController().signal;

function callerOf(options: AiSdkToolsOptions, execution: ToolExecutionOptions<unknown>): Owner | undefined {
  return typeof options.caller === 'function' ? options.caller(execution) : options.caller;
}

/** One AI SDK tool. Its output is the `ToolResult`; the model sees its text. */
export function toAiSdkTool(
  definition: AnyToolDefinition,
  options: AiSdkToolsOptions = {},
): Tool<unknown, ToolResult> {
  return adapt(definition, aiSdkToolsOptions.resolve(options, { where: 'toAiSdkTool' }));
}

function adapt(definition: AnyToolDefinition, options: AiSdkToolsOptions): Tool<unknown, ToolResult> {
  return tool<unknown, ToolResult, never>({
    description: definition.description,
    // No validator here: executeTool validates with the zod schema and answers the model in Errand's words.
    inputSchema: jsonSchema<unknown>(definition.jsonSchema as Parameters<typeof jsonSchema>[0]),
    execute: async (input, execution) => {
      const result = await executeTool(
        definition,
        input,
        {
          caller: callerOf(options, execution as ToolExecutionOptions<unknown>),
          toolCallId: execution.toolCallId,
          signal: execution.abortSignal ?? neverAborted,
        },
        {
          ...(options.policy === undefined ? {} : { policy: options.policy }),
          ...(options.tracing === undefined ? {} : { tracing: options.tracing }),
          toolSpan: options.toolSpan ?? 'join',
        },
      );
      // The result shows how a task ended: its waiting notification would tell the model a second time.
      // An aborted generation does not hand the result to the model: then the notification stays.
      if (execution.abortSignal?.aborted !== true) {
        for (const end of toldTaskEnds(result)) options.notifications?.taskEndTold(end);
      }
      return result;
    },
    toModelOutput: ({ output }) =>
      output.isError ? { type: 'error-text', value: output.text } : { type: 'text', value: output.text },
  }) as Tool<unknown, ToolResult>;
}

/** A tool set keyed by tool name, for `generateText({ tools })` and agents. */
export function toAiSdkTools(
  definitions: readonly AnyToolDefinition[],
  options: AiSdkToolsOptions = {},
): ToolSet {
  const resolved = aiSdkToolsOptions.resolve(options);
  return Object.fromEntries(definitions.map((definition) => [definition.name, adapt(definition, resolved)]));
}
