/**
 * Options of the session runtime — its own, its `limits`, the delivery-policy options it takes for every
 * session, and those of `createSession` / `resumeSession`: one declaration each, with their defaults and
 * their validation.
 */
import { deliveryPolicyOptions } from '../notifications/index.js';
import type { ProcessSource } from '../process/index.js';
import type { StoredTask } from '../store/index.js';
import type { SessionStore } from '../store/session-store.js';
import {
  emitWarningLogger,
  MAX_TIMER_DELAY_MS,
  type Owner,
  type SessionId,
  systemClock,
  type TaskService,
  validateSessionId,
} from '../tasks/index.js';
import { defineOptions, type OptionsInput, option, type ResolvedOptions } from '../tasks/options.js';
import type { AnyToolDefinition } from '../tools/index.js';
import { tracingOption } from '../tracing/index.js';
import type { ModelPort } from './model-port.js';
import type { Session } from './session.js';
import { sessionLimitOptions } from './session-limits.js';

/**
 * The delivery-policy options a session runtime takes for every session (`notifications`): the policy's,
 * but those the runtime sets per session. A burst of notifications that starts one turn costs one
 * wake-up: `wakeCounting` defaults to `external` here.
 */
export const policyOptions = defineOptions('createSessionRuntime', {
  ...deliveryPolicyOptions.omit(
    'tasks',
    'owner',
    'enqueue',
    'currentBranchGeneration',
    'isShuttingDown',
    'isSealed',
    'logger',
    'now',
  ).rules,
  /**
   * What counts as a wake-up: `external` (the default here), one per turn that background results
   * started; `notification`, every notification handed on the wakeup lane.
   */
  wakeCounting: option.oneOf(['notification', 'external'], { default: 'external' }),
});

export type PolicyOptions = OptionsInput<typeof policyOptions.rules>;

const isModelOrFactory = (value: unknown) =>
  typeof value === 'function' || typeof (value as Partial<ModelPort> | null)?.generate === 'function';
const isEnvironment = (value: unknown) =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** An environment option: an object of variables. */
function environment() {
  return option.custom<Readonly<Record<string, string>>>('an object of environment variables', isEnvironment);
}

/** Options of the resume's reconciliation. A key not declared here is rejected with `UNKNOWN_OPTION`. */
export const reconcileOptions = defineOptions('createSessionRuntime', {
  /**
   * Re-registers a durable task for a resumed session (the bash producer's `adopt`; `createErrandRuntime`
   * wires it). Absent: durable tasks are left as they are, neither stopped nor called lost.
   */
  adoptDurable: option.func<(record: StoredTask, owner: Owner) => boolean>(),
  /**
   * Re-arms a live schedule for a resumed session from its stored definition (the schedule producer's
   * `resume`; `createErrandRuntime` wires it); false when the store holds no definition for it. Absent:
   * a schedule an earlier runtime left live is marked lost.
   */
  adoptSchedule: option.func<(record: StoredTask, owner: Owner) => boolean>(),
  /** Where processes are looked up. Default /proc. */
  processSource: option.shaped<ProcessSource>('a process source', ['read']),
  /** SIGTERM → SIGKILL grace when a leftover tree is stopped, 1 to 600000 ms. Default 2000. */
  killGraceMs: option.integer({ min: 1, max: 600_000, default: 2000 }),
});

export type ReconcileOptions = OptionsInput<typeof reconcileOptions.rules>;

/**
 * The options of `createSessionRuntime`. A key not declared here (or in `limits` or `notifications`) is
 * rejected with `UNKNOWN_OPTION`.
 */
