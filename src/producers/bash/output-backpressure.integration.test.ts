/**
 * The output file's backpressure against real processes and a disk that stalls until the test lets it
 * go: memory stays bounded while the disk is behind, also once the shell has exited, and output that
 * waited behind the disk still reaches the file.
 */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  capturingLogger,
  fixtureCommand,
  isAlive,
  strayProcesses,
} from '../../../test/fixtures/bash/index.js';
import { createManualClock } from '../../tasks/clock.js';
import type { CommandHandle } from './command-handle.js';
import { BashExecutor } from './executor.js';
import type { BashExecutorOptions } from './executor-options.js';

/** Writes to output files wait here while the disk is stalled. */
const disk = vi.hoisted(() => ({ stalled: false, held: [] as Array<() => void> }));

vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs')>();
  const writev = ((...args: Parameters<typeof fs.writev>) => {
    const write = () => (fs.writev as (...forwarded: unknown[]) => void)(...args);
    if (disk.stalled) disk.held.push(write);
    else write();
  }) as typeof fs.writev;
  return { ...fs, writev };
});

function stallDisk(): void {
  disk.stalled = true;
}

function releaseDisk(): void {
  disk.stalled = false;
  for (const write of disk.held.splice(0)) write();
}

const MIB = 1024 * 1024;
let executors: BashExecutor[] = [];

function executor(options: BashExecutorOptions = {}): BashExecutor {
  const created = new BashExecutor({ logger: capturingLogger(), killGraceMs: 2000, ...options });
  executors.push(created);
  return created;
}

afterEach(async () => {
  releaseDisk();
  await Promise.all(executors.map((created) => created.dispose()));
  executors = [];
});

/** Resolves once the command has produced at least `bytes` bytes of output. */
function outputReached(handle: CommandHandle, bytes: number): Promise<void> {
  return new Promise((resolve, reject) => {
    if (handle.outputBytes >= bytes) return resolve();
    const unsubscribe = handle.onOutput((total) => {
      if (total < bytes) return;
      unsubscribe();
      resolve();
    });
    void handle.stopped.then(() => reject(new Error(`stopped after ${handle.outputBytes} bytes`)));
  });
}

/** Lets pending I/O callbacks and promise reactions run. */
function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

describe('output backpressure', () => {
  it('keeps memory bounded while the disk stalls, also after the shell exits and leaves a writer', async () => {
    const highWater = 64 * 1024;
    const run = executor({ spillHighWaterMarkBytes: highWater, maxOutputFileBytes: 64 * MIB });
    stallDisk();
    const handle = run.start({ command: fixtureCommand('flood-leftover') });
    // The disk takes nothing: once the output reaches the mark, the pipes are paused.
    await outputReached(handle, highWater);
    process.kill(handle.pid!, 'SIGUSR1');
    // The shell is gone; the flood it left is stopped a grace later. Meanwhile nothing may be read
    // past the mark, although Node resumes a child's pipes when it exits.
    await vi.waitFor(() => expect(strayProcesses()).toEqual([]), { timeout: 10_000, interval: 5 });
    expect(handle.outputBytes).toBeLessThan(highWater + MIB);
    releaseDisk();
    const facts = await handle.stopped;
    expect(facts).toMatchObject({ reason: 'completed', exitCode: 0, signalledProcesses: 1 });
    expect(readFileSync(facts.outputFile!).length).toBe(facts.outputBytes);
  });

  it.each([true, false])(
    'writes output that waited behind a stalled disk when the shell exits meanwhile (killProcessGroupOnExit: %s)',
    async (killProcessGroupOnExit) => {
      const clock = createManualClock(Date.now());
      const run = executor({ clock, spillHighWaterMarkBytes: 1024, killProcessGroupOnExit });
      stallDisk();
      const handle = run.start({ command: fixtureCommand('burst-exit') });
      await outputReached(handle, 2000);
      process.kill(handle.pid!, 'SIGUSR1');
      // The shell exits with its last 60000 bytes still in the pipe.
      await vi.waitFor(() => expect(isAlive(handle.pid!)).toBe(false), { timeout: 10_000, interval: 5 });
      // However long the disk takes, the pipes are not given up while output waits for it.
      for (let step = 0; step < 10; step += 1) {
        clock.advance(run.options.killGraceMs);
        await turn();
      }
      expect(handle.running).toBe(true);
      releaseDisk();
      const facts = await handle.stopped;
      expect(facts).toMatchObject({ reason: 'completed', exitCode: 0, outputBytes: 62_000 });
      expect(readFileSync(facts.outputFile!, 'latin1')).toBe(`${'a'.repeat(2000)}${'b'.repeat(60_000)}`);
    },
  );
});
