/**
 * The options of `createErrandRuntime`: its own and, nested, those of every part it assembles — each part's
 * own declaration less the keys the runtime sets itself — so one `resolve` checks them all, unknown keys
 * included, before anything is opened.
 */
import { backgroundEventFeedOptions } from '../events/index.js';
import { taskMonitorsOptions } from '../notifications/index.js';
import { personNotifierOptions } from '../notify-person/index.js';
import { resourceLimitsOption, sandboxOption } from '../process/index.js';
import { OUTPUT_SNAPSHOT_BYTES } from '../producers/bash/executor-options.js';
import { bashExecutorOptions, bashProducerOptions, bashToolOptions } from '../producers/bash/index.js';
import { ptyProducerOptions } from '../producers/pty/index.js';
import { scheduleProducerOptions } from '../producers/schedule/index.js';
import {
  agentToolOptions,
  isModelSource,
  type ModelSource,
  subagentProducerOptions,
} from '../producers/subagent/index.js';
import { workflowProducerOptions } from '../producers/workflow/index.js';
import { redisProviderOptions } from '../redis/redis-options.js';
import { taskServiceOptions } from '../registry/index.js';
import { policyOptions, type Session, sessionLimitOptions, sessionRuntimeOptions } from '../session/index.js';
import type { SessionStore } from '../store/index.js';
import { InvalidArgumentError } from '../tasks/index.js';
import { defineOptions, type OptionsInput, option, type ResolvedOptions } from '../tasks/options.js';
import { type AnyToolDefinition, taskToolsOptions } from '../tools/index.js';
import { tracingOption } from '../tracing/index.js';
import type { ErrandRuntime } from './assembled-runtime.js';

/** The options of the runtime's lifeline (`lifeline`). */
export const lifelineOptions = defineOptions('createErrandRuntime', {
  /** How long the sidecar waits between SIGTERM and SIGKILL when the runtime died, 1 to 60000 ms. Default 500. */
  killGraceMs: option.integer({ min: 1, max: 60_000, default: 500 }),
  /** Restarts of a sidecar that died, per minute, before the runtime gives up on it. Default 5. */
  maxRestartsPerMinute: option.integer({ min: 0, default: 5 }),
  /**
   * How long the sidecar may take to answer a ping while it watches trees, 100 to 600000 ms, before it is
   * taken for dead (stopped, wedged), killed and started again. Default 5000.
   */
  answerTimeoutMs: option.integer({ min: 100, max: 600_000, default: 5000 }),
});

export type RuntimeLifelineOptions = OptionsInput<typeof lifelineOptions.rules>;
/** The lifeline's resolved options, or false when it is off. */
export type ResolvedRuntimeLifeline = ResolvedOptions<typeof lifelineOptions.rules> | false;

/** The runtime's `bash`: the executor's options, and the producer's and the tool's but what the runtime sets. */
const bashPartOptions = defineOptions('createErrandRuntime', {
  executor: option.nested(bashExecutorOptions),
  producer: option.nested(bashProducerOptions.omit('tasks', 'executor')),
  tool: option.nested(bashToolOptions.omit('producer')),
});

/** The runtime's `subagents`: the producer's options but what the runtime sets, and the agent tool's wait. */
const subagentPartOptions = defineOptions('createErrandRuntime', {
  ...subagentProducerOptions.omit('tasks', 'store', 'bash', 'policyOf', 'model').rules,
  /** The subagents' model. Default: the runtime's `model` when that is a port (required when it is a factory). */
  model: option.custom<ModelSource>('a ModelPort or a function returning one', isModelSource),
  /** A foreground subagent still running after this long moves to the background; false never. Default false. */
  autoBackgroundMs: agentToolOptions.rules.autoBackgroundMs,
});

/**
 * The options of `createErrandRuntime`. A key not declared here, or one its part's options lack inside
 * `tasks`, `bash`, `pty`, `taskTools`, `subagents`, `workflows`, `notifications`, `limits` or `events`, is
 * rejected with `UNKNOWN_OPTION` before anything is opened. Keys the runtime sets itself (a part's `tasks`,
 * `store`, `executor`, ...) are not options of those objects.
 */
