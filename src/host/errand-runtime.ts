/**
 * A complete Errand runtime in one call: the task service, the store, the session runtime, the bash and
 * pty producers with their tools, the task tools and stop dispatch, the background event feed and a
 * dashboard backend. The MCP server, `errand serve`, `errand demo` and `errand chat` are built on it.
 */

import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createBackgroundEventFeed } from '../events/index.js';
import {
  hideFromSandboxes,
  Lifeline,
  limiterOf,
  memoizedSource,
  procfsSource,
  type Sandbox,
} from '../process/index.js';
import { BASH_OUTPUT_PREFIX, BashExecutor } from '../producers/bash/executor.js';
import { createBashProducer, createBashTool } from '../producers/bash/index.js';
import { createPtyProducer, createPtyTools, isPtyAvailable } from '../producers/pty/index.js';
import { PTY_OUTPUT_PREFIX } from '../producers/pty/pty-producer.js';
import { createScheduleTool, ScheduleProducer } from '../producers/schedule/index.js';
import {
  type AgentTool,
  createAgentMessageTool,
  createAgentTool,
  createSubagentProducer,
  type ModelSource,
  type SubagentProducer,
} from '../producers/subagent/index.js';
import {
  createWorkflowProducer,
  createWorkflowTools,
  workflowShutdownSweep,
} from '../producers/workflow/index.js';
import { RedisContext } from '../redis/redis-context.js';
import { redisTaskServiceOn } from '../redis/redis-task-service.js';
import { RemoteCommandDispatcher } from '../redis/remote-commands.js';
import { createTaskService, type TaskServiceOptions } from '../registry/index.js';
import {
  createSessionRuntime,
  notifyingSchedulePort,
  SESSION_LIMIT_DEFAULTS,
  type SessionLimits,
  type SessionRuntime,
  scheduleSessionPort,
  storeSequenceBlocks,
} from '../session/index.js';
import { isHolderLive } from '../session/session-holder.js';
import {
  openSqliteSessionStore,
  resolveDatabaseFile,
  resolveErrandHome,
  type SessionStore,
  type StoredTask,
} from '../store/index.js';
import {
  consoleLogger,
  createTrustedCaller,
  emitWarningLogger,
  type Logger,
  type Owner,
  parseTaskId,
  systemClock,
  type TaskSnapshot,
} from '../tasks/index.js';
import { truncateUtf8Tail, utf8ByteLength } from '../text/index.js';
import { AutomatedTurns, createTaskTools, taskToolsPrompt } from '../tools/index.js';
import type { Tracing } from '../tracing/index.js';
import type { ErrandRuntime } from './assembled-runtime.js';
import { startCommandPoller } from './command-poller.js';
import { durableAdopter } from './durable-adoption.js';
import {
  ERRAND_RUNTIME_DEFAULTS,
  type ErrandRuntimeOptions,
  errandRuntimeOptions,
  type ResolvedRuntimeLifeline,
} from './errand-runtime-options.js';
import { removeLeftoverOutput, stopLeftoverTrees } from './leftover-sweep.js';
import { startPersonNotices } from './person-notices.js';
import { createRuntimeDashboard } from './runtime-dashboard.js';
import { createRuntimeLedgerView } from './runtime-ledger-view.js';

const trusted = createTrustedCaller('errand-runtime');

export type { ErrandRuntime };
export { ERRAND_RUNTIME_DEFAULTS, type ErrandRuntimeOptions, errandRuntimeOptions };

