/**
 * Finds processes a test file left behind. Every process started from this worker inherits a marker in
 * its environment, so descendants that escaped the process group (setsid, double fork) are found too.
 */
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';

export const LEAK_MARK_VARIABLE = 'ERRAND_TEST_LEAK_MARK';

export function installLeakMark(): string {
  const mark = randomUUID();
  process.env[LEAK_MARK_VARIABLE] = mark;
  return mark;
}

export interface MarkedProcess {
  readonly pid: number;
  readonly commandLine: string;
}

/** Live (non-zombie) processes other than this one whose environment carries `mark`. */
export function findMarkedProcesses(mark: string): MarkedProcess[] {
  const needle = `${LEAK_MARK_VARIABLE}=${mark}`;
  const found: MarkedProcess[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const environment = readFileSync(`/proc/${pid}/environ`, 'latin1');
      if (!environment.split('\0').includes(needle)) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      if (state === 'Z' || state === 'X') continue;
      const commandLine = readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').join(' ').trim();
      found.push({ pid, commandLine });
    } catch {
      // The process ended while we looked, or is not ours to read.
    }
  }
  return found;
}
