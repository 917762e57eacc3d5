/**
 * Errand's MCP server for one connection: one session owns every task the client starts; the session's
 * tools (`bash`, the pty tools where node-pty loads, `task_output`, `task_list`, `task_kill`,
 * `task_monitor`) are MCP tools; completion notifications reach the client in band (appended to the next tool result — the
 * ledger's delivery, exactly once), as logging messages, and through MCP Tasks for task-augmented `bash`
 * calls (side channels). The working directory comes from `cwd`, the client's roots, or the launch
 * directory.
 */

import type { ToolTaskHandler } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import { McpServer, type RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  type CallToolResult,
  type Task as McpTask,
  RootsListChangedNotificationSchema,
  type ServerCapabilities,
} from '@modelcontextprotocol/sdk/types.js';
import type { ErrandRuntime } from '../host/index.js';
import type { BashToolValue } from '../producers/bash/bash-tool.js';
import type { Session } from '../session/index.js';
import {
  type AnyToolDefinition,
  executeTool,
  limitToolResult,
  type ToolContext,
  type ToolResult,
  toldTaskEnds,
} from '../tools/index.js';
import type { Tracing } from '../tracing/index.js';
import { ErrandTaskStore } from './errand-task-store.js';
import { mcpInstructions, mcpServerCapabilities } from './initialize-answer.js';
import {
  type ErrandMcpServerOptions,
  errandMcpServerOptions,
  type ResolvedMcpServerOptions,
} from './mcp-server-options.js';
import { forwardNotificationsAsLogs } from './notification-log.js';
import { ResultDeliveries } from './result-delivery.js';
import { clientToolCallId, mcpToolDescription } from './tool-descriptions.js';
import { WorkingDirectory } from './working-directory.js';

export interface ErrandMcpServer {
  /** The SDK server (connect it to a transport, or use `connect`). */
  readonly server: McpServer;
  /** The session this connection acts for; it owns every task the client starts. */
  readonly session: Session;
  /** The MCP task store; undefined when MCP Tasks are turned off. */
  readonly taskStore: ErrandTaskStore | undefined;
  readonly workingDirectory: WorkingDirectory;
  readonly options: ResolvedMcpServerOptions;
  connect(transport: Transport): Promise<void>;
  /**
   * Closes the connection, then the session (stopping every task it owns and waiting for them). The
   * runtime stays; dispose it separately. Idempotent.
   */
  close(): Promise<void>;
}

