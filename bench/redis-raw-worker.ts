/**
 * The baseline of `bench:redis`: a bare BullMQ worker in a process of its own, on the same Redis, with
 * the same concurrency as the Errand worker. `noop` jobs return at once; `spawn` jobs run the same
 * command an Errand task runs (`bash -c true`) and wait for its exit — the raw cost of what Errand adds
 * its tree kill, output stream and exactly-once settle to.
 */
import { spawn } from 'node:child_process';
import { Worker } from 'bullmq';

const [url, queueName, mode, concurrency] = process.argv.slice(2) as [string, string, string, string];
const worker = new Worker(
  queueName,
  async () => {
    if (mode !== 'spawn') return;
    await new Promise<void>((resolve) => {
      spawn('bash', ['-c', 'true'], { detached: true, stdio: 'ignore' }).on('exit', () => resolve());
    });
  },
  { connection: { url, maxRetriesPerRequest: null }, concurrency: Number(concurrency) },
);
worker.on('ready', () => process.stdout.write('ready\n'));
process.on('SIGTERM', () => {
  void worker.close().then(() => process.exit(0));
});
