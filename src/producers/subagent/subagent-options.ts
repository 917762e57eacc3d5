/** Options of the subagent producer, their defaults and their validation. */
import { type DeliveryPolicy, rejectUnknownPolicyOptions } from '../../notifications/index.js';
import {
  POLICY_OPTION_KEYS,
  type PolicyOptions,
  resolveSessionLimits,
  SESSION_LIMIT_KEYS,
  type Session,
  type SessionLimits,
} from '../../session/index.js';
import type { SessionStore } from '../../store/index.js';
import { consoleLogger, InvalidArgumentError, type Logger, type TaskService } from '../../tasks/index.js';
import {
  nestedCheck,
  optionKeys,
  rejectUnknownOptions,
  type UnknownOptionsCheck,
} from '../../tasks/option-keys.js';
import type { AnyToolDefinition } from '../../tools/index.js';
import {
  BASH_TOOL_OPTION_KEYS,
  type BashProducer,
  type BashToolOptions,
  type Clock,
  SUBAGENT_BACKGROUND_RUNTIME_CAP_MS,
  systemClock,
} from '../bash/index.js';
import {
  AGENT_PROFILE_KEYS,
  type AgentProfile,
  indexProfiles,
  isModelSource,
  type ModelSource,
} from './agent-profile.js';

/** What the `tools` factory knows about the child it builds tools for. */
export interface SubagentChildContext {
  readonly session: Session;
  /** The profile the child runs under, if any. */
  readonly profile: AgentProfile | undefined;
  /** 1 for a child of a top-level session, 2 for a grandchild, ... */
  readonly depth: number;
  readonly parentSessionId: string;
  /** The runtime cap a background command of this child must get (for tools built by the factory). */
  readonly backgroundBashRuntimeCapMs: number;
}

/**
 * Options of `createSubagentProducer`. A key not listed here (or in `bashTool`, `limits`, `notifications` or
 * a profile) is rejected with `UNKNOWN_OPTION`.
 */