export async function createErrandRuntime(options: ErrandRuntimeOptions): Promise<ErrandRuntime> {
  // Every part's options are checked here, before the store is opened.
  const { notificationTailReadBytes, commandMaxAgeMs, leftoverOutputMaxAgeMs, ...resolved } =
    errandRuntimeOptions.resolve(options);
  const commandPollMs =
    resolved.commandPollMs ??
    (options.store?.capabilities.sharedAcrossProcesses === false
      ? false
      : ERRAND_RUNTIME_DEFAULTS.commandPollMs);
  const ownsStore = options.store === undefined;
  const store =
    options.store ?? openSqliteSessionStore(options.home === undefined ? {} : { home: options.home });
  const built: Array<() => unknown> = ownsStore ? [() => store.close()] : [];
  try {
    return await assembleRuntime(
      {
        ...options,
        notificationTailReadBytes,
        commandPollMs,
        commandMaxAgeMs,
        leftoverOutputMaxAgeMs,
        lifeline: resolved.lifeline,
        durable: resolved.durable,
        sandbox: resolved.sandbox,
        tracing: resolved.tracing,
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
  options: Omit<ErrandRuntimeOptions, 'lifeline' | 'durable' | 'sandbox' | 'tracing'> & {
    readonly notificationTailReadBytes: number;
    readonly commandPollMs: number | false;
    readonly commandMaxAgeMs: number;
    readonly leftoverOutputMaxAgeMs: number | false;
    readonly lifeline: ResolvedRuntimeLifeline;
    readonly durable: boolean;
    readonly sandbox: Sandbox | undefined;
    readonly tracing: Tracing;
  },
  store: SessionStore,
  ownsStore: boolean,
  built: Array<() => unknown>,
): Promise<ErrandRuntime> {
  const logger: Logger = options.logger ?? emitWarningLogger;
  const unhide = hidePrivateFiles(options.home, ownsStore);
  built.push(unhide);
  const source = memoizedSource(procfsSource());
  // Started first and eagerly, so nothing this runtime spawns waits for it.
  const lifeline = startLifeline(options.lifeline, logger);
  if (lifeline) built.push(() => lifeline.release());
  const { sandbox, tracing } = options;
  // Detected once for the runtime (cgroup v2, v1, or setrlimit), shared by bash and pty.
  const limits = limiterOf(options.resourceLimits, { logger });
  if (limits) built.push(() => limits.limiter.dispose());
  // Filled once the session runtime exists; it refuses background work while the store refuses writes.
  let sessions: SessionRuntime | undefined;
  // Commands are spawned from this process (without a fork where the native helper can, so a large heap
  // costs a start nothing), unless the caller chose how to spawn.
  const executor = new BashExecutor({
    ...(lifeline ? { lifeline } : {}),
    ...(sandbox === undefined ? {} : { sandbox }),
    ...(limits ? { resourceLimits: limits.limiter } : {}),
    ...options.bash?.executor,
  });
  // Scale-out: opened before the task service, so it is released after it (its disposal settles remote work).
  const remote = await openRemoteCommands(options, executor, logger, built);
  const taskOptions: TaskServiceOptions = {
    // No initialSequences: the store's task_sequences holds the highest id per kind. Ids reserved in Redis
    // continue above it (read per kind when a block is fetched), so they never repeat the store's records.
    ...(remote ? {} : { sequenceBlocks: storeSequenceBlocks(store) }),
    tracing,
    ...options.tasks,
    startGuard: (request) => {
      options.tasks?.startGuard?.(request);
      sessions?.checkStart(request);
    },
  };
  const tasks = remote
    ? redisTaskServiceOn(remote.context, remote.idBlockSize, withoutBlocks(taskOptions), (kind) =>
        store.lastTaskSequence(kind),
      )
    : createTaskService(taskOptions);
  built.push(() => tasks.dispose());
  built.push(() => executor.dispose());
  const bash = createBashProducer({
    tasks,
    executor,
    ...(remote ? { remote: remote.dispatcher } : {}),
    ...options.bash?.producer,
  });
  built.push(() => bash.dispose());
  const { durable } = options;
  const bashTool = createBashTool({ producer: bash, durable, ...options.bash?.tool });
  const pty =
    options.pty !== false && (await isPtyAvailable())
      ? createPtyProducer({
          tasks,
          ...(lifeline ? { lifeline } : {}),
          ...(sandbox === undefined ? {} : { sandbox }),
          ...(limits ? { resourceLimits: limits.limiter } : {}),
          ...options.pty,
        })
      : undefined;
  if (pty) built.push(() => pty.dispose());
  const ptyTools = pty ? createPtyTools(pty) : [];
  // They serve this runtime's sessions, which all get them; child sessions of subagents have their own.
  // Filled once the session runtime exists; producers and monitors only call it later, for live sessions.
  let policyOf: SessionRuntime['policyOf'] = () => undefined;
  // Built once the event feed exists; monitors only report matches later.
  let personNotices: ReturnType<typeof startPersonNotices> | undefined;
  const { monitors: monitorOptions, ...taskToolOptions } = options.taskTools ?? {};
  const taskTools = createTaskTools({
    tasks,
    controllerScope: { serves: (owner) => sessions?.getSession(owner.sessionId)?.owner === owner },
    // What an earlier runtime ran: task_output and task_list answer from the store after a resume.
    recorded: {
      read: (taskId, caller, maxBytes) => sessions?.recordedTasks.read(taskId, caller, maxBytes),
      list: (caller, limit) => sessions?.recordedTasks.list(caller, limit) ?? [],
    },
    // task_digest lists the endings a session has queued and not delivered.
    untold: (caller) =>
      caller !== undefined && 'sessionId' in caller
        ? (sessions?.getSession(caller.sessionId)?.untoldEndings() ?? [])
        : [],
    ...taskToolOptions,
    // task_monitor's lines reach the owner through its delivery policy, onto the same inbox as its ends.
    monitors: {
      ...monitorOptions,
      notify: (owner, taskId, event) => {
        // The person hears of it beside the model, never before the model's delivery is handed over.
        const delivered = policyOf(owner.sessionId)?.notifyMonitor(taskId, event);
        personNotices?.notifier.monitorMatched(taskId, event.lines);
        return delivered;
      },
    },
  });
  built.push(() => taskTools.dispose());
  // Ownerless work started through the runtime's producers is collected by the runtime's own caller
  // (`tasks`, the dashboard): the runtime serves it.
  built.push(tasks.attachController('errand-runtime', { ownerless: true }));
  let subagents: SubagentProducer | undefined;
  let agentTool: AgentTool | undefined;
  if (options.subagents !== false) {
    const { model: childModel, autoBackgroundMs, ...subagentOptions } = options.subagents ?? {};
    // A factory `model` without `subagents.model` was refused when the options were checked.
    const model = (childModel ?? options.model) as ModelSource;
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
  // Schedules: each firing is an automated turn of its session, with the tools its definition allows.
  const automatedTurns = new AutomatedTurns();
  const schedules =
    options.schedules === false
      ? undefined
      : new ScheduleProducer({
          tasks,
          sessionOf: (owner) => {
            const session = sessions?.getSession(owner.sessionId);
            if (session === undefined || session.owner !== owner) return undefined;
            return options.scheduleFirings === 'notifications'
              ? notifyingSchedulePort(session)
              : scheduleSessionPort(session, automatedTurns);
          },
          // Definitions live in the store: a resumed session re-arms its live schedules from them.
          store,
          logger,
          ...options.schedules,
        });
  const scheduleTools = schedules === undefined ? [] : [createScheduleTool(schedules)];
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
  // A result stays pending until the sessions' ledgers say the model was told (see runtime-ledger-view.ts).
  const ledger = createRuntimeLedgerView(store, options.events?.logger ?? options.logger ?? consoleLogger);
  const events = createBackgroundEventFeed({ tasks, ...options.events, ledger });
  built.push(() => events.dispose());
  if (options.notifyPerson !== undefined) {
    personNotices = startPersonNotices(
      { ...(options.logger ? { logger: options.logger } : {}), ...options.notifyPerson },
      events,
      pty,
    );
    built.push(() => personNotices?.dispose());
  }
  const systemPrompt = [options.systemPrompt, taskToolsPrompt({ monitors: taskTools.monitors !== undefined })]
    .filter(Boolean)
    .join('\n\n');

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
    ...optionalLimits(withQueueForTasks(options.limits, options.tasks?.maxLiveTasksPerOwner)),
    ...(options.unloadIdleAfterMs === undefined ? {} : { unloadIdleAfterMs: options.unloadIdleAfterMs }),
    ...(options.logger ? { logger: options.logger } : {}),
    notifications: {
      readOutputTail: (snapshot: TaskSnapshot) =>
        outputSnapshot(snapshot.id, options.notificationTailReadBytes)?.text,
      notifyModelStops: ['workflow'],
      ...options.notifications,
    },
    reconcile: {
      adoptDurable: durableAdopter(bash, source, logger),
      ...(schedules === undefined
        ? {}
        : { adoptSchedule: (record: StoredTask, owner: Owner) => schedules.resume(record, owner) }),
      processSource: source,
      killGraceMs: executor.options.killGraceMs,
    },
    // Gated: while a schedule's automated turn runs, only the tools its definition allows answer.
    tools: (session) =>
      automatedTurns.gateAll([
        bashTool,
        ...ptyTools,
        ...taskTools.tools,
        ...scheduleTools,
        ...agentTools,
        ...workflowTools,
        ...(options.tools?.(session, runtime) ?? []),
      ]),
    ...(workflows ? { onSessionShutdown: workflowShutdownSweep(workflows) } : {}),
  });
  policyOf = (id) => sessions.policyOf(id);
  const unfollow = [ledger.follow(sessions), ...(subagents ? [ledger.follow(subagents.childRuntime)] : [])];
  built.push(() => {
    for (const stop of unfollow) stop();
  });

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
          logger,
        });
  if (commands) built.push(() => commands.stop());
  // A dead runtime's non-durable trees that its lifeline could not stop are stopped now.
  const leftovers = stopLeftoverTrees({
    store,
    source,
    isHolderLive,
    clock: systemClock,
    killGraceMs: executor.options.killGraceMs,
    logger,
  })
    .catch((error: unknown) => {
      logger.warn('stopping the processes a dead runtime left running failed', {
        error: error instanceof Error ? error.message : String(error),
      });
      return 0;
    })
    // After the trees: stopping one writes its status file into the dead runtime's directory.
    .finally(() => {
      const maxAgeMs = options.leftoverOutputMaxAgeMs;
      if (maxAgeMs === false) return;
      removeLeftoverOutput(
        [
          { parent: executor.options.outputDirectoryParent, prefix: BASH_OUTPUT_PREFIX },
          ...(pty ? [{ parent: pty.options.outputRoot ?? tmpdir(), prefix: PTY_OUTPUT_PREFIX }] : []),
        ],
        { maxAgeMs, source, logger },
      );
    });

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
    schedules,
    taskTools,
    stop: taskTools.stop,
    events,
    dashboard,
    personNotifier: personNotices?.notifier,
    lifeline,
    systemPrompt,
    tracing,
    createSession: (sessionOptions) => sessions.createSession(sessionOptions),
    resumeSession: (id) => sessions.resumeSession(id),
    loadSession: (id) => sessions.loadSession(id),
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
        for (const stop of unfollow) stop();
        personNotices?.dispose();
        events.dispose();
        await pty?.dispose();
        bash.dispose();
        await tasks.dispose();
        await executor.dispose();
        // Every command and program is gone: their groups went with them, the runtime's goes now.
        limits?.limiter.dispose();
        // After the task service: its disposal stopped the remote commands through them.
        await remote?.dispatcher.close();
        await remote?.context.close();
        await leftovers;
        // Last: until now a death of this process still stops what it started.
        await lifeline?.release();
        // A session closing from inside its own turn (a tool that disposed the runtime) still writes
        // its end to the store once that turn unwinds: the store closes after it.
        if (ownsStore && sessions.listSessions().length === 0) store.close();
        else if (ownsStore) void sessions.whenAllClosed().then(() => store.close());
        unhide();
      })();
      return disposal;
    },
  };
  return runtime;
}

