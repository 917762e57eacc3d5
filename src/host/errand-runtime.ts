/**
 * A complete Errand runtime in one call: the task service, the store, the session runtime, the bash and
 * pty producers with their tools, the task tools and stop dispatch, the background event feed and a
 * dashboard backend. The MCP server, `errand serve`, `errand demo` and `errand chat` are built on it.
 */

import { BACKGROUND_EVENT_FEED_OPTION_KEYS } from '../events/feed-options.js';
import {
  type BackgroundEventFeed,
  type BackgroundEventFeedOptions,
  createBackgroundEventFeed,
} from '../events/index.js';
import { rejectUnknownPolicyOptions } from '../notifications/index.js';
import { resolveSandbox, type SandboxSetting } from '../process/index.js';
import {
  BASH_PRODUCER_OPTION_KEYS,
  type BashProducer,
  type BashProducerOptions,
  createBashProducer,
} from '../producers/bash/bash-producer.js';
import {
  BASH_TOOL_OPTION_KEYS,
  type BashTool,
  type BashToolOptions,
  createBashTool,
} from '../producers/bash/bash-tool.js';
import { BashExecutor } from '../producers/bash/executor.js';
import {
  BASH_EXECUTOR_OPTION_KEYS,
  type BashExecutorOptions,
  OUTPUT_SNAPSHOT_BYTES,
} from '../producers/bash/executor-options.js';
import {
  createPtyProducer,
  createPtyTools,
  isPtyAvailable,
  type PtyProducer,
  type PtyProducerOptions,
} from '../producers/pty/index.js';
import { PTY_PRODUCER_OPTION_KEYS, PTY_RENAMED_OPTIONS } from '../producers/pty/options.js';
import {
  type AgentTool,
  createAgentMessageTool,
  createAgentTool,
  createSubagentProducer,
  type ModelSource,
  type SubagentProducer,
  type SubagentProducerOptions,
} from '../producers/subagent/index.js';
import {
  rejectUnknownSubagentOptions,
  SUBAGENT_PRODUCER_OPTION_KEYS,
} from '../producers/subagent/subagent-options.js';
import {
  createWorkflowProducer,
  createWorkflowTools,
  type WorkflowProducer,
  type WorkflowProducerOptions,
  workflowShutdownSweep,
} from '../producers/workflow/index.js';
import { WORKFLOW_PRODUCER_OPTION_KEYS } from '../producers/workflow/workflow-options.js';
import { createTaskService, type TaskServiceOptions } from '../registry/index.js';
import { TASK_SERVICE_OPTION_KEYS } from '../registry/options.js';
import type { DashboardBackend } from '../server/index.js';
import {
  type CreateSessionOptions,
  createSessionRuntime,
  lastSequences,
  type ModelPort,
  POLICY_OPTION_KEYS,
  type PolicyOptions,
  SESSION_LIMIT_KEYS,
  type Session,
  type SessionLimits,
  type SessionRuntime,
  storeSequenceBlocks,
} from '../session/index.js';
import { openSqliteSessionStore, type SessionStore } from '../store/index.js';
import {
  createTrustedCaller,
  InvalidArgumentError,
  type Logger,
  parseTaskId,
  systemClock,
  type TaskService,
  type TaskSnapshot,
} from '../tasks/index.js';
import {
  nestedCheck,
  optionKeys,
  rejectUnknownOptions,
  type UnknownOptionsCheck,
} from '../tasks/option-keys.js';
import { truncateUtf8Tail, utf8ByteLength } from '../text/index.js';
import {
  type AnyToolDefinition,
  createTaskTools,
  type StopDispatch,
  TASK_TOOLS_OPTION_KEYS,
  type TaskTools,
  type TaskToolsOptions,
  taskToolsPrompt,
} from '../tools/index.js';
import { isTracing, resolveTracing, type Tracing, type TracingSetting } from '../tracing/index.js';
import { startCommandPoller } from './command-poller.js';
import { createRuntimeDashboard } from './runtime-dashboard.js';

const trusted = createTrustedCaller('errand-runtime');

/** Defaults of the runtime's own options (the parts' options have their own defaults). */
export const ERRAND_RUNTIME_DEFAULTS = Object.freeze({
  notificationTailReadBytes: 4096,
  commandPollMs: 500,
  commandMaxAgeMs: 60_000,
});

