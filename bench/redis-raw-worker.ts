/**
 * The baseline of `bench:redis`: a bare BullMQ worker in a process of its own, on the same Redis, with
 * the same concurrency as the Errand worker. `noop` jobs return at once; `spawn` jobs run the same
 * command an Errand task runs (`bash -c true`) the way `bench:bash`'s raw spawn does — detached, stdin
 * on /dev/null, stdout and stderr piped and read — and finish once it exited and both pipes closed: the
 * raw cost of what Errand adds its tree kill, output stream and exactly-once settle to.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { Worker } from 'bullmq';

const [url, queueName, mode, concurrency] = process.argv.slice(2) as [string, string, string, string];

/** Resolves once the child exited and both pipes closed, its output read. */
function finished(child: ChildProcess): Promise<void> {
  const closed = (stream: NodeJS.ReadableStream | null) =>
    stream
      ? new Promise<void>((resolve) => {
          stream.on('data', () => {});
          stream.once('close', () => resolve());
        })
      : Promise.resolve();
  return Promise.all([
    new Promise<void>((resolve) => child.once('exit', () => resolve())),
    closed(child.stdout),
    closed(child.stderr),
  ]).then(() => undefined);
}

const worker = new Worker(
  queueName,
  async () => {
    if (mode !== 'spawn') return;
    await finished(spawn('bash', ['-c', 'true'], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] }));
  },
  { connection: { url, maxRetriesPerRequest: null }, concurrency: Number(concurrency) },
);
worker.on('ready', () => process.stdout.write('ready\n'));
process.on('SIGTERM', () => {
  void worker.close().then(() => process.exit(0));
});
