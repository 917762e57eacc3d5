/**
 * Counts what a child run spends: a model port wrapper that sums the tokens of every response. Tool uses
 * and duration are counted by the run itself; together they are the subagent notification's usage.
 */
import type { ModelPort } from '../../session/index.js';

/** A subagent run's usage, as `detail.usage` (the subagent notification reads these keys). */
export interface SubagentUsage {
  /** Input plus output tokens over every model response of the run that reported usage. */
  readonly totalTokens: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** Tool calls the child made. */
  readonly toolUses: number;
  /** From the start of the run to its end, by the producer's clock. */
  readonly durationMs: number;
}

export interface MeteredModel {
  readonly model: ModelPort;
  readonly inputTokens: number;
  readonly outputTokens: number;
}

/** Wraps `model` so every response's usage is added up; requests and responses pass through unchanged. */
export function meterModel(model: ModelPort): MeteredModel {
  let inputTokens = 0;
  let outputTokens = 0;
  const metered: ModelPort = {
    name: model.name,
    async generate(request, signal) {
      const response = await model.generate(request, signal);
      const usage = response?.usage;
      if (usage) {
        if (Number.isFinite(usage.inputTokens)) inputTokens += usage.inputTokens;
        if (Number.isFinite(usage.outputTokens)) outputTokens += usage.outputTokens;
      }
      return response;
    },
  };
  return {
    model: metered,
    get inputTokens() {
      return inputTokens;
    },
    get outputTokens() {
      return outputTokens;
    },
  };
}