export const errandRuntimeOptions = defineOptions(
  'createErrandRuntime',
  {
    /** The model every session talks to, or a factory per session. */
    model: sessionRuntimeOptions.rules.model,
    /** Default: the SQLite store in `home` (`$ERRAND_HOME`, else `~/.errand`). */
    store: option.shaped<SessionStore>('a SessionStore', ['createSession']),
    /** The data directory of the default store. */
    home: option.string(),
    /** Placed before the task tools' guidance in every session's system prompt. */
    systemPrompt: sessionRuntimeOptions.rules.systemPrompt,
    /** Default working directory of sessions. Default `process.cwd()`. */
    cwd: sessionRuntimeOptions.rules.cwd,
    /** Default environment of sessions. Default `process.env`. */
    env: sessionRuntimeOptions.rules.env,
    tasks: option.nested(taskServiceOptions),
    /**
     * The sandbox every bash command and pty program of the runtime runs in (workflow command steps and
     * subagents' bash included): a profile (`read-only`, `workspace-write`, `full`), `{ profile, network }`,
     * or a `Sandbox`, enforced by bubblewrap. `bash.executor.sandbox`, `bash.tool.sandbox` and
     * `pty.sandbox` override it for their part. When a profile needs bwrap and it is missing the runtime is
     * not created (`SANDBOX_UNAVAILABLE`, naming Debian's `bubblewrap` package). Default: none.
     */
    sandbox: sandboxOption(),
    /**
     * Resource limits of every bash command and pty program of the runtime (not durable or remote ones):
     * `{ task, session, mechanism, cgroupRoot, pollMs }`, `task` each command's own and `session` the total
     * of one session's commands, each `{ memoryBytes, cpuTimeMs, cpus, pids }`. The mechanism (cgroup v2,
     * cgroup v1, else `setrlimit`) is detected once, when the runtime is created; a command past a limit
     * is stopped with reason `memory_limit`, `cpu_limit` or `pids_limit`. `bash.executor.resourceLimits`
     * and `pty.resourceLimits` override it for their part. Default: none. See docs/limits.md.
     */
    resourceLimits: resourceLimitsOption(),
    bash: option.nested(bashPartOptions),
    /**
     * Scale-out: background bash commands run on `errand worker`s through this Redis (foreground ones stay
     * here), and task ids are reserved there, unique across every runtime of the deployment (`prefix`).
     * Needs the optional package `ioredis`. Default: off, everything runs here.
     */
    redis: option.nested(redisProviderOptions, { optional: true }),
    /**
     * Options of the schedule producer (the `schedule` tool and `schedule-N` tasks), or false to leave it
     * out. Its firings are automated turns of the session: they need a model in the loop. Default: on.
     */
    schedules: option.orFalse(option.nested(scheduleProducerOptions.omit('tasks', 'sessionOf'))),
    /**
     * How a schedule's firing reaches its session: `turns` (an automated turn with the schedule's tools) or
     * `notifications` (a `<task-notification>` with status `fired`, for a model outside the runtime: an MCP
     * client). Default `turns`; `createMcpRuntime` uses `notifications`.
     */
    scheduleFirings: option.oneOf(['turns', 'notifications'] as const, { default: 'turns' }),
    /** Options of the pty producer, or false to leave it out. Default: on when node-pty loads. */
    pty: option.orFalse(option.nested(ptyProducerOptions.omit('tasks'))),
    /** Options of the task tools; `monitors` sets the limits of `task_monitor` (the runtime delivers its lines). */
    taskTools: option.nested(
      defineOptions('createErrandRuntime', {
        ...taskToolsOptions.omit('tasks', 'recorded', 'monitors').rules,
        monitors: option.nested(taskMonitorsOptions.omit('tasks', 'notify'), { optional: true }),
      }),
    ),
    /**
     * Subagents (the `agent` and `agent_message` tools), or false to leave them out. Their model defaults
     * to `model` when that is a port; give `subagents.model` when `model` is a per-session factory.
     */
    subagents: option.orFalse(option.nested(subagentPartOptions)),
    /** Workflow runs (the `workflow_*` tools). Only scripts inside `directory` ever load. Default: off. */
    workflows: option.nested(
      workflowProducerOptions.omit('tasks', 'store', 'subagents', 'executor', 'policyOf'),
    ),
    /** Delivery-policy options. Default: workflows stopped by the model are notified (they read "amend it"). */
    notifications: option.nested(policyOptions),
    /**
     * How much of a finished bash task's newest output is read for its notification's `<output-tail>`, in
     * bytes (at most 8192, the most a non-consuming read returns); `notifications.outputTail` then trims it.
     * A pty task's tail is its final screen, bounded by the pty producer's `maxScreenBytes`. Default 4096.
     */
    notificationTailReadBytes: option.integer({ min: 1, max: OUTPUT_SNAPSHOT_BYTES, default: 4096 }),
    limits: option.nested(sessionLimitOptions),
    /**
     * Session residency: sessions idle this long (no turn, nothing queued, no running work of their own)
     * are unloaded from memory and reopened by `loadSession` through the resume path; false for never.
     * Default false. See `SessionRuntimeOptions.unloadIdleAfterMs`.
     */
    unloadIdleAfterMs: sessionRuntimeOptions.rules.unloadIdleAfterMs,
    /**
     * How often the runtime reads the store for commands a person addressed to it from another process
     * (`errand serve`'s Stop), in ms (at most 3600000), or false for never. Each read is one indexed
     * SELECT. Default 500 — except on a store whose `capabilities.sharedAcrossProcesses` is false (the
     * in-memory store), which no other process can write: there the default is false.
     */
    commandPollMs: option.orFalse(option.integer({ min: 1, max: 3_600_000 })),
    /**
     * A command read later than this after it was submitted is expired instead of run (whoever asked gave
     * up long before), in ms. Default 60000.
     */
    commandMaxAgeMs: option.integer({ min: 1, default: 60_000 }),
    /**
     * At its start the runtime removes the output directories (bash and pty) that a runtime which died
     * without removing them left behind, once nothing in them changed for this long, in ms; or false to
     * keep them. Until then a resumed session still reads its tasks' output and exit statuses from them.
     * Only directories whose name says which process made them, when that process no longer runs, owned
     * by this user. Default 7 days.
     */
    leftoverOutputMaxAgeMs: option.orFalse(option.integer({ min: 0, default: 7 * 24 * 60 * 60 * 1000 })),
    /**
     * Notifications for the person (docs/person-notifications.md): a signed `webhook`, the `desktop`
     * (`notify-send`), the dashboard page's `browser` notifications, each with filters and a rate limit;
     * the feed is the runtime's own. Absent: none is sent (the dashboard still shows everything).
     */
    notifyPerson: option.nested(personNotifierOptions.omit('feed'), { optional: true }),
    /** The event feed's options; its `tasks` and `ledger` are the runtime's own. */
    events: option.nested(backgroundEventFeedOptions.omit('tasks', 'ledger')),
    /**
     * The lifeline: a small sidecar process, started with the runtime, that stops every process of the
     * runtime's non-durable work within moments when the runtime dies by any means (SIGKILL included):
     * its options, true for the defaults, or false for none. Linux only (it needs /proc); elsewhere it is
     * off. Default on.
     */
    lifeline: option.custom<RuntimeLifelineOptions | boolean, ResolvedRuntimeLifeline>(
      'an object of lifeline options, or a boolean',
      (value) => typeof value === 'boolean' || (typeof value === 'object' && value !== null),
      {
        convert: (value, path, where) =>
          value === false ? false : lifelineOptions.resolve(value === true ? {} : value, { where, path }),
        fallback: () => lifelineOptions.resolve({}),
      },
    ),
    /**
     * Whether the bash tool's background commands are durable: they write their output file directly,
     * their exit status is captured, they keep running when the runtime dies or exits, and a resumed
     * session re-attaches them (same id, owner and read cursor). Default false: background work stops
     * with the runtime that started it, which is what "no orphaned processes" promises; turn it on for
     * work that must survive a restart (a deploy, a long build). `bash.tool.durable` wins over it.
     */
    durable: option.boolean({ default: false }),
    /**
     * OpenTelemetry tracing of tasks, turns, model and tool calls and notification deliveries: a
     * `Tracing` (e.g. `openTelemetryTracing({ tracer })`), or false for none. Default: the global
     * OpenTelemetry API when `@opentelemetry/api` is installed (spans go to whatever provider the
     * application registered), else none. `tasks.tracing` overrides it for the task service.
     */
    tracing: tracingOption(),
    /** More tools for a session (a harness's own), after Errand's. */
    tools: option.func<(session: Session, runtime: ErrandRuntime) => readonly AnyToolDefinition[]>(),
    /** Told about failures no caller sees. Default: each part's own. */
    logger: option.logger(),
  },
  {
    check({ model, subagents }, path) {
      if (subagents !== false && subagents.model === undefined && typeof model === 'function') {
        throw new InvalidArgumentError(
          `${path('subagents')}.model`,
          'a model for subagents when `model` is a factory',
          undefined,
        );
      }
    },
  },
);

/** Options of `createErrandRuntime`. */
export type ErrandRuntimeOptions = OptionsInput<typeof errandRuntimeOptions.rules>;
export type ResolvedErrandRuntimeOptions = ResolvedOptions<typeof errandRuntimeOptions.rules>;

/** Defaults of the runtime's own options (the parts' options have their own defaults). */
export const ERRAND_RUNTIME_DEFAULTS = Object.freeze({
  notificationTailReadBytes: errandRuntimeOptions.defaults.notificationTailReadBytes,
  commandPollMs: 500,
  commandMaxAgeMs: errandRuntimeOptions.defaults.commandMaxAgeMs,
  leftoverOutputMaxAgeMs: errandRuntimeOptions.defaults.leftoverOutputMaxAgeMs,
  durable: errandRuntimeOptions.defaults.durable,
});
