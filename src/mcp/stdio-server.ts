/**
 * Errand's MCP server on stdio, as `errand mcp` runs it: its own runtime (one session: stdio is one
 * connection per process), optionally the dashboard for that runtime, and a shutdown that leaves
 * nothing behind — every background process killed, output files removed. Stdout carries the protocol
 * and nothing else; the dashboard URL and warnings are the caller's to print elsewhere.
 */
import type { Readable, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { ErrandRuntime } from '../host/index.js';
import {
  createDashboardServer,
  type DashboardAddress,
  type DashboardServer,
  dashboardServerOptions,
} from '../server/index.js';
import { emitWarningLogger, type Logger } from '../tasks/index.js';
import { defineOptions, type OptionsInput, option } from '../tasks/options.js';
import { createErrandMcpServer, type ErrandMcpServer } from './errand-mcp-server.js';
import { createMcpRuntime, mcpRuntimeOptions } from './mcp-runtime.js';
import { errandMcpServerOptions } from './mcp-server-options.js';

/**
 * The options of `startStdioMcpServer`: the MCP server's (but `runtime`) and its own. A key not declared
 * (or one inside `runtime`, `dashboard` or `tasks` that those lack) is rejected with `UNKNOWN_OPTION`
 * before the runtime is created.
 */
const stdioMcpServerOptions = defineOptions('startStdioMcpServer', {
  ...errandMcpServerOptions.omit('runtime').rules,
  /** Options of the runtime the server creates (its store's `home`, limits, producers). */
  runtime: option.nested(mcpRuntimeOptions),
  /**
   * Serve the dashboard for this runtime: its port (0 picks a free one), host and cap on open dashboard
   * pages (`maxEventClients` of `createDashboardServer`). Default: no dashboard.
   */
  dashboard: option.orFalse(
    option.nested(
      defineOptions('startStdioMcpServer', {
        port: dashboardServerOptions.rules.port,
        host: dashboardServerOptions.rules.host,
        maxEventClients: dashboardServerOptions.rules.maxEventClients,
      }),
    ),
  ),
  /** Default `process.stdin`. */
  stdin: option.shaped<Readable>('a readable stream', ['on']),
  /** Default `process.stdout`. */
  stdout: option.shaped<Writable>('a writable stream', ['write']),
});

/** Options of `startStdioMcpServer`. */
export type StdioMcpServerOptions = OptionsInput<typeof stdioMcpServerOptions.rules>;

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
  stdioMcpServerOptions.resolve(options);
  const { runtime: runtimeOptions, dashboard: dashboardOptions, stdin, stdout, ...serverOptions } = options;
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
  let finished!: () => void;
  const closed = new Promise<void>((resolve) => {
    finished = resolve;
  });
  let shutting: Promise<void> | undefined;
  const shutdown = (): Promise<void> => {
    shutting ??= (async () => {
      input.off('end', onInputEnd);
      input.off('close', onInputEnd);
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
        ...(dashboardOptions.maxEventClients === undefined
          ? {}
          : { maxEventClients: dashboardOptions.maxEventClients }),
        logger: dashboardLogger,
      });
      await dashboard.listen();
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

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
