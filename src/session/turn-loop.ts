/**
 * The turn loop: model request → tool calls executed through their definitions → results → next request,
 * until the model stops. Queued notifications are injected at the start of each iteration after the first
 * request, except while continuing a response cut off at the output limit.
 */

import { jsonCopy } from '../store/json.js';
import type { MessageRecord } from '../store/records.js';
import type { NewMessage } from '../store/session-store.js';
import {
  type AnyToolDefinition,
  executeTool,
  type ToldTaskEnd,
  type ToolContext,
  type ToolResult,
  toldTaskEnds,
} from '../tools/index.js';
import type { Tracing } from '../tracing/index.js';
import type { ModelMessage, ModelPort, ModelResponse, ModelToolCall } from './model-port.js';
import type { SessionEvent, TurnOutcome } from './session-events.js';
import type { ResolvedSessionLimits } from './session-limits.js';

export interface TurnContext {
  readonly turnId: number;
  readonly signal: AbortSignal;
  readonly model: ModelPort;
  readonly system: string | undefined;
  readonly tools: readonly AnyToolDefinition[];
  readonly limits: ResolvedSessionLimits;
  /** The live conversation as the model sees it, oldest first (a fresh array each call). */
  modelMessages(): ModelMessage[];
  append(message: NewMessage): MessageRecord;
  /** Delivers queued notifications into the conversation; true if any was delivered. */
  injectQueuedNotifications(): boolean;
  /**
   * Appends a step's tool results. `ends` are the task ends they show the model: their notifications
   * would repeat them, so they are discarded and the ends recorded as told in the same write.
   */
  appendToolResults(message: NewMessage, ends: readonly ToldTaskEnd[]): MessageRecord;
  /**
   * Resolves once what `append` and `appendToolResults` wrote is on disk (they commit without waiting for
   * it): awaited before anything acts on a written message, so the event loop never waits for the disk.
   */
  durable(): Promise<void>;
  toolContext(toolCallId: string): ToolContext;
  /** A line the next tool result carries (the store is failing, or works again); undefined when none. */
  persistenceNote(): string | undefined;
  emit(event: SessionEvent): void;
  /** Where the model calls' `chat` spans and the tool calls' `execute_tool` spans go. */
  readonly tracing: Tracing;
}

export async function runTurn(context: TurnContext): Promise<TurnOutcome> {
  const { turnId, signal } = context;
  const toolSpecs = context.tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    inputSchema: tool.jsonSchema,
  }));
  let requests = 0;
  let continuation = false;
  let lastText = '';
  try {
    for (let step = 0; step < context.limits.maxStepsPerTurn; step += 1) {
      // Checked first: an interrupted turn makes no more requests, so nothing may be injected for one.
      signal.throwIfAborted();
      if (requests > 0 && !continuation) context.injectQueuedNotifications();
      const response = validateResponse(
        await generateTraced(context, {
          system: context.system,
          messages: context.modelMessages(),
          tools: toolSpecs,
          continuation,
        }),
      );
      requests += 1;
      signal.throwIfAborted();
      if (response.text !== '') lastText = response.text;
      // An empty reply (no text, no tool calls) leaves nothing to record.
      if (response.text === '' && response.toolCalls.length === 0) {
        if (response.finishReason !== 'length') return { turnId, reason: 'completed', text: lastText };
        continuation = true;
        continue;
      }
      context.append({
        role: 'assistant',
        content: {
          ...(response.text === '' ? {} : { text: response.text }),
          ...(response.toolCalls.length === 0
            ? {}
            : {
                toolCalls: response.toolCalls.map((call) => ({
                  id: call.id,
                  name: call.name,
                  input: call.input === undefined ? null : (jsonCopy(call.input) ?? String(call.input)),
                })),
              }),
        },
        source: 'assistant',
      });
      // The reply is on disk before any of its tool calls runs, or the next request or the turn's end.
      await context.durable();
      if (response.toolCalls.length > 0) {
        const results = [];
        const ends: ToldTaskEnd[] = [];
        for (const call of response.toolCalls) {
          const executed = await executeCall(context, call);
          results.push(executed.result);
          ends.push(...executed.ends);
        }
        // The results and the ends they show are written together: the model sees both, or neither.
        context.appendToolResults({ role: 'tool', content: { toolResults: results }, source: 'tool' }, ends);
        await context.durable();
        continuation = false;
        continue;
      }
      if (response.finishReason === 'length') {
        continuation = true;
        continue;
      }
      return { turnId, reason: 'completed', text: lastText };
    }
    return { turnId, reason: 'max_steps', text: lastText };
  } catch (error) {
    if (signal.aborted) return { turnId, reason: 'interrupted', text: lastText };
    throw error;
  }
}

