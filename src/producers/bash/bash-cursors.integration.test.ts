/**
 * Many readers of one real command's output: cursors over the output file, each at its own position,
 * following the command as it writes, none of them disturbing the model's consuming read.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { capturingLogger, fixtureCommand, waitForOutput } from '../../../test/fixtures/bash/index.js';
import { createTaskService } from '../../registry/index.js';
import { createOwner, type OutputCursor, type TaskService } from '../../tasks/index.js';
import { BashProducer } from './bash-producer.js';
import { BashExecutor } from './executor.js';

let cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

function setup(): { tasks: TaskService; producer: BashProducer } {
  const tasks = createTaskService({ logger: capturingLogger(), maxCursorReadBytes: 256 * 1024 });
  tasks.attachController('test');
  const executor = new BashExecutor({ logger: capturingLogger(), killGraceMs: 300 });
  const producer = new BashProducer({ tasks, executor });
  cleanups.push(
    () => tasks.dispose(),
    () => executor.dispose(),
    () => producer.dispose(),
  );
  return { tasks, producer };
}

/** Follows a cursor to the task's end, hashing every byte it read. */
async function follow(cursor: OutputCursor): Promise<{ sha256: string; bytes: number; reads: number }> {
  const hash = createHash('sha256');
  let bytes = 0;
  let reads = 0;
  for (;;) {
    const read = await cursor.read({ waitMs: 10_000 });
    reads += 1;
    expect(read.missedBytes).toBe(0);
    expect(read.from).toBe(bytes);
    hash.update(read.text, 'utf8');
    bytes = read.next;
    if (read.ended) return { sha256: hash.digest('hex'), bytes, reads };
  }
}

describe('cursors over a bash command', () => {
  it('lets two readers follow a 5 MB output as it is written, each receiving all of it in order', async () => {
    const { tasks, producer } = setup();
    const owner = createOwner('readers');
    const size = 5 * 1024 * 1024;
    // Numbered lines, so a byte out of order or missing changes the hash.
    const command = `seq 1 2000000 | head -c ${size}`;
    const { taskId, handle } = await producer.start({ command, owner });
    const readers = [await tasks.openCursor(taskId, owner), await tasks.openCursor(taskId, owner)];
    const [one, two] = await Promise.all(readers.map(follow));
    const expected = createHash('sha256').update(readFileSync(handle.outputFile!)).digest('hex');
    expect(one).toMatchObject({ sha256: expected, bytes: size });
    expect(two).toMatchObject({ sha256: expected, bytes: size });
    // Read while it was written: more than one read each, every byte exactly once.
    expect(one!.reads).toBeGreaterThan(1);
    // The model's cursor was never touched: its read still has the newest output for it.
    const modelRead = await tasks.read(taskId, owner);
    expect(modelRead.text.endsWith(readFileSync(handle.outputFile!, 'utf8').slice(-1000))).toBe(true);
    expect(modelRead.snapshot.status).toBe('completed');
  });

  it('opens on the newest bytes, waits for more, and never splits a character', async () => {
    const { tasks, producer } = setup();
    const { taskId, handle } = await producer.start({ command: fixtureCommand('utf8-split') });
    await waitForOutput(handle, 'ready');
    const whole = await tasks.openCursor(taskId);
    // The file is written after the pipe was read: follow it until "ready" has reached it.
    let early = '';
    while (!early.includes('ready\n')) early += (await whole.read({ waitMs: 10_000 })).text;
    expect(early).toBe('ready\n');
    const tail = await tasks.openCursor(taskId, undefined, { from: 'end', tailBytes: 3 });
    const first = await tail.read();
    // "ready\n" is in the file; the first two bytes of "€" wait in the producer for their third.
    expect(first.text).toBe('dy\n');
    const waiting = tail.read({ waitMs: 10_000 });
    process.kill(handle.pid!, 'SIGUSR1');
    expect((await waiting).text).toMatch(/^€/);
    await tasks.wait(taskId, 10_000);
    const all = await whole.read();
    expect(early + all.text).toBe('ready\n€\n');
    expect(all.ended).toBe(true);
    expect(tasks.get(taskId).detail.outputFile).toBe(handle.outputFile);
  });
});
