/**
 * One reading of the process table for the sweeps of a burst of exits. A sweep after a command's exit
 * reads the table to find what of its tree is left; with thousands of commands alive, each reading is
 * thousands of `/proc` reads, and thousands of exits at once made that quadratic. A sweep asked for while
 * the table is quiet reads it at once, as before. One asked for just after another reading (a burst)
 * waits for the next turn of the event loop, and every sweep waiting then shares one reading taken at
 * that moment: it began after each of their roots had exited, so whatever is left of their trees was
 * alive in it or was started later by a member that was (the terminator's own censuses find those).
 */
import type { ProcessEntry, ProcessSource } from './process-table.js';

/** A reading that ended less than this long ago makes the next sweep wait to share the next one. */
const BURST_MS = 5;

// Captured when the module loads, so a test's fake timers cannot hold a sweep back.
const nextTurn = globalThis.setImmediate.bind(globalThis);

const waiting = new WeakMap<ProcessSource, Array<(table: ProcessSource) => void>>();
const lastReadEnd = new WeakMap<ProcessSource, number>();

const wallMs = () => Number(process.hrtime.bigint()) / 1e6;

/**
 * Runs `use` with a view of `source`'s table: `source` itself now when no reading just happened, else a
 * view shared by every caller of the next turn (each pid and environment read at most once in it).
 * `now` is wall milliseconds (a test's own clock; fake timers must not freeze it).
 */
export function withSharedTable(
  source: ProcessSource,
  use: (table: ProcessSource) => void,
  now: () => number = wallMs,
): void {
  const queue = waiting.get(source);
  if (queue !== undefined) {
    queue.push(use);
    return;
  }
  const last = lastReadEnd.get(source);
  if (last === undefined || now() - last > BURST_MS) {
    try {
      use(source);
    } finally {
      lastReadEnd.set(source, now());
    }
    return;
  }
  const batch = [use];
  waiting.set(source, batch);
  nextTurn(() => {
    waiting.delete(source);
    const table = frozenView(source);
    try {
      for (const each of batch) {
        try {
          each(table);
        } catch {
          // Each caller handles its own failure (see TreeTerminator.sweep); the others still run.
        }
      }
    } finally {
      lastReadEnd.set(source, now());
    }
  });
}

/** `source` with every listing, entry and environment value read once and kept for the view's life. */
function frozenView(source: ProcessSource): ProcessSource {
  let pids: number[] | undefined;
  let last: { value: number | undefined } | undefined;
  const entries = new Map<number, ProcessEntry | undefined>();
  const environments = new Map<string, string | undefined>();
  return {
    listPids: () => {
      pids ??= source.listPids();
      return pids;
    },
    read: (pid) => {
      if (!entries.has(pid)) entries.set(pid, source.read(pid));
      return entries.get(pid);
    },
    environmentValue: (pid, name) => {
      const key = `${pid}\0${name}`;
      if (!environments.has(key)) environments.set(key, source.environmentValue(pid, name));
      return environments.get(key);
    },
    lastPid: () => {
      last ??= { value: source.lastPid() };
      return last.value;
    },
    clockTicks: () => source.clockTicks(),
    ...(source.bootId ? { bootId: () => source.bootId?.() } : {}),
  };
}