/**
 * Options of `createErrandRuntime`. A key not listed here, or one its part's options lack inside `tasks`,
 * `bash`, `pty`, `taskTools`, `subagents`, `workflows`, `notifications`, `limits` or `events`, is rejected
 * with `UNKNOWN_OPTION` before anything is opened. Keys the runtime sets itself (a part's `tasks`, `store`,
 * `executor`, ...) are not options of those objects.
 */
export interface ErrandRuntimeOptions {
  /** The model every session talks to, or a factory per session. */
  readonly model: ModelPort | ((session: Session) => ModelPort);
  /** Default: the SQLite store in `home` (`$ERRAND_HOME`, else `~/.errand`). */
  readonly store?: SessionStore;
  /** The data directory of the default store. */
  readonly home?: string;
  /** Placed before the task tools' guidance in every session's system prompt. */
  readonly systemPrompt?: string;
  /** Default working directory of sessions. Default `process.cwd()`. */
  readonly cwd?: string;
  /** Default environment of sessions. Default `process.env`. */
  readonly env?: Readonly<Record<string, string>>;
  readonly tasks?: TaskServiceOptions;
  /**
   * The sandbox every bash command and pty program of the runtime runs in (workflow command steps and
   * subagents' bash included): a profile (`read-only`, `workspace-write`, `full`), `{ profile, network }`,
   * or a `Sandbox`, enforced by bubblewrap. `bash.executor.sandbox`, `bash.tool.sandbox` and
   * `pty.sandbox` override it for their part. When a profile needs bwrap and it is missing the runtime is
   * not created (`SANDBOX_UNAVAILABLE`, naming Debian's `bubblewrap` package). Default: none.
   */
  readonly sandbox?: SandboxSetting;
  readonly bash?: {
    readonly executor?: BashExecutorOptions;
    readonly producer?: Omit<BashProducerOptions, 'tasks' | 'executor'>;
    readonly tool?: Omit<BashToolOptions, 'producer'>;
  };
  /** Options of the pty producer, or false to leave it out. Default: on when node-pty loads. */
  readonly pty?: Omit<PtyProducerOptions, 'tasks'> | false;
  readonly taskTools?: Omit<TaskToolsOptions, 'tasks'>;
  /**
   * Subagents (the `agent` and `agent_message` tools), or false to leave them out. Their model defaults
   * to `model` when that is a port; give `subagents.model` when `model` is a per-session factory.
   */
  readonly subagents?:
    | (Partial<Omit<SubagentProducerOptions, 'tasks' | 'store' | 'bash' | 'policyOf' | 'model'>> & {
        readonly model?: ModelSource;
        readonly autoBackgroundMs?: number | false;
      })
    | false;
  /** Workflow runs (the `workflow_*` tools). Only scripts inside `directory` ever load. Default: off. */
  readonly workflows?: Omit<
    WorkflowProducerOptions,
    'tasks' | 'store' | 'subagents' | 'executor' | 'policyOf'
  >;
  /** Delivery-policy options. Default: workflows stopped by the model are notified (they read "amend it"). */
  readonly notifications?: PolicyOptions;
  /**
   * How much of a finished bash task's newest output is read for its notification's `<output-tail>`, in
   * bytes (1 to 8192, the most a non-consuming read returns); `notifications.outputTail` then trims it. A
   * pty task's tail is its final screen, bounded by the pty producer's `maxScreenBytes`. Default 4096.
   */
  readonly notificationTailReadBytes?: number;
  readonly limits?: SessionLimits;
  /**
   * How often the runtime reads the store for commands a person addressed to it from another process
   * (`errand serve`'s Stop), in ms (1 to 3600000), or false for never. Each read is one indexed SELECT.
   * Default 500 — except on a store whose `capabilities.sharedAcrossProcesses` is false (the in-memory
   * store), which no other process can write: there the default is false.
   */
  readonly commandPollMs?: number | false;
  /**
   * A command read later than this after it was submitted is expired instead of run (whoever asked gave
   * up long before), in ms (at least 1). Default 60000.
   */
  readonly commandMaxAgeMs?: number;
  readonly events?: Omit<BackgroundEventFeedOptions, 'tasks'>;
  /**
   * OpenTelemetry tracing of tasks, turns, model and tool calls and notification deliveries: a
   * `Tracing` (e.g. `openTelemetryTracing({ tracer })`), or false for none. Default: the global
   * OpenTelemetry API when `@opentelemetry/api` is installed (spans go to whatever provider the
   * application registered), else none. `tasks.tracing` overrides it for the task service.
   */
  readonly tracing?: TracingSetting;
  /** More tools for a session (a harness's own), after Errand's. */
  readonly tools?: (session: Session, runtime: ErrandRuntime) => readonly AnyToolDefinition[];
  readonly logger?: Logger;
}

