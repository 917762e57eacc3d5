/** Options of the client-hook endpoint (`startHookEndpoint`): one declaration with their defaults and validation. */
import { defineOptions, type OptionsInput, option, type ResolvedOptions } from '../tasks/options.js';

/** The options of `startHookEndpoint`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
export const hookEndpointOptions = defineOptions('startHookEndpoint', {
  /**
   * How long a reservation waits for the hook's commit before it goes back to the queue, in ms (1 to
   * 3600000). Default 30000.
   */
  leaseMs: option.integer({ min: 1, max: 3_600_000, default: 30_000 }),
  /**
   * The longest end-of-turn hold a hook may ask for, in ms (0 to 86400000). Default 3600000 (1 hour: a
   * headless run is held for its running builds up to the hook's `--headless-wait-ms`, 30 minutes).
   */
  maxStopWaitMs: option.integer({ min: 0, max: 86_400_000, default: 3_600_000 }),
  /**
   * The longest a wake (Claude Code's background end-of-turn hook) may wait for the next ending, in ms
   * (0 to 604800000). Default 86400000 (a day).
   */
  maxWakeWaitMs: option.integer({ min: 0, max: 604_800_000, default: 86_400_000 }),
  /**
   * At the end of a turn, how long one hand-over waits for more endings about to land once one is
   * queued (or, with nothing queued and work running, after the hook asked), in ms (0 to 10000). Default 500.
   */
  gatherMs: option.integer({ min: 0, max: 10_000, default: 500 }),
  /**
   * After the last running task ended, how long an end-of-turn wait still waits for its notification to be
   * queued (the delivery policy reads the output tail first), in ms (0 to 60000). Default 2000.
   */
  endGraceMs: option.integer({ min: 0, max: 60_000, default: 2_000 }),
  /**
   * Notifications handed to one hook at most (1 to 10000); the rest follow at the next. The hook prints
   * those past its byte budget in a compact form. Default 1000.
   */
  maxNotificationsPerHook: option.integer({ min: 1, max: 10_000, default: 1000 }),
  /**
   * The byte cap of the task digest a hook hands over after a compaction (256 to 1048576; the hook's own
   * budget caps it too). Default 4096.
   */
  maxDigestBytes: option.integer({ min: 256, max: 1_048_576, default: 4096 }),
  /** Hook connections open at once (1 to 1024); more are closed at once (their hooks print nothing). Default 32. */
  maxConnections: option.integer({ min: 1, max: 1024, default: 32 }),
  /**
   * Whether a connection's peer is checked before it is served (`hook-peer-check.ts`): a process of the
   * same user, in this process's namespaces, not one of the runtime's commands, and — when the registered
   * client is known — one of the client's. Needs `ss` (iproute2). Default true.
   */
  authenticatePeers: option.boolean({ default: true }),
});

export type HookEndpointOptions = OptionsInput<typeof hookEndpointOptions.rules>;
export type ResolvedHookEndpointOptions = ResolvedOptions<typeof hookEndpointOptions.rules>;

/** The defaults of `HookEndpointOptions`. */
export const HOOK_ENDPOINT_DEFAULTS = hookEndpointOptions.defaults;