/**
 * Hides the data directory (the store, the hook sockets, the dashboard's token) and a store file kept
 * elsewhere from every command a sandbox confines; returns the function that stops hiding them.
 */
function hidePrivateFiles(home: string | undefined, ownsStore: boolean): () => void {
  const releases: Array<() => void> = [];
  try {
    releases.push(hideFromSandboxes(home ?? resolveErrandHome()));
    if (ownsStore) {
      releases.push(hideFromSandboxes(resolveDatabaseFile(home === undefined ? {} : { home })));
    }
  } catch {
    // No data directory can be named (no home directory): there is nothing of it to hide.
  }
  return () => {
    for (const release of releases.splice(0)) release();
  };
}

function withoutBlocks(options: TaskServiceOptions): Omit<TaskServiceOptions, 'sequenceBlocks'> {
  const { sequenceBlocks: _ignored, ...rest } = options;
  return rest;
}

/** The Redis link and the dispatcher of remote commands, when `redis` is configured. */
async function openRemoteCommands(
  options: Pick<ErrandRuntimeOptions, 'redis'>,
  executor: BashExecutor,
  logger: Logger,
  built: Array<() => unknown>,
): Promise<{ context: RedisContext; dispatcher: RemoteCommandDispatcher; idBlockSize: number } | undefined> {
  const settings =
    options.redis === undefined
      ? undefined
      : errandRuntimeOptions.rules.redis.resolve(options.redis, 'redis', 'createErrandRuntime');
  if (settings === undefined) return undefined;
  const context = await RedisContext.open(settings.url, settings.prefix, logger);
  built.push(() => context.close());
  const dispatcher = await RemoteCommandDispatcher.start({
    context,
    label: settings.label,
    heartbeatMs: settings.heartbeatMs,
    heartbeatTtlMs: settings.heartbeatTtlMs,
    settledRetentionMs: settings.settledRetentionMs,
    maxBufferedBytes: executor.options.maxBufferedBytes,
    maxReadBytes: executor.options.maxReadBytes,
    clock: systemClock,
    logger,
  });
  built.push(() => dispatcher.close());
  return { context, dispatcher, idBlockSize: settings.idBlockSize };
}