/** Every key of `ErrandRuntimeOptions`; any other key is rejected with `UNKNOWN_OPTION`. */
export const ERRAND_RUNTIME_OPTION_KEYS = optionKeys<ErrandRuntimeOptions>()({
  model: true,
  store: true,
  home: true,
  systemPrompt: true,
  cwd: true,
  env: true,
  tasks: true,
  sandbox: true,
  bash: true,
  pty: true,
  taskTools: true,
  subagents: true,
  workflows: true,
  notifications: true,
  notificationTailReadBytes: true,
  limits: true,
  commandPollMs: true,
  commandMaxAgeMs: true,
  events: true,
  tracing: true,
  tools: true,
  logger: true,
});

const BASH_PART_KEYS = optionKeys<NonNullable<ErrandRuntimeOptions['bash']>>()({
  executor: true,
  producer: true,
  tool: true,
});

/** A part's option keys less those the runtime sets itself. */
function without<Key extends string>(keys: readonly Key[], ...omitted: Key[]): readonly Key[] {
  return keys.filter((key) => !omitted.includes(key));
}

/** The keys each part takes from the runtime's options (the runtime supplies the rest). */
const PART_KEYS = {
  tasks: TASK_SERVICE_OPTION_KEYS,
  'bash.executor': BASH_EXECUTOR_OPTION_KEYS,
  'bash.producer': without(BASH_PRODUCER_OPTION_KEYS, 'tasks', 'executor'),
  'bash.tool': without(BASH_TOOL_OPTION_KEYS, 'producer'),
  pty: without(PTY_PRODUCER_OPTION_KEYS, 'tasks'),
  taskTools: without(TASK_TOOLS_OPTION_KEYS, 'tasks'),
  subagents: [
    ...without(SUBAGENT_PRODUCER_OPTION_KEYS, 'tasks', 'store', 'bash', 'policyOf'),
    'autoBackgroundMs',
  ],
  workflows: without(WORKFLOW_PRODUCER_OPTION_KEYS, 'tasks', 'store', 'subagents', 'executor', 'policyOf'),
  events: without(BACKGROUND_EVENT_FEED_OPTION_KEYS, 'tasks'),
} as const;

/**
 * Rejects an unknown key of runtime options (`known`: the keys the caller may give) or of a part's, before
 * anything is opened. `check.path` places the options inside the caller's own (`runtime`).
 */
export function rejectUnknownRuntimeOptions(
  options: unknown,
  known: readonly string[],
  check: UnknownOptionsCheck,
): void {
  rejectUnknownOptions(options, known, check);
  if (typeof options !== 'object' || options === null) return;
  const parts = options as ErrandRuntimeOptions;
  const at = (key: string) => nestedCheck(check, key);
  rejectUnknownOptions(parts.tasks, PART_KEYS.tasks, at('tasks'));
  rejectUnknownOptions(parts.bash, BASH_PART_KEYS, at('bash'));
  const bash = typeof parts.bash === 'object' && parts.bash !== null ? parts.bash : {};
  rejectUnknownOptions(bash.executor, PART_KEYS['bash.executor'], at('bash.executor'));
  rejectUnknownOptions(bash.producer, PART_KEYS['bash.producer'], at('bash.producer'));
  rejectUnknownOptions(bash.tool, PART_KEYS['bash.tool'], at('bash.tool'));
  rejectUnknownOptions(parts.pty, PART_KEYS.pty, { ...at('pty'), renamed: PTY_RENAMED_OPTIONS });
  rejectUnknownOptions(parts.taskTools, PART_KEYS.taskTools, at('taskTools'));
  rejectUnknownSubagentOptions(parts.subagents, PART_KEYS.subagents, at('subagents'));
  rejectUnknownOptions(parts.workflows, PART_KEYS.workflows, at('workflows'));
  rejectUnknownPolicyOptions(parts.notifications, POLICY_OPTION_KEYS, at('notifications'));
  rejectUnknownOptions(parts.limits, SESSION_LIMIT_KEYS, at('limits'));
  rejectUnknownOptions(parts.events, PART_KEYS.events, at('events'));
}

