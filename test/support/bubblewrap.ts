/**
 * bubblewrap (`bwrap`), which the sandbox profiles run commands under, found the way a person has it
 * installed: `$ERRAND_BWRAP`, else `bwrap` on PATH. Missing, a sandbox suite is skipped with one line;
 * with `ERRAND_REQUIRE_EXTERNALS=1` (CI) missing is an error. A sandboxed command has a pid namespace of
 * its own: `outerPidOf` maps the pid it prints to the one this process sees (`waitForOuterPid` asks until
 * it answers).
 */
import { readFileSync } from 'node:fs';
import { findMarkedProcesses, LEAK_MARK_VARIABLE } from '../setup/process-census.js';
import { type ExternalRequirement, type ResolveOptions, requireExternal } from './external-requirement.js';

export const BUBBLEWRAP_REQUIREMENT: ExternalRequirement = {
  name: 'bubblewrap (bwrap)',
  neededBy: 'the sandbox tests',
  variables: ['ERRAND_BWRAP'],
  commands: ['bwrap'],
  install: 'Debian/Ubuntu: sudo apt-get install bubblewrap',
};

/** bwrap's path, or undefined after one skip line (an error where externals are required). */
export function findBubblewrap(options?: ResolveOptions): string | undefined {
  return requireExternal(BUBBLEWRAP_REQUIREMENT, options);
}

/**
 * The pid this process sees for a process of this test file that a sandbox (its own pid namespace)
 * calls `innerPid`: the marked process whose `NSpid` line ends in it. Undefined when there is none.
 */
export function outerPidOf(innerPid: number): number | undefined {
  const mark = process.env[LEAK_MARK_VARIABLE];
  if (mark === undefined) throw new Error('the leak-check setup file did not run');
  for (const { pid } of findMarkedProcesses(mark)) {
    try {
      const line = /^NSpid:\s+(.+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))?.[1];
      const ids = line?.trim().split(/\s+/).map(Number) ?? [];
      if (ids.length > 1 && ids.at(-1) === innerPid) return pid;
    } catch {
      // Gone meanwhile.
    }
  }
  return undefined;
}

/**
 * `outerPidOf`, asked again until it answers (at most `timeoutMs`): a process that a sandboxed command
 * just started may still be in its `exec`, when its environment, and so its mark, reads empty.
 */
export async function waitForOuterPid(innerPid: number, timeoutMs = 5000): Promise<number | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pid = outerPidOf(innerPid);
    if (pid !== undefined || Date.now() >= deadline) return pid;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
