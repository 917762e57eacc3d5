/**
 * `errand serve`: the dashboard on 127.0.0.1 for a runtime of its own. Its session list is the store's
 * (every session recorded in the data directory); live work, output and Stop exist only for work this
 * process runs — a dashboard shows the live work of the process that serves it, so an MCP server's work
 * is watched with `errand mcp --dashboard`. Prints the URL (token included) on stdout and runs until
 * SIGINT / SIGTERM, then closes the server and disposes the runtime, leaving no process behind.
 */
import { createErrandRuntime } from '../host/index.js';
import { createDashboardServer } from '../server/index.js';
import type { ModelPort } from '../session/index.js';
import { describeFlags, type FlagSpecs, parseFlags, UsageError } from './args.js';
import { type CommandIo, processIo } from './mcp-command.js';
import { onShutdownSignal } from './shutdown-signals.js';

export const SERVE_FLAGS: FlagSpecs = {
  port: {
    type: 'port',
    placeholder: '<n>',
    description: 'the port on 127.0.0.1 (default: a free port)',
  },
  home: {
    type: 'path',
    placeholder: '<dir>',
    description: 'the data directory whose sessions are listed (default: $ERRAND_HOME, else ~/.errand)',
  },
};

export const SERVE_USAGE = `Usage: errand serve [options]

Serves the Errand dashboard on 127.0.0.1 until SIGINT or SIGTERM. The URL it prints carries the access
token. It lists the sessions of the data directory; live work is shown by the process that runs it
(use \`errand mcp --dashboard\` to watch an MCP server's work).

Options:
${describeFlags(SERVE_FLAGS)}
`;

/** `errand serve` runs no conversation: a model request would be a bug, and is refused. */
const NO_MODEL: ModelPort = Object.freeze({
  name: 'none',
  generate: () => Promise.reject(new Error('errand serve runs no model')),
});

export async function runServeCommand(argv: readonly string[], io: CommandIo = processIo()): Promise<number> {
  let values: Record<string, unknown>;
  try {
    const parsed = parseFlags(argv, SERVE_FLAGS, io.cwd);
    if (parsed.help) {
      io.stdout.write(SERVE_USAGE);
      return 0;
    }
    values = parsed.values;
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`errand serve: ${error.message}\n\n${SERVE_USAGE}`);
      return error.exitCode;
    }
    throw error;
  }

  const warn = (message: string, context?: Record<string, unknown>) => {
    io.stderr.write(`errand serve: warning: ${message}${context ? ` ${JSON.stringify(context)}` : ''}\n`);
  };
  const runtime = await createErrandRuntime({
    model: NO_MODEL,
    pty: false,
    logger: { warn },
    ...(typeof values.home === 'string' ? { home: values.home } : {}),
  });
  const server = createDashboardServer({
    backend: runtime.dashboard,
    host: '127.0.0.1',
    ...(typeof values.port === 'number' ? { port: values.port } : {}),
    logger: { warn },
  });
  try {
    const address = await server.listen();
    io.stdout.write(`Errand dashboard: ${address.url}\n`);
  } catch (error) {
    await server.close();
    await runtime.dispose();
    throw error;
  }

  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => {
    stop = resolve;
  });
  const stopListening = onShutdownSignal(stop, {
    onForce: () => io.stderr.write('errand serve: stopping now without cleaning up\n'),
  });
  try {
    await stopped;
    await server.close();
    await runtime.dispose();
  } finally {
    stopListening();
  }
  return 0;
}
