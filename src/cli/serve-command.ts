/**
 * `errand serve`: the dashboard on 127.0.0.1 over the data directory. It shows the sessions and the
 * background work of every runtime recording into that store — `errand mcp`, `errand chat`, other
 * processes — by polling the store (`createStoreDashboardBackend`); Stop reaches the runtime holding the
 * work as a command through the store. It is the data directory's own dashboard: its token is kept in
 * the data directory (`dashboard.json`, 0600) and the port it last used is tried first, so its URL stays
 * the same across restarts; while it runs it is recorded in `run/dashboard.json` for `errand dashboard`,
 * and a second `errand serve` on the same data directory prints the running one's URL instead of
 * starting another. Prints the URL (token included) on stdout and runs until SIGINT / SIGTERM, then
 * closes the server and the store, leaving no process behind. With `--redis`, work that runs on
 * `errand worker`s shows its output from its Redis stream, and its Stop, when no runtime holds it, is
 * recorded on its job so its worker kills the tree.
 */

import { createPersonNotifier, type PersonNotifier } from '../notify-person/index.js';
import { RedisContext } from '../redis/redis-context.js';
import { redisProviderOptions } from '../redis/redis-options.js';
import { createRedisWorkAccess } from '../redis/redis-work-access.js';
import { createDashboardServer, createStoreDashboardBackend } from '../server/index.js';
import { DataDirectoryError, openSqliteSessionStore, resolveErrandHome } from '../store/index.js';
import { systemClock } from '../tasks/clock.js';
import { ErrandError } from '../tasks/index.js';
import { describeFlags, type FlagSpecs, parseFlags, UsageError } from './args.js';
import {
  dashboardUrl,
  loadDashboardSettings,
  recordRunningDashboard,
  runningDashboard,
  saveDashboardPort,
} from './dashboard-state.js';
import { type CommandIo, processIo } from './mcp-command.js';
import { NOTIFY_FLAGS, notifyOptionsFromFlags } from './notify-flags.js';
import { REDIS_FLAGS, redisOption } from './redis-flags.js';
import { onShutdownSignal } from './shutdown-signals.js';

export const SERVE_FLAGS: FlagSpecs = {
  port: {
    type: 'port',
    placeholder: '<n>',
    description: 'the port on 127.0.0.1 (default: the port it used last time if free, else a free one)',
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
  redis: {
    ...REDIS_FLAGS.redis!,
    description:
      'the Redis the runtimes run background commands through (redis://, rediss:// or redis+sentinel://, never printed): remote work shows its output from Redis, and a Stop of work no runtime holds reaches its worker',
  },
  'redis-prefix': REDIS_FLAGS['redis-prefix']!,
  ...NOTIFY_FLAGS,
};

export const SERVE_USAGE = `Usage: errand serve [options]

Serves the Errand dashboard on 127.0.0.1 until SIGINT or SIGTERM. The URL it prints carries the access
token. It shows the sessions and background work of every Errand process using the data directory
(errand mcp, errand chat, ...), read from its store every second, and stops work through that store.
With --redis, work running on errand workers shows its output from Redis, and a Stop of such work whose
runtime is gone is recorded on its job, so its worker stops it.

Options:
${describeFlags(SERVE_FLAGS)}
`;

export async function runServeCommand(argv: readonly string[], io: CommandIo = processIo()): Promise<number> {
  let values: Record<string, unknown>;
  let redis: ReturnType<typeof redisOption>;
  let notify: ReturnType<typeof notifyOptionsFromFlags>;
  try {
    const parsed = parseFlags(argv, SERVE_FLAGS, io.cwd);
    if (parsed.help) {
      io.stdout.write(SERVE_USAGE);
      return 0;
    }
    values = parsed.values;
    redis = redisOption(values);
    // The page's browser notifications need no flag; a webhook or the desktop does.
    notify = notifyOptionsFromFlags(values, process.env, { always: true });
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
  const home = typeof values.home === 'string' ? values.home : resolveErrandHome();
  const running = runningDashboard(home);
  if (running !== undefined) {
    const { token } = loadDashboardSettings(home);
    io.stdout.write(`Errand dashboard (already running): ${dashboardUrl(running.port, token)}\n`);
    return 0;
  }
  // The store first: a data directory that cannot be used is reported as the store finds it.
  const store = openSqliteSessionStore({ home });
  let settings: ReturnType<typeof loadDashboardSettings>;
  try {
    settings = loadDashboardSettings(home);
  } catch (error) {
    store.close();
    throw ErrandError.isInstance(error)
      ? error
      : new DataDirectoryError(home, (error as NodeJS.ErrnoException).code, error);
  }
  let link: RedisContext | undefined;
  try {
    link =
      redis === undefined
        ? undefined
        : await RedisContext.open(redis.url, redis.prefix ?? 'errand', { warn });
  } catch (error) {
    store.close();
    throw error;
  }
  const remote =
    link === undefined
      ? undefined
      : createRedisWorkAccess(link, {
          settledRetentionMs: redisProviderOptions.defaults.settledRetentionMs,
          clock: systemClock,
        });
  const backend = createStoreDashboardBackend({ store, logger: { warn }, ...(remote ? { remote } : {}) });
  let notifier: PersonNotifier;
  try {
    notifier = createPersonNotifier({ ...notify, feed: backend.events, logger: { warn } });
  } catch (error) {
    backend.dispose();
    store.close();
    await link?.close();
    throw error;
  }
  const release = async () => {
    notifier.dispose();
    backend.dispose();
    store.close();
    await link?.close();
  };
  const listen = async (port: number | undefined) => {
    const server = createDashboardServer({
      backend,
      notices: notifier,
      host: '127.0.0.1',
      token: settings.token,
      ...(port === undefined ? {} : { port }),
      ...(typeof values['max-event-clients'] === 'number'
        ? { maxEventClients: values['max-event-clients'] }
        : {}),
      logger: { warn },
    });
    try {
      return { server, address: await server.listen() };
    } catch (error) {
      await server.close();
      throw error;
    }
  };
  let started: Awaited<ReturnType<typeof listen>>;
  try {
    if (typeof values.port === 'number') started = await listen(values.port);
    else {
      // The port of last time keeps the URL the person bookmarked; taken meanwhile, any free one.
      started = await listen(settings.port).catch((error: NodeJS.ErrnoException) => {
        if (settings.port === undefined || error.code !== 'EADDRINUSE') throw error;
        return listen(undefined);
      });
    }
  } catch (error) {
    await release();
    throw error;
  }
  const { server, address } = started;
  saveDashboardPort(home, settings, address.port);
  const unrecord = recordRunningDashboard(home, address.port);
  io.stdout.write(`Errand dashboard: ${address.url}\n`);

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
    await release();
  } finally {
    unrecord();
    stopListening();
  }
  return 0;
}