export const sessionRuntimeOptions = defineOptions('createSessionRuntime', {
  store: option.required(option.shaped<SessionStore>('a SessionStore', ['createSession'])),
  /** The model every session talks to, or a factory per session. */
  model: option.required(
    option.custom<ModelPort | ((session: Session) => ModelPort)>(
      'a ModelPort or a factory of one',
      isModelOrFactory,
    ),
  ),
  /** Default: a new in-process task service whose ids continue after those in the store. */
  tasks: option.shaped<TaskService>('a TaskService', ['attachController', 'onTasksChanged']),
  /** The tools of a session (producers' tools and the task tools), built once per session. */
  tools: option.func<(session: Session) => readonly AnyToolDefinition[]>(),
  systemPrompt: option.string({ nonEmpty: false }),
  /** Default working directory of sessions. Default `process.cwd()`. */
  cwd: option.string(),
  /** Default environment of sessions. Default `process.env`. */
  env: environment(),
  /** Delivery policy options for every session (lanes, wake budget, output tail, formatters). */
  notifications: option.nested(policyOptions),
  limits: option.nested(sessionLimitOptions),
  /** Runs for a person's input before it is delivered; background-task turns skip it. */
  beforeUserPrompt: option.func<(text: string, session: Session) => string | undefined>(),
  /** Shutdown sweeps that run before a closing session's tasks are cancelled (e.g. stop workflow runs). */
  onSessionShutdown: option.func<(session: Session) => Promise<void> | void>(),
  /** Told about failures no caller sees. Default: `process.emitWarning`. */
  logger: option.logger({ default: emitWarningLogger }),
  /** Epoch milliseconds for the records sessions write. Default: the clock's `now`. */
  now: option.func<() => number>(),
  /** Schedules each session's idle drain and delivery retries. Default: the system clock. */
  clock: option.clock({ default: systemClock }),
  /**
   * Session residency: a session idle for this long (no turn running or due, nothing queued or
   * reserved, no live task of its own) is unloaded from memory; `loadSession` opens it again, through
   * `resumeSession`, with its conversation and ledger. A session with running background work is never
   * unloaded. In milliseconds (1 to 2147483647), or false for never. Default false: a `Session` object a
   * caller holds closes when its session unloads, so a host that keeps them turns this on knowingly.
   */
  unloadIdleAfterMs: option.orFalse(option.integer({ min: 1, max: MAX_TIMER_DELAY_MS }), { default: false }),
  /** How a resume checks and takes over the tasks a dead runtime left running (see `reconcile.ts`). */
  reconcile: option.nested(reconcileOptions),
  /**
   * Where sessions trace their turns (`invoke_agent`), model calls (`chat`), tool calls (`execute_tool`)
   * and notification deliveries (linked to the tasks' spans), and the default task service its tasks. A
   * `Tracing` (e.g. `openTelemetryTracing({ tracer })`), or false for none. Default: the global
   * OpenTelemetry API when `@opentelemetry/api` is installed, else none.
   */
  tracing: tracingOption(),
});

export type SessionRuntimeOptions = OptionsInput<typeof sessionRuntimeOptions.rules>;
export type ResolvedSessionRuntimeOptions = ResolvedOptions<typeof sessionRuntimeOptions.rules>;

const sessionId = () =>
  option.custom<string, SessionId>('a session id', () => true, { convert: validateSessionId });

/** The options of `createSession`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
export const createSessionOptions = defineOptions('createSession', {
  /** The session's id. Default `session-<uuid>`. */
  id: sessionId(),
  /** The session that started this one (a subagent's parent). */
  parentId: sessionId(),
  /** Working directory. Default: the runtime's `cwd`, else `process.cwd()`. */
  cwd: option.string(),
  /** Environment. Default: the runtime's `env`, else `process.env`. */
  env: environment(),
  /** A title for people (dashboards, session lists). Default none. */
  title: option.string({ nonEmpty: false }),
});

export type CreateSessionOptions = OptionsInput<typeof createSessionOptions.rules>;

/** The options of `resumeSession`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
export const resumeSessionOptions = defineOptions('resumeSession', {
  /** Environment of the resumed session. Default: the runtime's `env`, else `process.env`. */
  env: environment(),
});

export type ResumeSessionOptions = OptionsInput<typeof resumeSessionOptions.rules>;
