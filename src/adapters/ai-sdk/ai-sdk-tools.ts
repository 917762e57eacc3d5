/**
 * Vercel AI SDK tools from Errand tool definitions. Each call runs through `executeTool` — validation,
 * policy, output limit — and reaches the model as text, or as error text when `isError` is set. Given the
 * notification bridge, a result that shows how a task ended withdraws that task's waiting notification.
 */
import { jsonSchema, type Tool, type ToolExecutionOptions, type ToolSet, tool } from 'ai';
import type { Owner } from '../../tasks/index.js';
import { optionKeys, rejectUnknownOptions } from '../../tasks/option-keys.js';
import type { AnyToolDefinition, ExecuteToolOptions, ToolResult } from '../../tools/index.js';
import { executeTool, reportedTaskEnds } from '../../tools/index.js';
import type { AiSdkNotificationBridge } from './ai-sdk-notifications.js';

/** Options of `toAiSdkTool` / `toAiSdkTools`. A key not listed here is rejected with `UNKNOWN_OPTION`. */
export interface AiSdkToolsOptions extends ExecuteToolOptions {
  /** The session the calls act for, or how to find it from the SDK's execution options. */
  readonly caller?: Owner | ((options: ToolExecutionOptions<unknown>) => Owner | undefined);
  /**
   * The notification bridge of the same session. After every call whose result shows the model how a
   * task ended (its `taskEnds`: `task_output` on a finished task), `notifications.taskEndReported` drops
   * that task's waiting notification, so the model is not told twice. Default: none.
   */
  readonly notifications?: Pick<AiSdkNotificationBridge, 'taskEndReported'>;
  /**
   * Default `join`: the SDK runs a tool inside its own `execute_tool` span (with its telemetry on, e.g.
   * `@ai-sdk/otel`), so the call adds none and the tasks it starts are children of the SDK's span.
   * `own`: Errand's `execute_tool` span as well (for an SDK without telemetry).
   */
  readonly toolSpan?: 'own' | 'join';
}

const AI_SDK_TOOLS_OPTION_KEYS = optionKeys<AiSdkToolsOptions>()({
  policy: true,
  caller: true,
  notifications: true,
  tracing: true,
  toolSpan: true,
});

const neverAborted = new AbortController().signal;

function callerOf(options: AiSdkToolsOptions, execution: ToolExecutionOptions<unknown>): Owner | undefined {
  return typeof options.caller === 'function' ? options.caller(execution) : options.caller;
}

/** One AI SDK tool. Its output is the `ToolResult`; the model sees its text. */
export function toAiSdkTool(
  definition: AnyToolDefinition,
  options: AiSdkToolsOptions = {},
): Tool<unknown, ToolResult> {
  rejectUnknownOptions(options, AI_SDK_TOOLS_OPTION_KEYS, { where: 'toAiSdkTool' });
  return adapt(definition, options);
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
        for (const end of reportedTaskEnds(result)) options.notifications?.taskEndReported(end);
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
  rejectUnknownOptions(options, AI_SDK_TOOLS_OPTION_KEYS, { where: 'toAiSdkTools' });
  return Object.fromEntries(definitions.map((definition) => [definition.name, adapt(definition, options)]));
}