export interface SubagentProducerOptions {
  readonly tasks: TaskService;
  /** Where child sessions and their history live (the parent's store). */
  readonly store: SessionStore;
  /** The model of a child whose profile names none. */
  readonly model: ModelSource;
  /** The system prompt of a child whose profile gives none. Default: none. */
  readonly systemPrompt?: string;
  readonly profiles?: readonly AgentProfile[];
  /**
   * Extra tools of every child (after the built-in ones). A profile's `tools` allowlist filters the
   * whole list by name.
   */
  readonly tools?: (child: SubagentChildContext) => readonly AnyToolDefinition[];
  /**
   * When given, children get a `bash` tool on this producer whose background commands are capped at
   * `backgroundBashRuntimeCapMs`.
   */
  readonly bash?: BashProducer;
  /** Options of the children's `bash` tool (the cap is always the producer's). */
  readonly bashTool?: Omit<BashToolOptions, 'producer' | 'backgroundRuntimeCapMs'>;
  /** The most a child's background command may run. Default 3600000 (one hour). */
  readonly backgroundBashRuntimeCapMs?: number;
  /** Whether children get task_output / task_list / task_kill for their own background work. Default true. */
  readonly taskTools?: boolean;
  /** How deep subagents may nest: 1 lets sessions start subagents that cannot start their own. Default 1. */
  readonly maxDepth?: number;
  /**
   * Whether a child that completed keeps its running background work (quietly: its notifications are
   * sealed; each command under its runtime cap) until that work ends. Default false: every run ends with
   * the child session closed, which stops whatever it left running. A cancelled or failed run always
   * stops its work.
   */
  readonly keepBackgroundWork?: boolean;
  /**
   * How long a person's (or a sweep's) stop waits for the subagent to end so it can report whether its
   * stop notification was queued. Default 5000 ms.
   */
  readonly stopSettleMs?: number;
  /**
   * The delivery policy of a parent session (for example `(id) => runtime.policyOf(id)`). With it, a
   * person's stop reports a stop notification that could not be queued (`STOP_NOTIFICATION_FAILED`).
   */
  readonly policyOf?: (sessionId: string) => DeliveryPolicy | undefined;
  /** Limits of child sessions (steps per turn, queue, tool result size). Default: the session defaults. */
  readonly limits?: SessionLimits;
  /** Delivery policy options of child sessions (their own background work). */
  readonly notifications?: PolicyOptions;
  /** The presentation budget of an agent task's model-facing text. Default: none (the controller's). */
  readonly outputLimitBytes?: number;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

/** Every key of `SubagentProducerOptions`; any other key is rejected with `UNKNOWN_OPTION`. */
export const SUBAGENT_PRODUCER_OPTION_KEYS = optionKeys<SubagentProducerOptions>()({
  tasks: true,
  store: true,
  model: true,
  systemPrompt: true,
  profiles: true,
  tools: true,
  bash: true,
  bashTool: true,
  backgroundBashRuntimeCapMs: true,
  taskTools: true,
  maxDepth: true,
  keepBackgroundWork: true,
  stopSettleMs: true,
  policyOf: true,
  limits: true,
  notifications: true,
  outputLimitBytes: true,
  clock: true,
  logger: true,
});

/** The keys `bashTool` takes: the bash tool's, but the producer and the cap, which the children's tool gets. */
const CHILD_BASH_TOOL_OPTION_KEYS = BASH_TOOL_OPTION_KEYS.filter(
  (key) => key !== 'producer' && key !== 'backgroundRuntimeCapMs',
);

export const SUBAGENT_DEFAULTS = Object.freeze({
  backgroundBashRuntimeCapMs: SUBAGENT_BACKGROUND_RUNTIME_CAP_MS,
  taskTools: true,
  maxDepth: 1,
  keepBackgroundWork: false,
  stopSettleMs: 5_000,
});

export interface ResolvedSubagentOptions {
  readonly tasks: TaskService;
  readonly store: SessionStore;
  readonly model: ModelSource;
  readonly systemPrompt: string | undefined;
  readonly profiles: ReadonlyMap<string, AgentProfile>;
  readonly tools: ((child: SubagentChildContext) => readonly AnyToolDefinition[]) | undefined;
  readonly bash: BashProducer | undefined;
  readonly bashTool: Omit<BashToolOptions, 'producer' | 'backgroundRuntimeCapMs'>;
  readonly backgroundBashRuntimeCapMs: number;
  readonly taskTools: boolean;
  readonly maxDepth: number;
  readonly keepBackgroundWork: boolean;
  readonly stopSettleMs: number;
  readonly policyOf: ((sessionId: string) => DeliveryPolicy | undefined) | undefined;
  readonly limits: SessionLimits | undefined;
  readonly notifications: PolicyOptions | undefined;
  readonly outputLimitBytes: number | undefined;
  readonly clock: Clock;
  readonly logger: Logger;
}

/**
 * Rejects keys of subagent producer options that `known` lacks, and unknown keys inside `bashTool`, `limits`,
 * `notifications` and each profile. A runtime that hands a caller's subagent options on checks them with
 * the keys the caller may give.
 */
export function rejectUnknownSubagentOptions(
  options: unknown,
  known: readonly string[],
  check: UnknownOptionsCheck,
): void {
  rejectUnknownOptions(options, known, check);
  if (typeof options !== 'object' || options === null) return;
  const { bashTool, limits, notifications, profiles } = options as Partial<SubagentProducerOptions>;
  const at = (key: string) => nestedCheck(check, key);
  rejectUnknownOptions(bashTool, CHILD_BASH_TOOL_OPTION_KEYS, at('bashTool'));
  rejectUnknownOptions(limits, SESSION_LIMIT_KEYS, at('limits'));
  rejectUnknownPolicyOptions(notifications, POLICY_OPTION_KEYS, at('notifications'));
  if (Array.isArray(profiles)) {
    profiles.forEach((profile: unknown, position) => {
      rejectUnknownOptions(profile, AGENT_PROFILE_KEYS, at(`profiles[${position}]`));
    });
  }
}

export function positiveInteger(field: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new InvalidArgumentError(field, 'a positive integer', value);
  }
  return value;
}

