/**
 * `errand serve`: the dashboard on 127.0.0.1 over the data directory. It shows the sessions and the
 * background work of every runtime recording into that store — `errand mcp`, `errand chat`, other
 * processes — by polling the store (`createStoreDashboardBackend`); Stop reaches the runtime holding the
 * work as a command through the store. Prints the URL (token included) on stdout and runs until
 * SIGINT / SIGTERM, then closes the server and the store, leaving no process behind.
 */
import { createDashboardServer, createStoreDashboardBackend } from '../server/index.js';
import { openSqliteSessionStore } from '../store/index.js';
import { describeFlags, type FlagSpecs, parseFlags, UsageError } from './args.js';
import { type CommandIo, processIo } from './mcp-command.js';
import { onShutdownSignal } from './shutdown-signals.js';

export const SERVE_FLAGS: FlagSpecs = {
  port: {
    type: 'port',
    placeholder: '<n>',
    description: 'the port on 127.0.0.1 (default: a free port)',
  },
  'max-event-clients': {
    type: 'count',
    placeholder: '<n>',
    description: 'dashboard pages open at once; one more is refused with 503 (default 64)',
  },
  home: {
    type: 'path',
    placeholder: '<dir>',
    description:
      'the data directory whose sessions and work are shown (default: $ERRAND_HOME, else ~/.errand)',
  },
};

export const SERVE_USAGE = `Usage: errand serve [options]

Serves the Errand dashboard on 127.0.0.1 until SIGINT or SIGTERM. The URL it prints carries the access
token. It shows the sessions and background work of every Errand process using the data directory
(errand mcp, errand chat, ...), read from its store every second, and stops work through that store.

Options:
${describeFlags(SERVE_FLAGS)}
`;

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
  const store = openSqliteSessionStore(typeof values.home === 'string' ? { home: values.home } : {});
  const backend = createStoreDashboardBackend({ store, logger: { warn } });
  const release = () => {
    backend.dispose();
    store.close();
  };
  const server = createDashboardServer({
    backend,
    host: '127.0.0.1',
    ...(typeof values.port === 'number' ? { port: values.port } : {}),
    ...(typeof values['max-event-clients'] === 'number'
      ? { maxEventClients: values['max-event-clients'] }
      : {}),
    logger: { warn },
  });
  try {
    const address = await server.listen();
    io.stdout.write(`Errand dashboard: ${address.url}\n`);
  } catch (error) {
    await server.close();
    release();
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
    release();
  } finally {
    stopListening();
  }
  return 0;
}
