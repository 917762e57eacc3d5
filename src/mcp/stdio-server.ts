/**
 * Errand's MCP server on stdio, as `errand mcp` runs it: its own runtime (one session: stdio is one
 * connection per process), optionally the dashboard for that runtime, and a shutdown that leaves
 * nothing behind — every background process killed, output files removed. Stdout carries the protocol
 * and nothing else; the dashboard URL and warnings are the caller's to print elsewhere.
 */

import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  chooseSocketPath,
  clientOf,
  identityOf,
  SERVER_RECORD_SCHEMA_VERSION,
  writeServerRecord,
} from '../hooks/index.js';
import type { ErrandRuntime } from '../host/index.js';
import { hideFromSandboxes } from '../process/index.js';
import {
  createDashboardServer,
  type DashboardAddress,
  type DashboardServer,
  dashboardServerOptions,
} from '../server/index.js';
import { resolveErrandHome } from '../store/data-directory.js';
import { emitWarningLogger, type Logger, systemClock } from '../tasks/index.js';
import { defineOptions, type OptionsInput, option } from '../tasks/options.js';
import { createErrandMcpServer, type ErrandMcpServer } from './errand-mcp-server.js';
import { type HookEndpoint, startHookEndpoint } from './hook-endpoint.js';
import { type HookEndpointOptions, hookEndpointOptions } from './hook-endpoint-options.js';
import { createMcpRuntime, mcpRuntimeOptions } from './mcp-runtime.js';
import { errandMcpServerOptions } from './mcp-server-options.js';
import { findResumableMcpSession } from './resumable-session.js';

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
  /**
   * Resume the previous session of the same client in the same directory when no live server holds it
   * (`findResumableMcpSession`: the rule of `errand mcp --durable`), instead of starting a new one. The
   * client is known from its `initialize` request, read before the session is opened. Default false.
   */
  resumePrevious: option.boolean({ default: false }),
  /**
   * Like `resumePrevious`, but only a session whose server died holding it (a crash or a SIGKILL, not a
   * clean exit): its records are reconciled and what became of its work is told once. Default false.
   */
  resumeCrashed: option.boolean({ default: false }),
  /**
   * The socket client hooks (`errand hook`) ask for this session's notifications on, registered in the
   * data directory's `run/` folder with this process's parent as the client; or false to offer none.
   * Default: on, with the endpoint's defaults.
   */
  hooks: option.orFalse(option.nested(hookEndpointOptions)),
});

/** The most of the first request read to learn who the client is; a longer one is not looked into. */
const MAX_INITIALIZE_BYTES = 1024 * 1024;

/** Options of `startStdioMcpServer`. */
export type StdioMcpServerOptions = OptionsInput<typeof stdioMcpServerOptions.rules>;

export interface StdioMcpServer {
  readonly runtime: ErrandRuntime;
  readonly mcp: ErrandMcpServer;
  /** The dashboard's address (its `url` carries the token); undefined without a dashboard. */
  readonly dashboard: DashboardAddress | undefined;
  /**
   * Resolves once the server has shut down: stdin ended, the transport closed for any other reason (an
   * error, a message over the transport's size limit), or `shutdown` was called.
   */
  readonly closed: Promise<void>;
  /** Why the transport closed, when it closed on an error (say, an oversized message); else undefined. */
  readonly closeReason: () => string | undefined;
  /** Closes the connection and the dashboard and disposes the runtime. Idempotent. */
  shutdown(): Promise<void>;
}

