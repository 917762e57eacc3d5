/** Fails a test file that leaves processes running, and kills them so one leak does not cascade. */
import { afterAll, vi } from 'vitest';
import { findMarkedProcesses, installLeakMark } from './process-census.js';

const mark = installLeakMark();

afterAll(async () => {
  vi.useRealTimers();
  // Killed processes need a moment to be reaped; a real leak is still there after the grace.
  const deadline = Date.now() + 3000;
  let survivors = findMarkedProcesses(mark);
  while (survivors.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    survivors = findMarkedProcesses(mark);
  }
  if (survivors.length === 0) return;
  for (const survivor of survivors) {
    try {
      process.kill(survivor.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  const list = survivors.map((survivor) => `  ${survivor.pid}: ${survivor.commandLine}`).join('\n');
  throw new Error(`This test file left ${survivors.length} process(es) running:\n${list}`);
});
