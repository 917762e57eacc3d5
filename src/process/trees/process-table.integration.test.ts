/** The procfs source against the real /proc: start times, the clock-tick lower bound, last pid. */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { procfsSource } from './process-table.js';

describe('procfsSource', () => {
  it('gives a clock-tick lower bound that every process spawned after it respects', async () => {
    const source = procfsSource();
    try {
      for (let round = 0; round < 10; round += 1) {
        const before = source.clockTicks();
        const child = spawn('sleep', ['1000'], { stdio: 'ignore' });
        const entry = source.read(child.pid!);
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        await exited;
        expect(entry).toBeDefined();
        expect(entry!.startTime).toBeGreaterThanOrEqual(before);
        // And it is a close bound, not just zero.
        expect(entry!.startTime - before).toBeLessThan(100);
        expect(source.lastPid()).toBeGreaterThan(0);
      }
    } finally {
      source.close?.();
    }
  });

  it('reads its own entry and reports a missing pid as gone', () => {
    const source = procfsSource();
    expect(source.read(process.pid)).toMatchObject({ pid: process.pid, ppid: process.ppid });
    expect(source.read(2 ** 22 + 12345)).toBeUndefined();
    expect(source.listPids()).toContain(process.pid);
  });
});