export interface ErrandRuntime {
  readonly tasks: TaskService;
  readonly store: SessionStore;
  readonly sessions: SessionRuntime;
  readonly executor: BashExecutor;
  readonly bash: BashProducer;
  readonly bashTool: BashTool;
  /** Absent when node-pty is not installed or was turned off. */
  readonly pty: PtyProducer | undefined;
  /** Absent when subagents were turned off. */
  readonly subagents: SubagentProducer | undefined;
  readonly agentTool: AgentTool | undefined;
  /** Absent unless `workflows` was configured. */
  readonly workflows: WorkflowProducer | undefined;
  readonly taskTools: TaskTools;
  readonly stop: StopDispatch;
  readonly events: BackgroundEventFeed;
  readonly dashboard: DashboardBackend;
  /** The system prompt every session gets. */
  readonly systemPrompt: string;
  /** Where the runtime's spans go (`NOOP_TRACING` when off); surfaces on top trace their calls with it. */
  readonly tracing: Tracing;
  createSession(options?: CreateSessionOptions): Session;
  resumeSession(id: string): Session;
  /**
   * The newest output of a bash or pty task, at most `maxBytes` (default 8192) on a UTF-8 boundary,
   * without consuming it. For a pty task it is the end of the rendered screen, and `totalBytes` the
   * screen's size.
   */
  outputSnapshot(taskId: string, maxBytes?: number): { text: string; totalBytes?: number } | undefined;
  /**
   * Reads and answers the commands addressed to this runtime now (what each `commandPollMs` tick does);
   * resolves once they are answered. Does nothing when polling is off or the runtime is disposed.
   */
  pollCommands(): Promise<void>;
  /** Closes every session (stopping their work), then the producers, the service and an owned store. */
  dispose(): Promise<void>;
}

export async function createErrandRuntime(options: ErrandRuntimeOptions): Promise<ErrandRuntime> {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options', 'an object', options);
  }
  rejectUnknownRuntimeOptions(options, ERRAND_RUNTIME_OPTION_KEYS, { where: 'createErrandRuntime' });
  const tailReadBytes =
    options.notificationTailReadBytes ?? ERRAND_RUNTIME_DEFAULTS.notificationTailReadBytes;
  if (!Number.isSafeInteger(tailReadBytes) || tailReadBytes < 1 || tailReadBytes > OUTPUT_SNAPSHOT_BYTES) {
    throw new InvalidArgumentError(
      'notificationTailReadBytes',
      `an integer from 1 to ${OUTPUT_SNAPSHOT_BYTES}`,
      options.notificationTailReadBytes,
    );
  }
  const commandPollMs =
    options.commandPollMs ??
    (options.store?.capabilities.sharedAcrossProcesses === false
      ? false
      : ERRAND_RUNTIME_DEFAULTS.commandPollMs);
  if (
    commandPollMs !== false &&
    (!Number.isSafeInteger(commandPollMs) || commandPollMs < 1 || commandPollMs > 3_600_000)
  ) {
    throw new InvalidArgumentError(
      'commandPollMs',
      'an integer from 1 to 3600000, or false',
      options.commandPollMs,
    );
  }
  const commandMaxAgeMs = options.commandMaxAgeMs ?? ERRAND_RUNTIME_DEFAULTS.commandMaxAgeMs;
  if (!Number.isSafeInteger(commandMaxAgeMs) || commandMaxAgeMs < 1) {
    throw new InvalidArgumentError('commandMaxAgeMs', 'a positive integer', options.commandMaxAgeMs);
  }
  if (options.tracing !== undefined && options.tracing !== false && !isTracing(options.tracing)) {
    throw new InvalidArgumentError(
      'tracing',
      'a Tracing (see openTelemetryTracing) or false',
      options.tracing,
    );
  }
  // Before anything is opened: a profile that needs a missing bwrap fails the whole runtime (never a part).
  const sandbox = options.sandbox === undefined ? undefined : resolveSandbox(options.sandbox, 'sandbox');
  const ownsStore = options.store === undefined;
  const store =
    options.store ?? openSqliteSessionStore(options.home === undefined ? {} : { home: options.home });
  const built: Array<() => unknown> = ownsStore ? [() => store.close()] : [];
  try {
    return await assembleRuntime(
      {
        ...options,
        ...(sandbox === undefined ? {} : { sandbox }),
        notificationTailReadBytes: tailReadBytes,
        commandPollMs,
        commandMaxAgeMs,
      },
      store,
      ownsStore,
      built,
    );
  } catch (error) {
    // Creation failed midway: release what was built, newest first, and the store this call opened.
    for (const release of built.reverse()) {
      try {
        await release();
      } catch {
        // The creation error is the one to report.
      }
    }
    throw error;
  }
}

