/**
 * The baseline of `bench:redis`: a bare BullMQ worker in a process of its own, on the same Redis, with
 * the same concurrency as the Errand worker. `noop` jobs return at once; `spawn` jobs run the same
 * command an Errand task runs (`bash -c true`) the way `bench:bash`'s raw spawn does — detached, stdin
 * on /dev/null, stdout and stderr piped and read — and finish once it exited and both pipes closed: the
 * raw cost of what Errand adds its tree kill, output stream and exactly-once settle to. `launch` jobs
 * start it with Errand's own launcher instead (`createSpawnLauncher`: no fork where the native helper is
 * built), so the spawn mechanism is not what a comparison measures. A job with `{ stamp: true }` runs
 * `date +%s%N` instead and returns what it printed: the baseline of exit → notification.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { Worker } from 'bullmq';
import { createSpawnLauncher } from '../src/process/index.js';

const [url, queueName, mode, concurrency] = process.argv.slice(2) as [string, string, string, string];

/** Errand's own launcher (no fork where its native helper is built), from this process. */
const launcher = createSpawnLauncher();
const environment = Object.fromEntries(
  Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined),
);

/** Resolves once the child exited and both pipes closed, with its output read. */
function finished(child: Pick<ChildProcess, 'stdout' | 'stderr' | 'once'>): Promise<string> {
  let text = '';
  const closed = (stream: NodeJS.ReadableStream | null) =>
    stream
      ? new Promise<void>((resolve) => {
          stream.on('data', (chunk: Buffer) => {
            text += chunk.toString();
          });
          stream.once('close', () => resolve());
        })
      : Promise.resolve();
  return Promise.all([
    new Promise<void>((resolve) => child.once('exit', () => resolve())),
    closed(child.stdout),
    closed(child.stderr),
  ]).then(() => text);
}

const worker = new Worker(
  queueName,
  async (job: { data: { stamp?: boolean } }) => {
    if (job.data.stamp === true) {
      const launched = launcher.launch({
        file: 'date',
        args: ['+%s%N'],
        cwd: process.cwd(),
        env: environment,
      });
      return finished(launched as unknown as Pick<ChildProcess, 'stdout' | 'stderr' | 'once'>);
    }
    if (mode === 'spawn') {
      await finished(spawn('bash', ['-c', 'true'], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] }));
    } else if (mode === 'launch') {
      const launched = launcher.launch({
        file: 'bash',
        args: ['-c', 'true'],
        cwd: process.cwd(),
        env: environment,
      });
      await finished(launched as unknown as Pick<ChildProcess, 'stdout' | 'stderr' | 'once'>);
    }
    return undefined;
  },
  { connection: { url, maxRetriesPerRequest: null }, concurrency: Number(concurrency) },
);
worker.on('ready', () => process.stdout.write('ready\n'));
process.on('SIGTERM', () => {
  void worker.close().then(() => process.exit(0));
});