/** The lifeline, unless it is off or cannot work here (no /proc: not Linux). */
function startLifeline(settings: ResolvedRuntimeLifeline, logger: Logger): Lifeline | undefined {
  if (settings === false || !existsSync('/proc/self/stat')) return undefined;
  return new Lifeline({ ...settings, clock: systemClock, logger });
}

/**
 * The session limits, with the queue's bound raised with the task limit when none is given: a session
 * may have `maxLiveTasksPerOwner` tasks end at once, and each ending must find room in its queue
 * (twice the task limit: the endings, and as many inputs and monitor matches beside them).
 */
function withQueueForTasks(
  limits: SessionLimits | undefined,
  maxLiveTasksPerOwner: number | undefined,
): SessionLimits | undefined {
  if (limits?.maxQueuedCommands !== undefined || maxLiveTasksPerOwner === undefined) return limits;
  const bound = queueBoundForTasks(maxLiveTasksPerOwner);
  return bound === SESSION_LIMIT_DEFAULTS.maxQueuedCommands
    ? limits
    : { ...limits, maxQueuedCommands: bound };
}

/** `limits.maxQueuedCommands` when not given: 1000, or twice `tasks.maxLiveTasksPerOwner` when that is more. */
export function queueBoundForTasks(maxLiveTasksPerOwner: number): number {
  return Math.max(SESSION_LIMIT_DEFAULTS.maxQueuedCommands, 2 * maxLiveTasksPerOwner);
}

const optionalLimits = (limits: SessionLimits | undefined) => (limits ? { limits } : {});
