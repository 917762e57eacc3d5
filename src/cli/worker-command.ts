/**
 * `errand worker --redis <url>`: runs the background commands runtimes of a deployment dispatch through
 * Redis, until SIGINT / SIGTERM. The first signal drains (no new jobs; running commands get
 * `--drain-timeout` ms to finish, then are cancelled); a second exits at once — the lifeline then stops
 * every command's tree, as it does when the worker is SIGKILLed. One line on stderr says it runs.
 */
import { ErrandError } from '../tasks/index.js';
import { startErrandWorker } from '../worker/errand-worker.js';
import { describeFlags, type FlagSpecs, parseFlags, UsageError } from './args.js';
import type { CommandIo } from './mcp-command.js';
import { processIo } from './mcp-command.js';
import { REDIS_FLAGS, redisOption } from './redis-flags.js';
import { onShutdownSignal } from './shutdown-signals.js';

export const WORKER_FLAGS: FlagSpecs = {
  ...REDIS_FLAGS,
  concurrency: {
    type: 'count',
    placeholder: '<n>',
    description: 'commands run at once, per label (default 8)',
  },
  name: {
    type: 'string',
    placeholder: '<name>',
    description: 'the worker name, unique among live workers (letters, digits, _ . -; default worker-<pid>)',
  },
  labels: {
    type: 'string',
    placeholder: '<a,b>',
    description: 'take jobs of these labels only (default: the default label)',
  },
  home: {
    type: 'path',
    placeholder: '<dir>',
    description: 'where output spill files live (default: $ERRAND_HOME/worker, else ~/.errand/worker)',
  },
  heartbeat: {
    type: 'count',
    placeholder: '<ms>',
    description: 'how often it beats its heartbeat and checks cancels (default 1000)',
  },
  'heartbeat-ttl': {
    type: 'count',
    placeholder: '<ms>',
    description:
      'how long its heartbeat lives unbeaten; then its running jobs are settled lost (default 5000)',
  },
  'drain-timeout': {
    type: 'integer',
    placeholder: '<ms>',
    description: 'on SIGTERM, how long running commands may finish before they are cancelled (default 30000)',
  },
};

export const WORKER_USAGE = `Usage: errand worker --redis <url> [options]

Runs background commands that Errand runtimes (errand mcp --redis, errand chat --redis,
createErrandRuntime({ redis })) dispatch through Redis, each in its own process group with the same
tree kill, output cap and lifeline as local commands.

Options:
${describeFlags(WORKER_FLAGS)}
`;

export async function runWorkerCommand(
  argv: readonly string[],
  io: CommandIo = processIo(),
): Promise<number> {
  let settings: Parameters<typeof startErrandWorker>[0];
  try {
    const parsed = parseFlags(argv, WORKER_FLAGS, io.cwd);
    if (parsed.help) {
      io.stdout.write(WORKER_USAGE);
      return 0;
    }
    const values = parsed.values;
    const redis = redisOption(values);
    if (redis === undefined) throw new UsageError('`--redis <url>` is required');
    const labels =
      typeof values.labels === 'string'
        ? values.labels.split(',').filter((label) => label !== '')
        : undefined;
    settings = {
      url: redis.url,
      ...(redis.prefix === undefined ? {} : { prefix: redis.prefix }),
      ...(typeof values.concurrency === 'number' ? { concurrency: values.concurrency } : {}),
      ...(typeof values.name === 'string' ? { name: values.name } : {}),
      ...(labels === undefined ? {} : { labels }),
      ...(typeof values.home === 'string' ? { home: values.home } : {}),
      ...(typeof values.heartbeat === 'number' ? { heartbeatMs: values.heartbeat } : {}),
      ...(typeof values['heartbeat-ttl'] === 'number' ? { heartbeatTtlMs: values['heartbeat-ttl'] } : {}),
      ...(typeof values['drain-timeout'] === 'number' ? { drainTimeoutMs: values['drain-timeout'] } : {}),
      logger: {
        warn: (message: string) => {
          io.stderr.write(`errand worker: warning: ${message}\n`);
        },
      },
    };
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`errand worker: ${error.message}\n\n${WORKER_USAGE}`);
      return error.exitCode;
    }
    throw error;
  }
  let worker: Awaited<ReturnType<typeof startErrandWorker>>;
  try {
    worker = await startErrandWorker(settings);
  } catch (error) {
    if (
      ErrandError.isInstance(error) &&
      (error.fault === 'caller' || error.code === 'REDIS_PACKAGES_MISSING')
    ) {
      io.stderr.write(`errand worker: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  const labels = worker.options.labels.length === 0 ? 'default' : worker.options.labels.join(',');
  io.stderr.write(
    `errand worker: ${worker.name} takes jobs of ${labels} (concurrency ${worker.options.concurrency}) from prefix ${worker.options.prefix}\n`,
  );
  await new Promise<void>((resolve) => {
    const remove = onShutdownSignal(async () => {
      io.stderr.write(`errand worker: ${worker.name} drains (${worker.runningCount} running)\n`);
      await worker.drain();
      remove();
      resolve();
    });
  });
  return 0;
}
