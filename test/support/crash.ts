/**
 * Helpers for the crash suites: a marker only one test's processes carry (found through /proc, so
 * setsid and double-forked escapees count too), counting survivors within a deadline, a mix of process
 * trees that are hard to stop, and the library host fixture killed with SIGKILL.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fixtureCommand } from '../fixtures/bash/index.js';

export const CRASH_MARK_VARIABLE = 'ERRAND_CRASH_MARK';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const RUNTIME_CHILD = join(root, 'test', 'fixtures', 'host', 'runtime-child.mjs');

/** A fresh marker value. */
export function newMark(): string {
  return randomUUID();
}

/** Live (non-zombie) pids other than this process whose environment carries `mark`. */
export function markedPids(mark: string): number[] {
  const needle = `${CRASH_MARK_VARIABLE}=${mark}`;
  const found: number[] = [];
  for (const name of readdirProc()) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      if (!readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(needle)) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      if (state !== 'Z' && state !== 'X') found.push(pid);
    } catch {
      // Gone while we looked.
    }
  }
  return found;
}

function readdirProc(): string[] {
  try {
    return readdirSync('/proc');
  } catch {
    return [];
  }
}

/** Polls until no marked process is left or `withinMs` passed; what is left then, and how long it took. */
export async function survivorsAfter(
  mark: string,
  since: number,
  withinMs: number,
): Promise<{ survivors: number[]; elapsedMs: number }> {
  for (;;) {
    const survivors = markedPids(mark);
    const elapsedMs = performance.now() - since;
    if (survivors.length === 0 || elapsedMs >= withinMs) return { survivors, elapsedMs };
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Kills every marked process left (a failed test must not leak). */
export function killMarked(mark: string): void {
  for (const pid of markedPids(mark)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

/**
 * `count` commands that each print "ready" once they are in the state that makes them hard to stop:
 * plain, ignoring SIGTERM, with a setsid'd child, with a double-forked daemon, with grandchildren.
 */
export function hardTrees(count: number): string[] {
  const kinds = [
    'echo ready; exec sleep 1000',
    fixtureCommand('ignore-term'),
    fixtureCommand('setsid-escape'),
    fixtureCommand('setsid-escape', 'detach'),
    'sleep 1000 & sleep 1000 & echo ready; wait',
  ];
  // Each one distinct (a trailing comment), so the bash tool's duplicate guard starts every one.
  return Array.from({ length: count }, (_, index) => `${kinds[index % kinds.length]!} # tree ${index + 1}`);
}

export interface RuntimeChildConfig {
  readonly home: string;
  readonly commands: readonly string[];
  readonly durable?: boolean;
  readonly lifeline?: boolean;
  readonly sessionId?: string;
  readonly ready?: string;
  /** Task ids whose output the child reads once with task_output before it says READY. */
  readonly readFirst?: boolean;
  /** The runtime's `limits.processFactsDelayMs`. */
  readonly processFactsDelayMs?: number;
  /** False: READY once every command runs, without waiting for the store to hold their process facts. */
  readonly factsStored?: boolean;
  /** Where the runtime's bash output directory goes (`bash.executor.outputDirectoryParent`). */
  readonly outputDirectoryParent?: string;
}

export interface RuntimeChild {
  readonly child: ChildProcess;
  readonly sessionId: string;
  /** Task id → the pid of its command. */
  readonly tasks: ReadonlyMap<string, number>;
  readonly lifelinePid: number | undefined;
  /** SIGKILL, then wait for the exit. */
  kill(): Promise<void>;
}

/** Runs the library host fixture until it says READY (with `mark` in its environment). */
export async function startRuntimeChild(config: RuntimeChildConfig, mark: string): Promise<RuntimeChild> {
  const child = spawn(process.execPath, [RUNTIME_CHILD, JSON.stringify(config)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, [CRASH_MARK_VARIABLE]: mark },
  });
  let stdout = '';
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ready = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /READY (\S+) (\S+)\n/.exec(stdout);
      if (match) resolve(stdout);
    });
    child.once('exit', (code) => reject(new Error(`the runtime child exited early (${code}): ${stderr}`)));
  });
  const tasks = new Map<string, number>();
  for (const match of ready.matchAll(/STARTED (\S+) (\d+)\n/g)) tasks.set(match[1]!, Number(match[2]));
  const [, sessionId, lifeline] = /READY (\S+) (\S+)\n/.exec(ready)!;
  return {
    child,
    sessionId: sessionId!,
    tasks,
    lifelinePid: lifeline === 'none' ? undefined : Number(lifeline),
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/** Whether a pid names a live, non-zombie process. */
export function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}