/** One model request inside its `chat <model>` span (GenAI conventions), with the usage it reports. */
async function generateTraced(
  context: TurnContext,
  request: Parameters<ModelPort['generate']>[0],
): Promise<ModelResponse> {
  const tracing = context.tracing;
  if (!tracing.enabled) return context.model.generate(request, context.signal);
  const span = tracing.startSpan(`chat ${context.model.name}`, {
    kind: 'client',
    attributes: { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': context.model.name },
  });
  try {
    const response = await tracing.withSpan(span, () => context.model.generate(request, context.signal));
    const usage = (response as { usage?: { inputTokens?: unknown; outputTokens?: unknown } } | undefined)
      ?.usage;
    span.setAttributes({
      'gen_ai.response.finish_reasons':
        typeof response?.finishReason === 'string' ? response.finishReason : undefined,
      'gen_ai.usage.input_tokens': typeof usage?.inputTokens === 'number' ? usage.inputTokens : undefined,
      'gen_ai.usage.output_tokens': typeof usage?.outputTokens === 'number' ? usage.outputTokens : undefined,
    });
    return response;
  } catch (error) {
    span.setError(error instanceof Error ? error.message : String(error), 'model_error');
    throw error;
  } finally {
    span.end();
  }
}

async function executeCall(
  context: TurnContext,
  call: ModelToolCall,
): Promise<{
  result: { toolCallId: string; output: string; isError: boolean };
  ends: ToldTaskEnd[];
}> {
  context.emit({
    type: 'tool-call-start',
    turnId: context.turnId,
    toolCallId: call.id,
    name: call.name,
    input: call.input,
  });
  const tool = context.tools.find((candidate) => candidate.name === call.name);
  let result: ToolResult;
  let ends: ToldTaskEnd[] = [];
  if (!tool) {
    const known = context.tools.map((candidate) => candidate.name).join(', ');
    result = {
      text: `Error [UNKNOWN_TOOL]: no tool named ${JSON.stringify(call.name)} (tools: ${known})`,
      isError: true,
    };
  } else {
    result = await runToolCall(tool, call, context);
    // The result shows how tasks ended: their notifications would tell the model a second time.
    ends = [...toldTaskEnds(result)];
  }
  const note = context.persistenceNote();
  const text = boundText(
    note === undefined ? result.text : `${result.text}\n${note}`,
    context.limits.maxToolResultBytes,
  );
  context.emit({
    type: 'tool-call-end',
    turnId: context.turnId,
    toolCallId: call.id,
    name: call.name,
    isError: result.isError,
    text,
  });
  return { result: { toolCallId: call.id, output: text, isError: result.isError }, ends };
}

/**
 * The assistant message naming this call is already stored: whatever the tool does, the call gets a
 * result, or every later request would carry a tool call without one.
 */
async function runToolCall(
  tool: AnyToolDefinition,
  call: ModelToolCall,
  context: TurnContext,
): Promise<ToolResult> {
  try {
    const result = await executeTool(tool, call.input, context.toolContext(call.id), {
      tracing: context.tracing,
    });
    if (typeof result?.text === 'string' && typeof result.isError === 'boolean') return result;
    throw new Error('it returned no { text, isError } result');
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { text: `Error [TOOL_FAILED]: the ${tool.name} tool failed: ${message}`, isError: true };
  }
}

function validateResponse(response: ModelResponse): ModelResponse {
  if (typeof response !== 'object' || response === null) throw new Error('The model returned no response');
  return {
    text: typeof response.text === 'string' ? response.text : '',
    toolCalls: Array.isArray(response.toolCalls) ? response.toolCalls : [],
    finishReason: response.finishReason ?? 'stop',
    ...(response.usage ? { usage: response.usage } : {}),
  };
}

/** A safety bound on one tool result: keeps the head and the tail, on character boundaries. */
function boundText(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text, 'utf8') <= maxBytes) return text;
  const half = Math.floor(maxBytes / 2);
  const head = Buffer.from(text, 'utf8')
    .subarray(0, half)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
  const tail = Buffer.from(text, 'utf8')
    .subarray(-half)
    .toString('utf8')
    .replace(/^\uFFFD/, '');
  const skipped = Buffer.byteLength(text, 'utf8') - Buffer.byteLength(head) - Buffer.byteLength(tail);
  return `${head}\n[... ${skipped} bytes of tool output skipped ...]\n${tail}`;
}
