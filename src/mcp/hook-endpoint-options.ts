/** Options of the client-hook endpoint (`startHookEndpoint`), their defaults and their validation. */
import { InvalidArgumentError } from '../tasks/index.js';
import { optionKeys, rejectUnknownOptions, type UnknownOptionsCheck } from '../tasks/option-keys.js';

export interface HookEndpointOptions {
  /** How long a reservation waits for the hook's commit before it goes back to the queue, in ms. Default 30000. */
  readonly leaseMs?: number;
  /** The longest end-of-turn wait a hook may ask for, in ms. Default 600000 (10 minutes). */
  readonly maxStopWaitMs?: number;
  /**
   * After the last running task ended, how long an end-of-turn wait still waits for its notification to be
   * queued (the delivery policy reads the output tail first), in ms. Default 2000.
   */
  readonly endGraceMs?: number;
  /** Notifications handed to one hook at most; the rest follow at the next. Default 10. */
  readonly maxNotificationsPerHook?: number;
  /** Hook connections open at once; more are closed at once (their hooks print nothing). Default 32. */
  readonly maxConnections?: number;
}

export const HOOK_ENDPOINT_OPTION_KEYS = optionKeys<HookEndpointOptions>()({
  leaseMs: true,
  maxStopWaitMs: true,
  endGraceMs: true,
  maxNotificationsPerHook: true,
  maxConnections: true,
});

export const HOOK_ENDPOINT_DEFAULTS = Object.freeze({
  leaseMs: 30_000,
  maxStopWaitMs: 600_000,
  endGraceMs: 2_000,
  maxNotificationsPerHook: 10,
  maxConnections: 32,
});

export type ResolvedHookEndpointOptions = Required<HookEndpointOptions>;

/** Validates and completes the options; `check` places them inside a caller's own (`hooks`). */
export function resolveHookEndpointOptions(
  options: HookEndpointOptions = {},
  check: UnknownOptionsCheck = { where: 'startHookEndpoint' },
): ResolvedHookEndpointOptions {
  rejectUnknownOptions(options, HOOK_ENDPOINT_OPTION_KEYS, check);
  const prefix = check.path === undefined ? '' : `${check.path}.`;
  const integer = (field: keyof HookEndpointOptions, minimum: number, maximum: number): number => {
    const value = options[field] ?? HOOK_ENDPOINT_DEFAULTS[field];
    if (!Number.isSafeInteger(value) || value < minimum || value > maximum) {
      throw new InvalidArgumentError(
        `${prefix}${field}`,
        `an integer from ${minimum} to ${maximum}`,
        options[field],
      );
    }
    return value;
  };
  return Object.freeze({
    leaseMs: integer('leaseMs', 1, 3_600_000),
    maxStopWaitMs: integer('maxStopWaitMs', 0, 86_400_000),
    endGraceMs: integer('endGraceMs', 0, 60_000),
    maxNotificationsPerHook: integer('maxNotificationsPerHook', 1, 1000),
    maxConnections: integer('maxConnections', 1, 1024),
  });
}
