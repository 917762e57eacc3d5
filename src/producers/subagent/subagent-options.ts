/** Options of the subagent producer: one declaration with their defaults and their validation. */
import type { DeliveryPolicy } from '../../notifications/index.js';
import { policyOptions, type Session, sessionLimitOptions } from '../../session/index.js';
import type { SessionStore } from '../../store/index.js';
import { consoleLogger, type TaskService } from '../../tasks/index.js';
import { defineOptions, type OptionsInput, option, type ResolvedOptions } from '../../tasks/options.js';
import type { AnyToolDefinition } from '../../tools/index.js';
import {
  type BashProducer,
  bashToolOptions,
  durationRule,
  SUBAGENT_BACKGROUND_RUNTIME_CAP_MS,
  systemClock,
} from '../bash/index.js';
import {
  agentProfileOptions,
  indexProfiles,
  isModelSource,
  type ModelSource,
  type ResolvedAgentProfile,
} from './agent-profile.js';

/** What the `tools` factory knows about the child it builds tools for. */
export interface SubagentChildContext {
  readonly session: Session;
  /** The profile the child runs under, if any. */
  readonly profile: ResolvedAgentProfile | undefined;
  /** 1 for a child of a top-level session, 2 for a grandchild, ... */
  readonly depth: number;
  readonly parentSessionId: string;
  /** The runtime cap a background command of this child must get (for tools built by the factory). */
  readonly backgroundBashRuntimeCapMs: number;
}

/**
 * The options of the children's `bash` tool (`bashTool`): the bash tool's, but the producer and the cap,
 * which the children's tool always gets from the producer.
 */
const childBashToolOptions = defineOptions('createSubagentProducer', {
  ...bashToolOptions.omit('producer', 'backgroundRuntimeCapMs', 'clock').rules,
  /** Times auto-backgrounding. Default: the producer's clock. */
  clock: option.clock(),
});

/**
 * The options of `createSubagentProducer`. A key not declared here (or in `bashTool`, `limits`,
 * `notifications` or a profile) is rejected with `UNKNOWN_OPTION`.
 */
export const subagentProducerOptions = defineOptions('createSubagentProducer', {
  tasks: option.required(option.shaped<TaskService>('a TaskService', ['start'])),
  /** Where child sessions and their history live (the parent's store). */
  store: option.required(option.shaped<SessionStore>('a SessionStore', ['createSession'])),
  /** The model of a child whose profile names none. */
  model: option.required(
    option.custom<ModelSource>('a ModelPort or a function returning one', isModelSource),
  ),
  /** The system prompt of a child whose profile gives none. Default: none. */
  systemPrompt: option.string({ nonEmpty: false }),
  /** Named child configurations; two with one name are refused. Default: none. */
  profiles: option.transform(option.list(option.nested(agentProfileOptions), { default: [] }), indexProfiles),
  /**
   * Extra tools of every child (after the built-in ones). A profile's `tools` allowlist filters the
   * whole list by name.
   */
  tools: option.func<(child: SubagentChildContext) => readonly AnyToolDefinition[]>(),
  /**
   * When given, children get a `bash` tool on this producer whose background commands are capped at
   * `backgroundBashRuntimeCapMs`.
   */
  bash: option.shaped<BashProducer>('a BashProducer', ['start']),
  /** Options of the children's `bash` tool (the cap is always the producer's). */
  bashTool: option.nested(childBashToolOptions),
  /** The most a child's background command may run. Default 3600000 (one hour). */
  backgroundBashRuntimeCapMs: durationRule({ default: SUBAGENT_BACKGROUND_RUNTIME_CAP_MS }),
  /** Whether children get task_output / task_list / task_kill for their own background work. Default true. */
  taskTools: option.boolean({ default: true }),
  /** How deep subagents may nest: 1 lets sessions start subagents that cannot start their own. Default 1. */
  maxDepth: option.integer({ min: 1, default: 1 }),
  /**
   * Whether a child that completed keeps its running background work (quietly: its notifications are
   * sealed; each command under its runtime cap) until that work ends. Default false: every run ends with
   * the child session closed, which stops whatever it left running. A cancelled or failed run always
   * stops its work.
   */
  keepBackgroundWork: option.boolean({ default: false }),
  /**
   * How long a person's (or a sweep's) stop waits for the subagent to end so it can report whether its
   * stop notification was queued. Default 5000 ms.
   */
  stopSettleMs: option.integer({ min: 0, default: 5_000 }),
  /**
   * The delivery policy of a parent session (for example `(id) => runtime.policyOf(id)`). With it, a
   * person's stop reports a stop notification that could not be queued (`STOP_NOTIFICATION_FAILED`).
   */
  policyOf: option.func<(sessionId: string) => DeliveryPolicy | undefined>(),
  /** Limits of child sessions (steps per turn, queue, tool result size). Default: the session defaults. */
  limits: option.nested(sessionLimitOptions),
  /** Delivery policy options of child sessions (their own background work). */
  notifications: option.nested(policyOptions),
  /** The presentation budget of an agent task's model-facing text. Default: none (the controller's). */
  outputLimitBytes: option.integer({ min: 1 }),
  /** Times runs and child sessions. Default: the system clock. */
  clock: option.clock({ default: systemClock }),
  /** Told about failures no caller sees. Default: the console logger. */
  logger: option.logger({ default: consoleLogger }),
});

/** Options of `createSubagentProducer`. */
export type SubagentProducerOptions = OptionsInput<typeof subagentProducerOptions.rules>;
export type ResolvedSubagentOptions = ResolvedOptions<typeof subagentProducerOptions.rules>;

/** The fixed defaults of `SubagentProducerOptions`. */
export const SUBAGENT_DEFAULTS = subagentProducerOptions.defaults;