export function createErrandMcpServer(options: ErrandMcpServerOptions): ErrandMcpServer {
  const resolved = errandMcpServerOptions.resolve(options);
  const runtime: ErrandRuntime = resolved.runtime;
  const logger = resolved.logger;
  const workingDirectory = new WorkingDirectory({
    fixed: resolved.cwd,
    fallback: resolved.launchDirectory,
    timeoutMs: resolved.rootsTimeoutMs,
    logger,
  });
  const session = openSession(runtime, resolved, workingDirectory.current);

  let server!: McpServer;
  const taskStore =
    resolved.tasks === false
      ? undefined
      : new ErrandTaskStore(
          {
            tasks: runtime.tasks,
            owner: session.owner,
            stop: runtime.stop,
            outputOf: (taskId) => runtime.bash.handleOf(taskId),
            onStatusChange: (task) => sendTaskStatus(server, task),
            reportEnd: (end) => session.inbox.markTold(end),
          },
          resolved.tasks,
        );
  // The same capabilities and instructions `errand mcp` answers `initialize` with before this is loaded.
  const capabilities: ServerCapabilities = mcpServerCapabilities(taskStore !== undefined);
  server = new McpServer(
    { name: resolved.name, version: resolved.version },
    { capabilities, instructions: mcpInstructions(), ...(taskStore ? { taskStore } : {}) },
  );

  const toolContext = (requestId: string | number, signal: AbortSignal, meta?: unknown): ToolContext => ({
    caller: session.owner,
    // The model's own id for the call when the client sent it, so <tool-use-id> matches its conversation.
    toolCallId: clientToolCallId(meta) ?? `mcp-${String(requestId)}`,
    signal,
    cwd: workingDirectory.current,
    env: session.env,
  });

  // Queued notifications ride on tool results, recorded as delivered once a result was actually sent.
  const deliveries = new ResultDeliveries({
    inbox: session.inbox,
    transport: () => server.server.transport,
    logger,
  });

  /**
   * Runs a tool and answers with its bounded text and, unless the call was cancelled, queued
   * notifications: they count as delivered only once this answer was handed to the transport.
   */
  const callTool = async (
    definition: AnyToolDefinition,
    args: unknown,
    requestId: string | number,
    signal: AbortSignal,
    meta?: unknown,
  ): Promise<CallToolResult> => {
    await workingDirectory.whenReady();
    const tracing = runtime.tracing;
    // The request's span (MCP conventions): the tool's execute_tool span and the delivery of the
    // notifications this answer carries (committed once it was sent) are its children.
    const span = tracing.startSpan(`tools/call ${definition.name}`, {
      kind: 'server',
      attributes: {
        'mcp.method.name': 'tools/call',
        'gen_ai.tool.name': definition.name,
        'jsonrpc.request.id': String(requestId),
        'gen_ai.conversation.id': session.id,
      },
    });
    try {
      return await tracing.withSpan(span, async () => {
        const executed = await executeTool(definition, args, toolContext(requestId, signal, meta), {
          tracing,
        });
        // The store is failing (or works again): the answer says so, once.
        const note = session.takePersistenceNote();
        const result = note === undefined ? executed : { ...executed, text: `${executed.text}\n${note}` };
        // The answer shows how a task ended: its notification would tell the client a second time. A
        // cancelled request's answer is never sent, so the client has not read that end: it stays.
        if (!signal.aborted) for (const end of toldTaskEnds(result)) session.inbox.markTold(end);
        const answer = toCallToolResult(limitToolResult(result, resolved.maxToolResultBytes));
        return deliveries.attach(answer, requestId, signal, resolved.maxNotificationsPerResult);
      });
    } finally {
      span.end();
    }
  };

  for (const definition of session.tools) {
    if (definition.name === 'bash' && taskStore) {
      registerBashTaskTool(
        server,
        definition,
        taskStore,
        callTool,
        async (requestId, signal, meta) => {
          await workingDirectory.whenReady();
          return toolContext(requestId, signal, meta);
        },
        runtime.tracing,
      );
    } else {
      registerTool(server, definition, callTool);
    }
  }

  // The MCP layer is the only consumer of this session's queue; a model turn would take it first.
  const stopTurnWatch = session.on((event) => {
    if (event.type !== 'turn-start') return;
    logger.warn('the MCP session started a model turn; create its runtime with createMcpRuntime', {
      sessionId: session.id,
      source: event.source,
    });
  });
  const stopLogging = resolved.logNotifications
    ? forwardNotificationsAsLogs({
        session,
        store: runtime.store,
        send: (params) => server.sendLoggingMessage(params),
        onError: (error) => {
          if (server.isConnected()) {
            logger.warn('sending a logging notification failed', {
              error: error instanceof Error ? error.message : String(error),
            });
          }
        },
      })
    : () => {};

  const listRoots = () => server.server.listRoots(undefined, { timeout: resolved.rootsTimeoutMs });
  server.server.oninitialized = () => {
    describeClient(runtime, session, server, workingDirectory);
    const offersRoots = server.server.getClientCapabilities()?.roots !== undefined;
    if (resolved.cwd !== undefined) return;
    if (!resolved.useRoots || !offersRoots) {
      workingDirectory.useFallback();
      return;
    }
    void workingDirectory
      .refresh(listRoots)
      .then(() => describeClient(runtime, session, server, workingDirectory));
  };
  server.server.setNotificationHandler(RootsListChangedNotificationSchema, () => {
    if (!resolved.useRoots || resolved.cwd !== undefined) return;
    void workingDirectory
      .refresh(listRoots)
      .then(() => describeClient(runtime, session, server, workingDirectory));
  });

  let closing: Promise<void> | undefined;
  return {
    server,
    session,
    taskStore,
    workingDirectory,
    options: resolved,
    connect: (transport) => server.connect(transport),
    close() {
      closing ??= (async () => {
        stopLogging();
        stopTurnWatch();
        try {
          await server.close();
        } finally {
          deliveries.releaseAll();
          await session.close();
          taskStore?.dispose();
        }
      })();
      return closing;
    },
  };
}

