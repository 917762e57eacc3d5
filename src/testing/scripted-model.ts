/**
 * A deterministic model: a script of replies (text and/or tool calls), each either fixed or computed from
 * the request it answers. The demo runs on it, and tests use it instead of one-off model mocks.
 */
import type { FinishReason, ModelPort, ModelRequest, ModelResponse, ModelUsage } from '../session/index.js';

export interface ScriptedReply {
  readonly text?: string;
  readonly toolCalls?: ReadonlyArray<{
    readonly name: string;
    readonly input?: unknown;
    readonly id?: string;
  }>;
  /** Default: `tool_calls` when there are tool calls, else `stop`. */
  readonly finishReason?: FinishReason;
  readonly usage?: ModelUsage;
}

export type ScriptedStep =
  | ScriptedReply
  | ((request: ModelRequest, index: number) => ScriptedReply | Promise<ScriptedReply>);

export interface ScriptedModelOptions {
  readonly name?: string;
  /** What happens after the last step: answer with an empty stop (default) or fail the request. */
  readonly whenExhausted?: 'stop' | 'throw';
}

export interface ScriptedModel extends ModelPort {
  /** Every request received, in order. */
  readonly requests: readonly ModelRequest[];
  /** Steps not yet used. */
  readonly remaining: number;
  /** Appends steps to the script. */
  push(...steps: ScriptedStep[]): void;
}

export function scriptedModel(
  steps: readonly ScriptedStep[] = [],
  options: ScriptedModelOptions = {},
): ScriptedModel {
  const script = [...steps];
  const requests: ModelRequest[] = [];
  let served = 0;
  let callIds = 0;

  const toResponse = (reply: ScriptedReply): ModelResponse => {
    const toolCalls = (reply.toolCalls ?? []).map((call) => ({
      id: call.id ?? `call_${++callIds}`,
      name: call.name,
      input: call.input ?? {},
    }));
    return {
      text: reply.text ?? '',
      toolCalls,
      finishReason: reply.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop'),
      ...(reply.usage ? { usage: reply.usage } : {}),
    };
  };

  return {
    name: options.name ?? 'scripted',
    requests,
    get remaining() {
      return script.length;
    },
    push(...more) {
      script.push(...more);
    },
    async generate(request, signal) {
      signal.throwIfAborted();
      requests.push(request);
      const index = served;
      served += 1;
      const step = script.shift();
      if (step === undefined) {
        if (options.whenExhausted === 'throw') throw new Error(`The scripted model has no step ${index + 1}`);
        return toResponse({});
      }
      if (typeof step !== 'function') return toResponse(step);
      const pending = Promise.resolve(step(request, index));
      let onAbort: (() => void) | undefined;
      const aborted = new Promise<never>((_, reject) => {
        onAbort = () => reject(signal.reason);
        signal.addEventListener('abort', onAbort, { once: true });
      });
      try {
        return toResponse(await Promise.race([pending, aborted]));
      } finally {
        if (onAbort) signal.removeEventListener('abort', onAbort);
        aborted.catch(() => {});
      }
    },
  };
}

/** The text of the last user message in a request (for steps that react to what arrived). */
export function lastUserText(request: ModelRequest): string {
  for (let index = request.messages.length - 1; index >= 0; index -= 1) {
    const message = request.messages[index]!;
    if (message.role === 'user') return message.text;
  }
  return '';
}