export async function startStdioMcpServer(options: StdioMcpServerOptions = {}): Promise<StdioMcpServer> {
  stdioMcpServerOptions.resolve(options);
  const {
    runtime: runtimeOptions,
    dashboard: dashboardOptions,
    stdin,
    stdout,
    resumePrevious,
    resumeCrashed,
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
  let transportError: string | undefined;
  let inputEnded = false;
  const shutdown = (): Promise<void> => {
    shutting ??= (async () => {
      input.off('end', onInputEnd);
      input.off('close', onInputEnd);
      // Hooks first: what they hold goes back to the queue before the session closes.
      await hooks?.endpoint.close();
      hooks?.unregister();
      // A transport that closed while stdin is open (an oversized message) must not keep the process up.
      if (!inputEnded) input.destroy();
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
    inputEnded = true;
    void shutdown();
  };

  try {
    let resumeSessionId = serverOptions.resumeSessionId;
    const peeked = (resumePrevious === true || resumeCrashed === true) && resumeSessionId === undefined;
    if (peeked) {
      const first = await peekFirstLine(input, MAX_INITIALIZE_BYTES);
      if (first.ended) inputEnded = true;
      const clientName = clientNameOf(first.line);
      if (clientName !== undefined) {
        resumeSessionId = findResumableMcpSession({
          store: runtime.store,
          clientName,
          directory: serverOptions.cwd ?? serverOptions.launchDirectory ?? process.cwd(),
          crashedOnly: resumePrevious !== true,
        });
      }
    }
    mcp = createErrandMcpServer({
      ...serverOptions,
      ...(resumeSessionId === undefined ? {} : { resumeSessionId }),
      runtime,
      logger,
    });
    if (dashboardOptions) {
      const dashboardLogger: Logger = { warn: (message, context) => logger.warn(message, context) };
      dashboard = createDashboardServer({
        backend: runtime.dashboard,
        ...(runtime.personNotifier ? { notices: runtime.personNotifier } : {}),
        ...(dashboardOptions.port === undefined ? {} : { port: dashboardOptions.port }),
        ...(dashboardOptions.host === undefined ? {} : { host: dashboardOptions.host }),
        ...(dashboardOptions.maxEventClients === undefined
          ? {}
          : { maxEventClients: dashboardOptions.maxEventClients }),
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
    // A peek paused the stream explicitly: a new 'data' listener alone does not make it flow again.
    if (peeked && !inputEnded) input.resume();
    // The transport closes itself on a broken stream or a message over its size limit: the server
    // ends with it, as on end of input, instead of staying up deaf.
    const protocol = mcp.server.server;
    const previousError = protocol.onerror;
    protocol.onerror = (error) => {
      // The newest error is the one a close follows.
      transportError = error.message;
      previousError?.(error);
    };
    const previousClose = protocol.onclose;
    protocol.onclose = () => {
      previousClose?.();
      if (!inputEnded && transportError !== undefined) {
        logger.warn('the MCP transport closed; shutting down', { reason: transportError });
      }
      void shutdown();
    };
    if (inputEnded) void shutdown();
  } catch (error) {
    await shutdown();
    throw error;
  }

  return {
    runtime,
    mcp,
    dashboard: dashboard?.address,
    closed,
    closeReason: () => transportError,
    shutdown,
  };
}

/**
 * Reads `input` up to its first newline (or `maxBytes`, or its end) and puts everything read back, so
 * the transport reads it as if nothing had looked.
 */
function peekFirstLine(input: Readable, maxBytes: number): Promise<{ line: string; ended: boolean }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let length = 0;
    const finish = (ended: boolean) => {
      input.off('data', onData);
      input.off('end', onEnd);
      input.pause();
      const all = Buffer.concat(chunks);
      // A stream that ended cannot take its bytes back: without a newline they were no message anyway.
      if (all.length > 0 && !ended) input.unshift(all);
      const end = all.indexOf(10);
      resolve({ line: all.subarray(0, end < 0 ? all.length : end).toString('utf8'), ended });
    };
    const onData = (chunk: Buffer | string) => {
      const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      chunks.push(buffer);
      length += buffer.length;
      if (buffer.includes(10) || length >= maxBytes) finish(false);
    };
    const onEnd = () => finish(true);
    input.on('data', onData);
    input.once('end', onEnd);
  });
}

/** The `clientInfo.name` of an `initialize` request line, or undefined. */
function clientNameOf(line: string): string | undefined {
  try {
    const message = JSON.parse(line) as { method?: unknown; params?: { clientInfo?: { name?: unknown } } };
    const name = message.method === 'initialize' ? message.params?.clientInfo?.name : undefined;
    return typeof name === 'string' && name !== '' ? name : undefined;
  } catch {
    return undefined;
  }
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
  // Out of every confined command's sight, also when it is not in the data directory (a long path).
  const unhide = hideFromSandboxes(dirname(socket.path));
  const endpoint = await startHookEndpoint(
    { session: mcp.session, tasks: runtime.tasks, socketPath: socket.path, logger, client },
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
      unhide();
    },
  };
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
