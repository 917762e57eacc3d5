/**
 * Errand's MCP server on stdio, as `errand mcp` runs it: its own runtime (one session: stdio is one
 * connection per process), optionally the dashboard for that runtime, and a shutdown that leaves
 * nothing behind — every background process killed, output files removed. Stdout carries the protocol
 * and nothing else; the dashboard URL and warnings are the caller's to print elsewhere.
 */

import { rmSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  chooseSocketPath,
  clientOf,
  identityOf,
  SERVER_RECORD_SCHEMA_VERSION,
  writeServerRecord,
} from '../hooks/index.js';
import { type ErrandRuntime, rejectUnknownRuntimeOptions } from '../host/index.js';
import { createDashboardServer, type DashboardAddress, type DashboardServer } from '../server/index.js';
import { resolveErrandHome } from '../store/data-directory.js';
import { type Logger, systemClock } from '../tasks/index.js';
import { optionKeys, rejectUnknownOptions } from '../tasks/option-keys.js';
import { createErrandMcpServer, type ErrandMcpServer } from './errand-mcp-server.js';
import { type HookEndpoint, startHookEndpoint } from './hook-endpoint.js';
import { type HookEndpointOptions, resolveHookEndpointOptions } from './hook-endpoint-options.js';
import { createMcpRuntime, MCP_RUNTIME_OPTION_KEYS, type McpRuntimeOptions } from './mcp-runtime.js';
import {
  ERRAND_MCP_SERVER_OPTION_KEYS,
  type ErrandMcpServerOptions,
  emitWarningLogger,
} from './mcp-server-options.js';
import { ERRAND_TASK_STORE_OPTION_KEYS } from './task-store-options.js';

/**
 * Options of `startStdioMcpServer`: the MCP server's (but `runtime`) and its own. A key not listed (or one
 * inside `runtime`, `dashboard` or `tasks` that those lack) is rejected with `UNKNOWN_OPTION` before the
 * runtime is created.
 */
export interface StdioMcpServerOptions extends Omit<ErrandMcpServerOptions, 'runtime'> {
  /** Options of the runtime the server creates (its store's `home`, limits, producers). */
  readonly runtime?: McpRuntimeOptions;
  /** Serve the dashboard for this runtime: its port (0 picks a free one) and host. Default: no dashboard. */
  readonly dashboard?: { readonly port?: number; readonly host?: string } | false;
  /** Default `process.stdin`. */
  readonly stdin?: Readable;
  /** Default `process.stdout`. */
  readonly stdout?: Writable;
  /**
   * The socket client hooks (`errand hook`) ask for this session's notifications on, registered in the
   * data directory's `run/` folder with this process's parent as the client; or false to offer none.
   * Default: on, with the endpoint's defaults.
   */
  readonly hooks?: HookEndpointOptions | false;
}

const STDIO_OWN_OPTION_KEYS = optionKeys<Omit<StdioMcpServerOptions, keyof ErrandMcpServerOptions>>()({
  dashboard: true,
  stdin: true,
  stdout: true,
  hooks: true,
});

/** The MCP server's keys (its `runtime` is replaced by runtime options) and the stdio server's own. */
const STDIO_MCP_SERVER_OPTION_KEYS: readonly string[] = [
  ...ERRAND_MCP_SERVER_OPTION_KEYS,
  ...STDIO_OWN_OPTION_KEYS,
];

const DASHBOARD_OPTION_KEYS = optionKeys<Exclude<NonNullable<StdioMcpServerOptions['dashboard']>, false>>()({
  port: true,
  host: true,
});

function rejectUnknownStdioOptions(options: StdioMcpServerOptions): void {
  const where = 'startStdioMcpServer';
  rejectUnknownOptions(options, STDIO_MCP_SERVER_OPTION_KEYS, { where });
  rejectUnknownRuntimeOptions(options?.runtime, MCP_RUNTIME_OPTION_KEYS, { where, path: 'runtime' });
  rejectUnknownOptions(options?.dashboard, DASHBOARD_OPTION_KEYS, { where, path: 'dashboard' });
  rejectUnknownOptions(options?.tasks, ERRAND_TASK_STORE_OPTION_KEYS, { where, path: 'tasks' });
  if (options?.hooks !== undefined && options.hooks !== false) {
    resolveHookEndpointOptions(options.hooks, { where, path: 'hooks' });
  }
}

export interface StdioMcpServer {
  readonly runtime: ErrandRuntime;
  readonly mcp: ErrandMcpServer;
  /** The dashboard's address (its `url` carries the token); undefined without a dashboard. */
  readonly dashboard: DashboardAddress | undefined;
  /** Resolves once the server has shut down (stdin ended, or `shutdown` was called). */
  readonly closed: Promise<void>;
  /** Closes the connection and the dashboard and disposes the runtime. Idempotent. */
  shutdown(): Promise<void>;
}

