/**
 * `errand mcp`: Errand's MCP server on stdio. Stdout carries the protocol and nothing else; the
 * dashboard URL and warnings go to stderr. Ends when stdin closes, when the transport closes for any
 * other reason (an error, an oversized message) or on SIGINT / SIGTERM, after stopping every
 * non-durable background process it started and removing their output files; with `--durable`,
 * background commands run on. The next server of the same client in the same directory takes over a dead
 * server's session (`--new-session` opts out): its durable commands are resumed, and what became of the
 * rest (stopped by the lifeline, ended with its status, or lost) is told once and settled in the store.
 */
import type { Readable, Writable } from 'node:stream';
import { startStdioMcpServer } from '../mcp/index.js';
import { ErrandError } from '../tasks/index.js';
import { describeFlags, type FlagSpecs, parseFlags, UsageError } from './args.js';
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
    description: 'background tasks the client may have running at once (default 32)',
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
  ...SANDBOX_FLAGS,
  ...REDIS_FLAGS,
};

export const MCP_USAGE = `Usage: errand mcp [options]

Runs Errand's MCP server on stdio: bash, task_output, task_list, task_kill (and the pty tools where
node-pty is installed) for one MCP client, with background task notifications.

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
  let redis: ReturnType<typeof redisOption>;
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
    if (values['max-tasks'] === 0) {
      throw new UsageError('Expected `--max-tasks` to be a positive integer, got "0"');
    }
    sandbox = sandboxFromFlags(values);
    redis = redisOption(values);
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
  let server: Awaited<ReturnType<typeof startStdioMcpServer>>;
  try {
    server = await startStdioMcpServer({
      stdin: io.stdin,
      stdout: io.stdout,
      launchDirectory: io.cwd,
      logger: { warn },
      ...(typeof values.cwd === 'string' ? { cwd: values.cwd } : {}),
      runtime: {
        ...(typeof values.home === 'string' ? { home: values.home } : {}),
        ...(typeof values['max-tasks'] === 'number' ? { maxTasks: values['max-tasks'] } : {}),
        ...(values.durable === true ? { durable: true } : {}),
        ...(sandbox === undefined ? {} : { sandbox }),
        ...(redis ? { redis } : {}),
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
    if (ErrandError.hasCode(error, 'SANDBOX_UNAVAILABLE')) {
      io.stderr.write(`errand mcp: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
  if (server.dashboard) io.stderr.write(`errand mcp: dashboard at ${server.dashboard.url}\n`);
  const stopListening = onShutdownSignal(() => server.shutdown(), {
    onForce: () => io.stderr.write('errand mcp: stopping now without cleaning up\n'),
  });
  // Background commands run in process groups of their own: a crash must not leave them orphaned.
  const onCrash = (error: unknown) => {
    io.stderr.write(
      `errand mcp: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    const exit = () => process.exit(1);
    setTimeout(exit, CRASH_CLEANUP_MS).unref();
    server.shutdown().then(exit, exit);
  };
  process.once('uncaughtException', onCrash);
  process.once('unhandledRejection', onCrash);
  try {
    await server.closed;
    const reason = server.closeReason();
    if (reason !== undefined) io.stderr.write(`errand mcp: the connection closed (${reason}); stopped\n`);
  } finally {
    stopListening();
    process.off('uncaughtException', onCrash);
    process.off('unhandledRejection', onCrash);
  }
  return 0;
}

/** How long a crashed server may spend stopping its commands before it exits anyway. */
const CRASH_CLEANUP_MS = 10_000;
