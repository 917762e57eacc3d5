/**
 * Which runtime has a session open. A session runtime records itself as the session's holder in the store
 * when it opens the session and clears it when the session closes; another runtime — in this process or
 * another — may not open (resume) the session while that holder lives. A holder is alive while its
 * runtime is (same process: not disposed) or while its process is (another process: the pid exists, is
 * not a zombie, and started when the holder says, so a reused pid does not count). A crash leaves a stale
 * holder behind, which the next resume replaces.
 */
import { readFileSync } from 'node:fs';
import type { SessionHolder } from '../store/records.js';

/** The session runtimes of this process that are not disposed, by instance id. */
const liveRuntimes = new Set<string>();

export function registerLiveRuntime(instance: string): () => void {
  liveRuntimes.add(instance);
  return () => {
    liveRuntimes.delete(instance);
  };
}

interface ProcessFacts {
  readonly start: string;
  readonly zombie: boolean;
}

/** Linux's view of a process (`/proc/<pid>/stat`), or undefined without /proc or once it is gone. */
function readProcess(pid: number): ProcessFacts | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return undefined;
  }
  // Fields after the command name (which may hold spaces and parentheses): state is 3rd, starttime 22nd.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const start = fields[19];
  if (start === undefined) return undefined;
  return { start, zombie: fields[0] === 'Z' || fields[0] === 'X' };
}

const ownStart = readProcess(process.pid)?.start;

/** This runtime as a holder. */
export function holderFor(instance: string, now: number): SessionHolder {
  return {
    runtime: instance,
    pid: process.pid,
    ...(ownStart === undefined ? {} : { processStart: ownStart }),
    acquiredAt: now,
  };
}

export function isHolderLive(holder: SessionHolder): boolean {
  if (holder.pid === process.pid && (holder.processStart === undefined || holder.processStart === ownStart)) {
    return liveRuntimes.has(holder.runtime);
  }
  const facts = readProcess(holder.pid);
  if (facts !== undefined) {
    return !facts.zombie && (holder.processStart === undefined || facts.start === holder.processStart);
  }
  // With /proc (our own entry was readable), a pid without an entry is gone.
  if (ownStart !== undefined) return false;
  // No /proc (not Linux): the pid is all there is to go on.
  try {
    process.kill(holder.pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