/** Builds the parts in dependency order, recording in `built` how to release each one. */
async function assembleRuntime(
  options: ErrandRuntimeOptions & {
    readonly notificationTailReadBytes: number;
    readonly commandPollMs: number | false;
    readonly commandMaxAgeMs: number;
  },
  store: SessionStore,
  ownsStore: boolean,
  built: Array<() => unknown>,
): Promise<ErrandRuntime> {
  const sandbox = options.sandbox === undefined ? undefined : resolveSandbox(options.sandbox, 'sandbox');
  const tracing = resolveTracing(options.tracing);
  const tasks = createTaskService({
    initialSequences: lastSequences(store),
    sequenceBlocks: storeSequenceBlocks(store),
    tracing,
    ...options.tasks,
  });
  built.push(() => tasks.dispose());
  const executor = new BashExecutor({
    ...(sandbox === undefined ? {} : { sandbox }),
    ...options.bash?.executor,
  });
  built.push(() => executor.dispose());
  const bash = createBashProducer({ tasks, executor, ...options.bash?.producer });
  built.push(() => bash.dispose());
  const bashTool = createBashTool({ producer: bash, ...options.bash?.tool });
  const pty =
    options.pty !== false && (await isPtyAvailable())
      ? createPtyProducer({ tasks, ...(sandbox === undefined ? {} : { sandbox }), ...options.pty })
      : undefined;
  if (pty) built.push(() => pty.dispose());
  const ptyTools = pty ? createPtyTools(pty) : [];
  // They serve this runtime's sessions, which all get them; child sessions of subagents have their own.
  let sessions: SessionRuntime | undefined;
  const taskTools = createTaskTools({
    tasks,
    controllerScope: { serves: (owner) => sessions?.getSession(owner.sessionId)?.owner === owner },
    ...options.taskTools,
  });
  built.push(() => taskTools.dispose());
  // Ownerless work started through the runtime's producers is collected by the runtime's own caller
  // (`tasks`, the dashboard): the runtime serves it.
  built.push(tasks.attachController('errand-runtime', { ownerless: true }));
  // Filled once the session runtime exists; producers only call it later, for live sessions.
  let policyOf: SessionRuntime['policyOf'] = () => undefined;
  let subagents: SubagentProducer | undefined;
  let agentTool: AgentTool | undefined;
  if (options.subagents !== false) {
    const { model: childModel, autoBackgroundMs, ...subagentOptions } = options.subagents ?? {};
    const model = childModel ?? (typeof options.model === 'function' ? undefined : options.model);
    if (model === undefined) {
      throw new InvalidArgumentError(
        'subagents.model',
        'a model for subagents when `model` is a factory',
        childModel,
      );
    }
    subagents = createSubagentProducer({
      tasks,
      store,
      model,
      bash,
      policyOf: (id) => policyOf(id),
      ...(options.notifications ? { notifications: options.notifications } : {}),
      ...subagentOptions,
    });
    built.push(() => subagents?.dispose());
    subagents.registerStopStrategy(taskTools.stop);
    agentTool = createAgentTool({ producer: subagents, autoBackgroundMs: autoBackgroundMs ?? false });
  }
  const agentTools =
    subagents && agentTool ? [agentTool, createAgentMessageTool({ producer: subagents })] : [];
  const workflows = options.workflows
    ? createWorkflowProducer({
        tasks,
        store,
        executor,
        policyOf: (id) => policyOf(id),
        ...(subagents ? { subagents } : {}),
        ...(options.cwd ? { cwd: options.cwd } : {}),
        ...options.workflows,
      })
    : undefined;
  if (workflows) built.push(() => workflows.dispose());
  const workflowTools = workflows ? createWorkflowTools({ producer: workflows }).tools : [];
  const events = createBackgroundEventFeed({ tasks, ...options.events });
  built.push(() => events.dispose());
  const systemPrompt = [options.systemPrompt, taskToolsPrompt()].filter(Boolean).join('\n\n');

  const outputSnapshot = (taskId: string, maxBytes = 8192) => {
    const kind = parseTaskId(taskId)?.kind;
    if (kind === 'bash') {
      const view = bash.snapshot(taskId, trusted, maxBytes);
      return view ? { text: view.text, totalBytes: view.outputBytes } : undefined;
    }
    if (kind === 'pty' && pty) {
      try {
        const screen = pty.screen(taskId, trusted);
        return { text: truncateUtf8Tail(screen.text, maxBytes), totalBytes: utf8ByteLength(screen.text) };
      } catch {
        return undefined;
      }
    }
    return undefined;
  };

  let runtime: ErrandRuntime;
  sessions = createSessionRuntime({
    store,
    tasks,
    tracing,
    model: options.model,
    systemPrompt,
    ...(options.cwd ? { cwd: options.cwd } : {}),
    ...(options.env ? { env: options.env } : {}),
    ...(options.limits ? { limits: options.limits } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    notifications: {
      readOutputTail: (snapshot: TaskSnapshot) =>
        outputSnapshot(snapshot.id, options.notificationTailReadBytes)?.text,
      notifyModelStops: ['workflow'],
      ...options.notifications,
    },
    tools: (session) => [
      bashTool,
      ...ptyTools,
      ...taskTools.tools,
      ...agentTools,
      ...workflowTools,
      ...(options.tools?.(session, runtime) ?? []),
    ],
    ...(workflows ? { onSessionShutdown: workflowShutdownSweep(workflows) } : {}),
  });
  policyOf = (id) => sessions.policyOf(id);

  const dashboard = createRuntimeDashboard({
    store,
    tasks,
    sessions,
    events,
    stop: taskTools.stop,
    bashTool,
    agentTool,
    outputSnapshot,
  });

  const commands =
    options.commandPollMs === false
      ? undefined
      : startCommandPoller({
          store,
          runtime: sessions.instanceId,
          intervalMs: options.commandPollMs,
          maxAgeMs: options.commandMaxAgeMs,
          holdsSession: (sessionId) => sessions.getSession(sessionId) !== undefined,
          ownerOf: (workId) => tasks.list(trusted).find((task) => task.id === workId)?.ownerSessionId,
          stop: (workId) => dashboard.stopBackgroundWork(workId),
          moveToBackground: (workId) => dashboard.moveToBackground!(workId),
          now: systemClock.now,
          logger: options.logger ?? {
            warn: (message, context) =>
              process.emitWarning(
                `${message}${context ? ` ${JSON.stringify(context)}` : ''}`,
                'ErrandWarning',
              ),
          },
        });
  if (commands) built.push(() => commands.stop());

  let disposal: Promise<void> | undefined;
  runtime = {
    tasks,
    store,
    sessions,
    executor,
    bash,
    bashTool,
    pty,
    subagents,
    agentTool,
    workflows,
    taskTools,
    stop: taskTools.stop,
    events,
    dashboard,
    systemPrompt,
    tracing,
    createSession: (sessionOptions) => sessions.createSession(sessionOptions),
    resumeSession: (id) => sessions.resumeSession(id),
    outputSnapshot,
    pollCommands: () => commands?.poll() ?? Promise.resolve(),
    dispose() {
      disposal ??= (async () => {
        commands?.stop();
        // Sessions first: their shutdown blocks notifications, so the work stopped below wakes no agent.
        await sessions.dispose();
        await workflows?.dispose();
        await subagents?.dispose();
        taskTools.dispose();
        events.dispose();
        await pty?.dispose();
        bash.dispose();
        await tasks.dispose();
        await executor.dispose();
        // A session closing from inside its own turn (a tool that disposed the runtime) still writes
        // its end to the store once that turn unwinds: the store closes after it.
        if (ownsStore && sessions.listSessions().length === 0) store.close();
        else if (ownsStore) void sessions.whenAllClosed().then(() => store.close());
      })();
      return disposal;
    },
  };
  return runtime;
}
