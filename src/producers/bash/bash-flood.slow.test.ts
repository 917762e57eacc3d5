/** A 1 GiB flood through a background bash task: memory stays bounded, the file is complete, reads stay small. */
import { statSync } from 'node:fs';
import { afterEach, expect, it } from 'vitest';
import { capturingLogger } from '../../../test/fixtures/bash/index.js';
import { createTaskService } from '../../registry/index.js';
import { createTrustedCaller } from '../../tasks/index.js';
import { BashProducer } from './bash-producer.js';
import { BashExecutor } from './executor.js';

const GIB = 1024 * 1024 * 1024;
const MIB = 1024 * 1024;
let cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

it('streams 1 GiB with bounded RSS, a complete output file and bounded reads', {
  timeout: 120_000,
}, async () => {
  const tasks = createTaskService({ logger: capturingLogger() });
  tasks.attachController('test');
  const executor = new BashExecutor({ logger: capturingLogger() });
  const producer = new BashProducer({ tasks, executor, outputLimitBytes: 30_000 });
  cleanups.push(
    () => tasks.dispose(),
    () => executor.dispose(),
    () => producer.dispose(),
  );
  const trusted = createTrustedCaller('test');
  const baseline = process.memoryUsage.rss();
  let peak = baseline;
  let longestRead = 0;
  let reads = 0;
  const { taskId, handle } = await producer.start({ command: `head -c ${GIB} /dev/zero` });
  // Sample memory and read while the flood runs; the sampling cadence decides nothing.
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
    void tasks.read(taskId, trusted).then((result) => {
      reads += 1;
      longestRead = Math.max(longestRead, Buffer.byteLength(result.text));
    });
  }, 20);
  cleanups.push(() => clearInterval(sampler));
  const task = await tasks.wait(taskId, 110_000, trusted);
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage.rss());
  expect(task.status).toBe('completed');
  expect(task.detail).toMatchObject({ reason: 'completed', exitCode: 0, outputBytes: GIB });
  expect(statSync(handle.outputFile!).size).toBe(GIB);
  expect(reads).toBeGreaterThan(0);
  // A read is the newest 30000 bytes plus one marker line.
  expect(longestRead).toBeLessThanOrEqual(30_000 + 200);
  // Bounded, whatever the output size: the window, the write queue, and the pipe chunks V8 has not
  // collected yet (it lets up to about 64 MiB of such external garbage pile up before a collection).
  expect(peak - baseline).toBeLessThan(96 * MIB);
});
