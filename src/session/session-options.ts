/** Limits of the session runtime, their defaults and their validation. */
import { InvalidArgumentError } from '../tasks/index.js';

export interface SessionLimits {
  /** Model requests in one turn before it ends with `max_steps`. Default 50. */
  readonly maxStepsPerTurn?: number;
  /** Commands (inputs, notifications, configuration) one session may queue. Default 1000. */
  readonly maxQueuedCommands?: number;
  /** The largest tool result kept in the conversation, in UTF-8 bytes (head and tail kept). Default 65536. */
  readonly maxToolResultBytes?: number;
  /**
   * How long an idle session lets completions gather before one drain starts one turn. 0 (the default)
   * coalesces what lands in the same event-loop turn, which keeps exit-to-request latency in microseconds.
   */
  readonly idleDrainDelayMs?: number;
}

export type ResolvedSessionLimits = Required<SessionLimits>;

export const SESSION_LIMIT_DEFAULTS: ResolvedSessionLimits = Object.freeze({
  maxStepsPerTurn: 50,
  maxQueuedCommands: 1000,
  maxToolResultBytes: 64 * 1024,
  idleDrainDelayMs: 0,
});

export function resolveSessionLimits(limits: SessionLimits = {}): ResolvedSessionLimits {
  const resolved = { ...SESSION_LIMIT_DEFAULTS };
  for (const field of Object.keys(SESSION_LIMIT_DEFAULTS) as Array<keyof ResolvedSessionLimits>) {
    const value = limits[field];
    if (value === undefined) continue;
    const minimum = field === 'idleDrainDelayMs' ? 0 : 1;
    if (!Number.isSafeInteger(value) || value < minimum) {
      throw new InvalidArgumentError(
        `limits.${field}`,
        minimum === 0 ? 'a non-negative integer' : 'a positive integer',
        value,
      );
    }
    resolved[field] = value;
  }
  return resolved;
}
