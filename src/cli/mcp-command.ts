/**
 * `errand mcp`: Errand's MCP server on stdio. Stdout carries the protocol and nothing else; the
 * dashboard URL and warnings go to stderr. Ends when stdin closes, when the transport closes for any
 * other reason (an error, an oversized message) or on SIGINT / SIGTERM, after stopping every
 * non-durable background process it started and removing their output files; with `--durable`,
 * background commands run on. The next server of the same client in the same directory takes over a dead
 * server's session (`--new-session` opts out): its durable commands are resumed, and what became of the
 * rest (stopped by the lifeline, ended with its status, or lost) is told once and settled in the store.
 *
 * The client's `initialize` is answered as soon as the flags are read (`answerInitializeEarly`): the
 * runtime, the store and the SDK load after it, and the server reads that request as if it were first
 * (`docs/benchmarks.md`, "errand mcp's first answer"). Only what parsing the flags needs is imported
 * before; everything else is loaded with `import()` once the answer is out.
 */
import { readFileSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import type { HttpMcpServer } from '../mcp/http-server.js';
import { answerInitializeEarly } from '../mcp/initialize-answer.js';
import { MCP_SERVER_NAME, packageVersion } from '../mcp/server-identity.js';
import type { StdioMcpServer } from '../mcp/stdio-server.js';
import { ErrandError } from '../tasks/errors.js';
import { describeFlags, type FlagSpecs, parseFlags, UsageError } from './args.js';
import { LIMIT_FLAGS, resourceLimitsFromFlags } from './limit-flags.js';
import { NOTIFY_FLAGS, notifyOptionsFromFlags } from './notify-flags.js';
import { REDIS_FLAGS, redisOption } from './redis-flags.js';
import { SANDBOX_FLAGS, sandboxFromFlags } from './sandbox-flags.js';
import { onShutdownSignal } from './shutdown-signals.js';

export const MCP_FLAGS: FlagSpecs = {
  dashboard: {
    type: 'boolean',
    description: "also serve the dashboard for this server's work; its URL (token included) goes to stderr",
  },
  port: {
    type: 'port',
    placeholder: '<n>',
    description: "the dashboard's port on 127.0.0.1 (needs --dashboard; default: a free port)",
  },
  'max-event-clients': {
    type: 'count',
    placeholder: '<n>',
    description: 'dashboard pages open at once (needs --dashboard; default 64)',
  },
  home: {
    type: 'path',
    placeholder: '<dir>',
    description: 'the data directory (default: $ERRAND_HOME, else ~/.errand)',
  },
  cwd: {
    type: 'directory',
    placeholder: '<dir>',
    description: "where commands run (default: the client's first root, else the launch directory)",
  },
  'max-tasks': {
    type: 'integer',
    placeholder: '<n>',
    description:
      'background tasks the client may have running at once, all the way to this many: it lifts the runtime-wide limit (1000) and the session queue (1000 commands) with it (default 32)',
  },
  'new-session': {
    type: 'boolean',
    description:
      'start a new session even when a dead server of the same client in the same directory left one (default: take it over and tell what became of its work)',
  },
  durable: {
    type: 'boolean',
    description:
      'background commands survive this server: they keep running if it dies or exits, and a server the same client starts again in the same directory resumes their session (same task ids, output, one notification each)',
  },
  http: {
    type: 'string',
    placeholder: '[host:]port',
    description:
      'serve Streamable HTTP on [host:]port instead of stdio (host default 127.0.0.1; port 0 picks a free one)',
  },
  'token-file': {
    type: 'path',
    placeholder: '<file>',
    description:
      'with --http: the bearer token is read from this file, or written to it (0600) when it is missing or empty',
  },
  'no-auth': {
    type: 'boolean',
    description: 'with --http on a loopback host: no bearer token (refused for any other host)',
  },
  'max-sessions': {
    type: 'count',
    placeholder: '<n>',
    description: 'with --http: MCP sessions open at once (default 16)',
  },
  'session-idle-ms': {
    type: 'integer',
    placeholder: '<ms>',
    description: 'with --http: an MCP session idle this long is closed, its tasks stopped (default 1800000)',
  },
  'max-body-bytes': {
    type: 'integer',
    placeholder: '<n>',
    description: 'with --http: the largest request body (default 4194304)',
  },
  ...SANDBOX_FLAGS,
  ...LIMIT_FLAGS,
  ...REDIS_FLAGS,
  ...NOTIFY_FLAGS,
};

/** The flags that only mean something with `--http`. */
const HTTP_ONLY_FLAGS = ['token-file', 'no-auth', 'max-sessions', 'session-idle-ms', 'max-body-bytes'];

export const MCP_USAGE = `Usage: errand mcp [options]

Runs Errand's MCP server on stdio: bash, task_output, task_list, task_kill (and the pty tools where
node-pty is installed) for one MCP client, with background task notifications. With --http, serves
Streamable HTTP at /mcp for many clients (MCP 2026-07-28 and the 2025 versions), behind a bearer token.

Options:
${describeFlags(MCP_FLAGS)}
`;

/** The streams and directory a command works with (the process's, unless a test passes its own). */
export interface CommandIo {
  readonly stdin: Readable;
  readonly stdout: Writable;
  readonly stderr: Writable;
  readonly cwd: string;
}

export const processIo = (): CommandIo => ({
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  cwd: process.cwd(),
});

export async function runMcpCommand(argv: readonly string[], io: CommandIo = processIo()): Promise<number> {
  let values: Record<string, unknown>;
  let sandbox: ReturnType<typeof sandboxFromFlags>;
  let resourceLimits: ReturnType<typeof resourceLimitsFromFlags>;
  let redis: ReturnType<typeof redisOption>;
  let notify: ReturnType<typeof notifyOptionsFromFlags>;
  try {
    const parsed = parseFlags(argv, MCP_FLAGS, io.cwd);
    if (parsed.help) {
      io.stdout.write(MCP_USAGE);
      return 0;
    }
    values = parsed.values;
    for (const flag of ['port', 'max-event-clients']) {
      if (values[flag] !== undefined && values.dashboard !== true) {
        throw new UsageError(`\`--${flag}\` is a dashboard setting: add \`--dashboard\``);
      }
    }
    for (const flag of HTTP_ONLY_FLAGS) {
      if (values[flag] !== undefined && values.http === undefined) {
        throw new UsageError(`\`--${flag}\` is an HTTP setting: add \`--http [host:]port\``);
      }
    }
    if (values.http !== undefined) {
      if (values.durable === true)
        throw new UsageError('`--durable` is for stdio servers: drop it or `--http`');
      if (values.dashboard === true) {
        throw new UsageError('`--dashboard` is for stdio servers; with `--http`, run `errand dashboard`');
      }
      if (values['no-auth'] === true && values['token-file'] !== undefined) {
        throw new UsageError('`--no-auth` and `--token-file` contradict each other: give one');
      }
    }
    if (values['max-tasks'] === 0) {
      throw new UsageError('Expected `--max-tasks` to be a positive integer, got "0"');
    }
    sandbox = sandboxFromFlags(values);
    resourceLimits = resourceLimitsFromFlags(values);
    redis = redisOption(values);
    // With a dashboard the page offers browser notifications even when no other sink is asked for.
    notify = notifyOptionsFromFlags(values, process.env, {
      always: values.dashboard === true,
      browser: values.dashboard === true,
    });
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`errand mcp: ${error.message}\n\n${MCP_USAGE}`);
      return error.exitCode;
    }
    throw error;
  }

  const warn = (message: string, context?: Record<string, unknown>) => {
    io.stderr.write(`errand mcp: warning: ${message}${context ? ` ${JSON.stringify(context)}` : ''}\n`);
  };
  if (values.http !== undefined) return runHttpMcp(values, sandbox, redis, warn, io);
  // The first request is answered now; the server, loaded meanwhile, reads it as if it were first.
  const early = answerInitializeEarly(
    io.stdin,
    io.stdout,
    // The server's defaults: `errand mcp` sets none of the three.
    { name: MCP_SERVER_NAME, version: packageVersion(), tasks: true },
    (sent, server) =>
      warn("the initialize answer sent early differs from the server's own", { sent, server }),
  );
  const { startStdioMcpServer } = await import('../mcp/stdio-server.js');
  let server: StdioMcpServer;
  try {
    server = await startStdioMcpServer({
      stdin: early.input,
      stdout: early.output,
      launchDirectory: io.cwd,
      logger: { warn },
      ...(typeof values.cwd === 'string' ? { cwd: values.cwd } : {}),
      runtime: {
        ...(typeof values.home === 'string' ? { home: values.home } : {}),
        ...(typeof values['max-tasks'] === 'number' ? { maxTasks: values['max-tasks'] } : {}),
        ...(values.durable === true ? { durable: true } : {}),
        ...(sandbox === undefined ? {} : { sandbox }),
        ...(resourceLimits === undefined ? {} : { resourceLimits }),
        ...(redis ? { redis } : {}),
        ...(notify ? { notifyPerson: notify } : {}),
      },
      // A server started again for the same client in the same directory takes over the dead one's
      // session: it settles what that server left running and tells the model what happened, once.
      ...(values.durable === true
        ? { resumePrevious: true }
        : { resumeCrashed: values['new-session'] !== true }),
      dashboard:
        values.dashboard === true
          ? {
              ...(typeof values.port === 'number' ? { port: values.port } : {}),
              ...(typeof values['max-event-clients'] === 'number'
                ? { maxEventClients: values['max-event-clients'] }
                : {}),
            }
          : false,
    });
  } catch (error) {
    // A sandbox that cannot be set up is said plainly; the server never runs unconfined instead.
    if (
      ErrandError.hasCode(error, 'SANDBOX_UNAVAILABLE') ||
      ErrandError.hasCode(error, 'LIMITS_UNAVAILABLE')
    ) {
      io.stderr.write(`errand mcp: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
  if (server.dashboard) io.stderr.write(`errand mcp: dashboard at ${server.dashboard.url}\n`);
  const stopListening = onShutdownSignal(() => server.shutdown(), {
    onForce: () => io.stderr.write('errand mcp: stopping now without cleaning up\n'),
  });
  const stopCrashHandling = shutDownOnCrash(io, () => server.shutdown());
  try {
    await server.closed;
    const reason = server.closeReason();
    if (reason !== undefined) io.stderr.write(`errand mcp: the connection closed (${reason}); stopped\n`);
  } finally {
    stopListening();
    stopCrashHandling();
  }
  return 0;
}

/** `errand mcp --http`: runs until SIGINT / SIGTERM. */
async function runHttpMcp(
  values: Record<string, unknown>,
  sandbox: ReturnType<typeof sandboxFromFlags>,
  redis: ReturnType<typeof redisOption>,
  warn: (message: string, context?: Record<string, unknown>) => void,
  io: CommandIo,
): Promise<number> {
  let address: { host: string; port: number };
  let token: string | false | undefined;
  try {
    address = parseHttpAddress(String(values.http));
    token = values['no-auth'] === true ? false : readTokenFile(values['token-file']);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`errand mcp: ${error.message}\n`);
      return error.exitCode;
    }
    throw error;
  }
  const tokenFile =
    typeof values['token-file'] === 'string' && token === undefined ? values['token-file'] : undefined;
  const { startHttpMcpServer } = await import('../mcp/http-server.js');
  let server: HttpMcpServer;
  try {
    server = await startHttpMcpServer({
      host: address.host,
      port: address.port,
      ...(token === undefined ? {} : { token }),
      ...(tokenFile === undefined ? {} : { tokenFile }),
      launchDirectory: io.cwd,
      logger: { warn },
      ...(typeof values.cwd === 'string' ? { cwd: values.cwd } : {}),
      ...(typeof values['max-sessions'] === 'number' ? { maxSessions: values['max-sessions'] } : {}),
      ...(typeof values['session-idle-ms'] === 'number' ? { sessionIdleMs: values['session-idle-ms'] } : {}),
      ...(typeof values['max-body-bytes'] === 'number' ? { maxBodyBytes: values['max-body-bytes'] } : {}),
      runtime: {
        ...(typeof values.home === 'string' ? { home: values.home } : {}),
        ...(typeof values['max-tasks'] === 'number' ? { maxTasks: values['max-tasks'] } : {}),
        ...(sandbox === undefined ? {} : { sandbox }),
        ...(redis ? { redis } : {}),
      },
    });
  } catch (error) {
    if (ErrandError.hasCode(error, 'SANDBOX_UNAVAILABLE') || ErrandError.hasCode(error, 'INVALID_ARGUMENT')) {
      io.stderr.write(`errand mcp: ${(error as Error).message}\n`);
      return ErrandError.hasCode(error, 'INVALID_ARGUMENT') ? 2 : 1;
    }
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      io.stderr.write(`errand mcp: cannot listen on ${String(values.http)}: the address is in use\n`);
      return 1;
    }
    throw error;
  }
  // Listening for signals before saying where it listens: whoever reads the line may stop it at once.
  const stopListening = onShutdownSignal(() => server.shutdown(), {
    onForce: () => io.stderr.write('errand mcp: stopping now without cleaning up\n'),
  });
  io.stderr.write(`errand mcp: MCP endpoint at ${server.url}\n`);
  if (server.token === false) io.stderr.write('errand mcp: no bearer token required (--no-auth)\n');
  else if (tokenFile !== undefined) io.stderr.write(`errand mcp: bearer token written to ${tokenFile}\n`);
  else if (token === undefined) io.stderr.write(`errand mcp: bearer token ${server.token}\n`);
  const stopCrashHandling = shutDownOnCrash(io, () => server.shutdown());
  try {
    await server.closed;
  } finally {
    stopListening();
    stopCrashHandling();
  }
  return 0;
}

/** `--http`'s value: `port`, `host:port` or `[v6]:port`. */
export function parseHttpAddress(raw: string): { host: string; port: number } {
  const match = /^(?:(\[[0-9A-Fa-f:.]+\]|[^:[\]]+):)?(\d{1,5})$/.exec(raw);
  const port = match ? Number(match[2]) : Number.NaN;
  if (!match || port > 65_535) {
    throw new UsageError(
      `Expected \`--http\` to be [host:]port (port 0 to 65535), got ${JSON.stringify(raw)}`,
    );
  }
  const host = match[1]?.replace(/^\[|\]$/g, '') ?? '127.0.0.1';
  return { host, port };
}