export async function startStdioMcpServer(options: StdioMcpServerOptions = {}): Promise<StdioMcpServer> {
  rejectUnknownStdioOptions(options);
  const {
    runtime: runtimeOptions,
    dashboard: dashboardOptions,
    stdin,
    stdout,
    hooks: hookOptions,
    ...serverOptions
  } = options;
  const logger: Logger = serverOptions.logger ?? emitWarningLogger;
  const input = stdin ?? process.stdin;
  const output = stdout ?? process.stdout;
  const runtime = await createMcpRuntime({
    ...runtimeOptions,
    ...(serverOptions.cwd === undefined ? {} : { cwd: serverOptions.cwd }),
    ...(runtimeOptions?.logger ? {} : { logger }),
  });

  let mcp: ErrandMcpServer | undefined;
  let dashboard: DashboardServer | undefined;
  let hooks: { endpoint: HookEndpoint; unregister: () => void } | undefined;
  let finished!: () => void;
  const closed = new Promise<void>((resolve) => {
    finished = resolve;
  });
  let shutting: Promise<void> | undefined;
  const shutdown = (): Promise<void> => {
    shutting ??= (async () => {
      input.off('end', onInputEnd);
      input.off('close', onInputEnd);
      // Hooks first: what they hold goes back to the queue before the session closes.
      await hooks?.endpoint.close();
      hooks?.unregister();
      try {
        await mcp?.close();
      } catch (error) {
        logger.warn('closing the MCP connection failed', { error: describe(error) });
      }
      try {
        await dashboard?.close();
      } catch (error) {
        logger.warn('closing the dashboard failed', { error: describe(error) });
      }
      await runtime.dispose();
      finished();
    })();
    return shutting;
  };
  const onInputEnd = () => {
    void shutdown();
  };

  try {
    mcp = createErrandMcpServer({ ...serverOptions, runtime, logger });
    if (dashboardOptions) {
      const dashboardLogger: Logger = { warn: (message, context) => logger.warn(message, context) };
      dashboard = createDashboardServer({
        backend: runtime.dashboard,
        ...(dashboardOptions.port === undefined ? {} : { port: dashboardOptions.port }),
        ...(dashboardOptions.host === undefined ? {} : { host: dashboardOptions.host }),
        logger: dashboardLogger,
      });
      await dashboard.listen();
    }
    if (hookOptions !== false) {
      const home = runtimeOptions?.home ?? resolveErrandHome();
      try {
        hooks = await startHooks(home, mcp, runtime, hookOptions ?? {}, logger);
      } catch (error) {
        // The server works without hooks; notifications still ride on tool results.
        logger.warn('listening for client hooks failed; hooks will not find this server', {
          error: describe(error),
        });
      }
    }
    // The client went away mid-write: nothing to report it to, and it must not crash the shutdown.
    output.on('error', () => {});
    input.once('end', onInputEnd);
    input.once('close', onInputEnd);
    await mcp.connect(new StdioServerTransport(input, output));
  } catch (error) {
    await shutdown();
    throw error;
  }

  return {
    runtime,
    mcp,
    dashboard: dashboard?.address,
    closed,
    shutdown,
  };
}

/**
 * Listens for this session's client hooks and registers the server in `home`. The client is this
 * process's parent (past a launcher such as `npx`): the hook finds the server by walking its own
 * ancestors up to it.
 */
async function startHooks(
  home: string,
  mcp: ErrandMcpServer,
  runtime: ErrandRuntime,
  options: HookEndpointOptions,
  logger: Logger,
): Promise<{ endpoint: HookEndpoint; unregister: () => void }> {
  const server = identityOf(process.pid);
  const client = clientOf(process.pid);
  const socket = chooseSocketPath(home, process.pid);
  // A socket left behind by an earlier process with this pid (it was killed) is not ours to keep.
  rmSync(socket.path, { force: true });
  const endpoint = await startHookEndpoint(
    { session: mcp.session, tasks: runtime.tasks, socketPath: socket.path, logger },
    options,
  );
  let removeRecord = () => {};
  if (server !== undefined && client !== undefined) {
    try {
      removeRecord = writeServerRecord(home, {
        schemaVersion: SERVER_RECORD_SCHEMA_VERSION,
        server,
        client,
        sessionId: mcp.session.id,
        socket: socket.path,
        startedAt: systemClock.now(),
      });
    } catch (error) {
      logger.warn('registering the server for client hooks failed; hooks will not find it', {
        error: describe(error),
      });
    }
  }
  return {
    endpoint,
    unregister: () => {
      removeRecord();
      socket.cleanup();
    },
  };
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