/** The resumed session when one is asked for and can be resumed, else a new one. */
function openSession(runtime: ErrandRuntime, resolved: ResolvedMcpServerOptions, cwd: string): Session {
  const resumeId = resolved.resumeSessionId;
  if (resumeId !== undefined) {
    try {
      return runtime.resumeSession(resumeId);
    } catch (error) {
      resolved.logger.warn(`session ${resumeId} could not be resumed; starting a new session`, {
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }
  return runtime.createSession({ title: resolved.sessionTitle, cwd });
}

type CallTool = (
  definition: AnyToolDefinition,
  args: unknown,
  requestId: string | number,
  signal: AbortSignal,
  meta?: unknown,
) => Promise<CallToolResult>;

interface RequestFacts {
  readonly requestId: string | number;
  readonly signal: AbortSignal;
  readonly _meta?: unknown;
}

// The SDK's overloads are generic over zod shapes; a definition's schema is already a zod object.
type RegisterTool = (
  name: string,
  config: { description: string; inputSchema: unknown },
  callback: (args: unknown, extra: RequestFacts) => Promise<CallToolResult>,
) => RegisteredTool;

function registerTool(server: McpServer, definition: AnyToolDefinition, callTool: CallTool): RegisteredTool {
  const register = server.registerTool.bind(server) as unknown as RegisterTool;
  return register(
    definition.name,
    { description: mcpToolDescription(definition), inputSchema: definition.inputSchema },
    (args, extra) => callTool(definition, args, extra.requestId, extra.signal, extra._meta),
  );
}

/**
 * `bash` with MCP Tasks (`taskSupport: optional`). A task-augmented call starts the command in the
 * background and binds the MCP task to its Errand task. An ordinary call reaches the SDK's automatic
 * polling, which asks for a task too: that task is inline and completed at once with the ordinary
 * result, so an ordinary call behaves exactly like the plain tool.
 */
function registerBashTaskTool(
  server: McpServer,
  definition: AnyToolDefinition,
  store: ErrandTaskStore,
  callTool: CallTool,
  /** The context of a task-augmented call, once its working directory is known. */
  toolContext: (requestId: string | number, signal: AbortSignal, meta?: unknown) => Promise<ToolContext>,
  tracing: Tracing,
): RegisteredTool {
  const handler: ToolTaskHandler<typeof definition.inputSchema> = {
    createTask: async (args, extra) => {
      const task = await extra.taskStore.createTask({
        ...(extra.taskRequestedTtl === undefined ? {} : { ttl: extra.taskRequestedTtl }),
        pollInterval: store.options.pollIntervalMs,
      });
      if (store.isInline(task.taskId)) {
        try {
          const result = await callTool(definition, args, extra.requestId, extra.signal, extra._meta);
          return { task: store.completeInline(task.taskId, result) };
        } catch (error) {
          store.forget(task.taskId);
          throw error;
        }
      }
      const input = { ...(args as Record<string, unknown>), run_in_background: true };
      const context = await toolContext(extra.requestId, extra.signal, extra._meta);
      const started = (await executeTool(definition, input, context, {
        tracing,
      })) as ToolResult<BashToolValue>;
      if (started.isError || started.value?.kind !== 'background') {
        return { task: store.fail(task.taskId, toCallToolResult(started)) };
      }
      return { task: store.bind(task.taskId, started.value.taskId) };
    },
    getTask: async (_args, extra) => extra.taskStore.getTask(extra.taskId),
    getTaskResult: async (_args, extra) =>
      (await extra.taskStore.getTaskResult(extra.taskId)) as CallToolResult,
  };
  return server.experimental.tasks.registerToolTask(
    definition.name,
    {
      description: mcpToolDescription(definition),
      inputSchema: definition.inputSchema,
      execution: { taskSupport: 'optional' },
    },
    handler,
  );
}

function toCallToolResult(result: ToolResult): CallToolResult {
  return { content: [{ type: 'text', text: result.text }], isError: result.isError };
}

/** `notifications/tasks/status` for a task that reached a terminal status by itself. */
function sendTaskStatus(server: McpServer, task: McpTask): void {
  if (!server.isConnected()) return;
  server.server.notification({ method: 'notifications/tasks/status', params: task }).catch(() => {
    // The connection closed meanwhile; the client can still ask with tasks/get until then.
  });
}

/** Names the session after the client, and records where its commands run. */
function describeClient(
  runtime: ErrandRuntime,
  session: Session,
  server: McpServer,
  workingDirectory: WorkingDirectory,
): void {
  const client = server.server.getClientVersion();
  try {
    runtime.store.updateSession(session.id, {
      ...(client ? { title: `MCP: ${client.name}${client.version ? ` ${client.version}` : ''}` } : {}),
      metadata: {
        surface: 'mcp',
        ...(client ? { client: { name: client.name, version: client.version } } : {}),
        workingDirectory: workingDirectory.current,
        workingDirectorySource: workingDirectory.source,
        // What a restarted server matches to resume this session (see `findResumableMcpSession`).
        launchDirectory: workingDirectory.launchKey,
      },
    });
  } catch {
    // The session is closing; nothing to describe.
  }
}