/** The token in `--token-file` (or `$ERRAND_MCP_TOKEN`); undefined when one is to be generated. */
function readTokenFile(path: unknown): string | undefined {
  if (typeof path !== 'string') {
    const fromEnvironment = process.env.ERRAND_MCP_TOKEN;
    return fromEnvironment === undefined || fromEnvironment === '' ? undefined : fromEnvironment;
  }
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new UsageError(`Cannot read \`--token-file\` ${JSON.stringify(path)}: ${(error as Error).message}`);
  }
  const token = text.trim();
  return token === '' ? undefined : token;
}

/** How long a crashed server may spend stopping its commands before it exits anyway. */
const CRASH_CLEANUP_MS = 10_000;

/**
 * Background commands run in process groups of their own: a crash must not leave them orphaned. An
 * uncaught exception or rejection is written out, the server shuts down (at most `CRASH_CLEANUP_MS`),
 * and the process exits 1. Returns what takes the handlers off again.
 */
function shutDownOnCrash(
  io: { stderr: { write(text: string): unknown } },
  shutdown: () => Promise<unknown>,
): () => void {
  const onCrash = (error: unknown) => {
    io.stderr.write(
      `errand mcp: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    const exit = () => process.exit(1);
    setTimeout(exit, CRASH_CLEANUP_MS).unref();
    shutdown().then(exit, exit);
  };
  process.once('uncaughtException', onCrash);
  process.once('unhandledRejection', onCrash);
  return () => {
    process.off('uncaughtException', onCrash);
    process.off('unhandledRejection', onCrash);
  };
}