export function nonNegativeInteger(field: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new InvalidArgumentError(field, 'a non-negative integer', value);
  }
  return value;
}

export function booleanOption(field: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new InvalidArgumentError(field, 'a boolean', value);
  return value;
}

function optionalFunction<T>(field: string, value: T | undefined): T | undefined {
  if (value !== undefined && typeof value !== 'function')
    throw new InvalidArgumentError(field, 'a function', value);
  return value;
}

export function resolveSubagentOptions(options: SubagentProducerOptions): ResolvedSubagentOptions {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options', 'an object', options);
  }
  const where = 'createSubagentProducer';
  rejectUnknownSubagentOptions(options, SUBAGENT_PRODUCER_OPTION_KEYS, { where });
  if (options.bashTool !== undefined && (typeof options.bashTool !== 'object' || options.bashTool === null)) {
    throw new InvalidArgumentError('bashTool', 'an object of bash tool options', options.bashTool);
  }
  // Child runtimes are created later; their limits are checked now.
  if (options.limits !== undefined) resolveSessionLimits(options.limits, { where, path: 'limits' });
  if (typeof options.tasks?.start !== 'function') {
    throw new InvalidArgumentError('tasks', 'a TaskService', options.tasks);
  }
  if (typeof options.store?.createSession !== 'function') {
    throw new InvalidArgumentError('store', 'a SessionStore', options.store);
  }
  if (!isModelSource(options.model)) {
    throw new InvalidArgumentError('model', 'a ModelPort or a function returning one', options.model);
  }
  if (options.systemPrompt !== undefined && typeof options.systemPrompt !== 'string') {
    throw new InvalidArgumentError('systemPrompt', 'a string', options.systemPrompt);
  }
  if (options.bash !== undefined && typeof options.bash?.start !== 'function') {
    throw new InvalidArgumentError('bash', 'a BashProducer', options.bash);
  }
  if (options.clock !== undefined && typeof options.clock?.schedule !== 'function') {
    throw new InvalidArgumentError('clock', 'a Clock ({ now, schedule })', options.clock);
  }
  return {
    tasks: options.tasks,
    store: options.store,
    model: options.model,
    systemPrompt: options.systemPrompt,
    profiles: indexProfiles(options.profiles),
    tools: optionalFunction('tools', options.tools),
    bash: options.bash,
    bashTool: options.bashTool ?? {},
    backgroundBashRuntimeCapMs: positiveInteger(
      'backgroundBashRuntimeCapMs',
      options.backgroundBashRuntimeCapMs,
      SUBAGENT_DEFAULTS.backgroundBashRuntimeCapMs,
    ),
    taskTools: booleanOption('taskTools', options.taskTools, SUBAGENT_DEFAULTS.taskTools),
    maxDepth: positiveInteger('maxDepth', options.maxDepth, SUBAGENT_DEFAULTS.maxDepth),
    keepBackgroundWork: booleanOption(
      'keepBackgroundWork',
      options.keepBackgroundWork,
      SUBAGENT_DEFAULTS.keepBackgroundWork,
    ),
    stopSettleMs: nonNegativeInteger('stopSettleMs', options.stopSettleMs, SUBAGENT_DEFAULTS.stopSettleMs),
    policyOf: optionalFunction('policyOf', options.policyOf),
    limits: options.limits,
    notifications: options.notifications,
    outputLimitBytes:
      options.outputLimitBytes === undefined
        ? undefined
        : positiveInteger('outputLimitBytes', options.outputLimitBytes, 1),
    clock: options.clock ?? systemClock,
    logger: options.logger ?? consoleLogger,
  };
}
