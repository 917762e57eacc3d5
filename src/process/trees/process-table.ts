/**
 * Reads the process table from /proc (Linux). Each entry carries the facts the tree census needs:
 * parent, process group, session and start time (field 22 of /proc/<pid>/stat, in clock ticks since
 * boot), which together tell a descendant from an unrelated process that reused its pid.
 */
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';
import { constants as osConstants } from 'node:os';

export interface ProcessEntry {
  readonly pid: number;
  readonly ppid: number;
  readonly pgid: number;
  readonly sid: number;
  /** One-letter state: R, S, D, Z (zombie), X (dead), T, ... */
  readonly state: string;
  /** Clock ticks after boot at which the process started; never changes for a pid's lifetime. */
  readonly startTime: number;
  /**
   * A zombie's wait status, what its parent's `waitpid` will report (field 52, Linux 3.5 on); undefined
   * when the table does not show it. Meaningless for a process that runs.
   */
  readonly exitStatus?: number;
}

/** Parses the text of /proc/<pid>/stat. The command name may contain spaces and parentheses. */
export function parseProcessStat(text: string): ProcessEntry | undefined {
  const open = text.indexOf(' (');
  const close = text.lastIndexOf(')');
  if (open < 1 || close < open) return undefined;
  const pid = Number(text.slice(0, open));
  const fields = text.slice(close + 2).split(' ');
  // fields[0] is field 3 (state); field n is fields[n - 3].
  const state = fields[0];
  const ppid = Number(fields[1]);
  const pgid = Number(fields[2]);
  const sid = Number(fields[3]);
  const startTime = Number(fields[19]);
  if (
    state === undefined ||
    ![pid, ppid, pgid, sid, startTime].every((value) => Number.isSafeInteger(value) && value >= 0)
  ) {
    return undefined;
  }
  const exitStatus = state === 'Z' && fields.length > 49 ? Number(fields[49]) : Number.NaN;
  return Number.isSafeInteger(exitStatus) && exitStatus >= 0
    ? { pid, ppid, pgid, sid, state, startTime, exitStatus }
    : { pid, ppid, pgid, sid, state, startTime };
}

const SIGNAL_NAMES = new Map<number, NodeJS.Signals>(
  Object.entries(osConstants.signals).map(([name, number]) => [number, name as NodeJS.Signals]),
);

/**
 * A wait status as `child_process` reports it: the exit code of a process that exited, or the signal
 * that ended it (the name; null for a number this platform does not name).
 */
export function exitOfStatus(status: number): { code: number | null; signal: NodeJS.Signals | null } {
  const signal = status & 0x7f;
  return signal === 0
    ? { code: (status >> 8) & 0xff, signal: null }
    : { code: null, signal: SIGNAL_NAMES.get(signal) ?? null };
}

export function isDead(entry: ProcessEntry): boolean {
  return entry.state === 'Z' || entry.state === 'X';
}

/** Where the process table is read from; injectable so the census logic can be tested on a fixed table. */
export interface ProcessSource {
  /** Every pid currently listed. */
  listPids(): number[];
  /** One process's entry, or undefined when it is gone (or unreadable). */
  read(pid: number): ProcessEntry | undefined;
  /** The value of `name` in the process's initial environment, or undefined (absent or unreadable). */
  environmentValue(pid: number, name: string): string | undefined;
  /** The last pid the kernel handed out, when known (used to read only newer pids). */
  lastPid(): number | undefined;
  /**
   * Now, in the unit of start times (clock ticks after boot), rounded down; 0 when unknown. A process
   * started after this call has a start time no smaller than what it returned.
   */
  clockTicks(): number;
  /**
   * The boot this table belongs to (`/proc/sys/kernel/random/boot_id`), when known: pids and start times
   * recorded in another boot name nothing of this one.
   */
  bootId?(): string | undefined;
  /** Releases what the source holds open (called when the producer that reads it is disposed). */
  close?(): void;
  /**
   * Drops what is known of `pid` (it was just reaped): the next read looks at the table again. For a
   * source that keeps what it read a while (`memoizedSource`); others need not implement it.
   */
  forget?(pid: number): void;
  /** Drops everything it keeps of what it read: the next reads look at the table again. */
  refresh?(): void;
}

/** The unit of /proc start times: clock ticks per second as the kernel reports them to user space. */
const USER_HZ = 100;

export function procfsSource(root = '/proc'): ProcessSource {
  // One scratch buffer for every stat read: a stat line is a few hundred bytes.
  const scratch = Buffer.allocUnsafe(1024);
  let lastPidFd: number | undefined;
  let boot: { uptimeSeconds: number; at: bigint } | undefined;
  let bootId: string | null | undefined;
  return {
    listPids() {
      const pids: number[] = [];
      let names: string[];
      try {
        names = readdirSync(root);
      } catch {
        // No procfs (not Linux): only the process group can be signalled.
        return pids;
      }
      for (const name of names) {
        const code = name.charCodeAt(0);
        if (code >= 48 && code <= 57) pids.push(Number(name));
      }
      return pids;
    },
    read(pid) {
      const path = `${root}/${pid}/stat`;
      // Most probes are for pids that are gone: asking first is far cheaper than a thrown error.
      if (!existsSync(path)) return undefined;
      try {
        const fd = openSync(path, 'r');
        let length: number;
        try {
          length = readSync(fd, scratch, 0, scratch.length, 0);
        } finally {
          closeSync(fd);
        }
        const text =
          length < scratch.length ? scratch.toString('latin1', 0, length) : readFileSync(path, 'latin1');
        return parseProcessStat(text);
      } catch {
        return undefined;
      }
    },
    environmentValue(pid, name) {
      try {
        return findEnvironmentValue(readFileSync(`${root}/${pid}/environ`), name);
      } catch {
        return undefined;
      }
    },
    lastPid() {
      try {
        // Kept open and read in place: reopening a sysctl file costs far more than reading it.
        lastPidFd ??= openSync(`${root}/sys/kernel/ns_last_pid`, 'r');
        const length = readSync(lastPidFd, scratch, 0, 32, 0);
        const value = Number(scratch.toString('latin1', 0, length).trim());
        return Number.isSafeInteger(value) && value > 0 ? value : undefined;
      } catch {
        return undefined;
      }
    },
    clockTicks() {
      try {
        // Read once, then advanced with the monotonic clock: no file read per command.
        boot ??= {
          uptimeSeconds: Number(readFileSync(`${root}/uptime`, 'latin1').split(' ')[0]),
          at: process.hrtime.bigint(),
        };
      } catch {
        return 0;
      }
      const seconds = boot.uptimeSeconds + Number(process.hrtime.bigint() - boot.at) / 1e9;
      // Start times count USER_HZ ticks, 100 per second on Linux; one tick of slack for rounding.
      return Number.isFinite(seconds) ? Math.max(0, Math.floor(seconds * USER_HZ) - 1) : 0;
    },
    bootId() {
      if (bootId === undefined) {
        try {
          bootId = readFileSync(`${root}/sys/kernel/random/boot_id`, 'latin1').trim() || null;
        } catch {
          bootId = null;
        }
      }
      return bootId ?? undefined;
    },
    close() {
      if (lastPidFd === undefined) return;
      try {
        closeSync(lastPidFd);
      } catch {
        // Already closed.
      }
      lastPidFd = undefined;
    },
  };
}

/** Finds `name=value` in a NUL-separated environment block. */
export function findEnvironmentValue(block: Buffer, name: string): string | undefined {
  const prefix = Buffer.from(`${name}=`, 'latin1');
  let from = 0;
  while (from < block.length) {
    const at = block.indexOf(prefix, from);
    if (at < 0) return undefined;
    if (at === 0 || block[at - 1] === 0) {
      const end = block.indexOf(0, at);
      return block.toString('utf8', at + prefix.length, end < 0 ? block.length : end);
    }
    from = at + 1;
  }
  return undefined;
}

/**
 * Memoizes a source for `maxAgeMs`, so many trees taking their census at once (a disposal cancelling
 * hundreds of commands) read each /proc entry once. The pid list is taken again as soon as the kernel
 * handed out a pid since (a process started in the window is never missed). Environment values are kept
 * per (pid, start time) for as long as the process lives once found; a value not found is looked up again
 * after the window (a process in the middle of an exec shows an empty environment).
 */
export function memoizedSource(source: ProcessSource, maxAgeMs = 2): ProcessSource {
  let pids: number[] | undefined;
  const entries = new Map<number, ProcessEntry | undefined>();
  const environments = new Map<string, { startTime: number; value: string }>();
  /** (pid, name) looked up in this window and not found. */
  const missing = new Set<string>();
  let since = 0;
  // Wall time read from hrtime, so fake timers in a host's tests cannot freeze the cache.
  const fresh = () => {
    const now = Number(process.hrtime.bigint() / 1_000_000n);
    if (now - since <= maxAgeMs) return;
    since = now;
    pids = undefined;
    entries.clear();
    missing.clear();
    if (environments.size > 4096) environments.clear();
  };
  const read = (pid: number): ProcessEntry | undefined => {
    fresh();
    if (entries.has(pid)) return entries.get(pid);
    const entry = source.read(pid);
    entries.set(pid, entry);
    return entry;
  };
  // The last pid handed out when the list was taken: a process started since makes the list stale.
  let listedAfter: number | undefined;
  return {
    listPids() {
      fresh();
      const last = source.lastPid();
      if (pids === undefined || last === undefined || last !== listedAfter) {
        pids = source.listPids();
        listedAfter = last;
      }
      return pids;
    },
    read,
    environmentValue(pid, name) {
      const entry = read(pid);
      if (entry === undefined) return undefined;
      const key = `${pid}\0${name}`;
      const cached = environments.get(key);
      if (cached !== undefined && cached.startTime === entry.startTime) return cached.value;
      if (missing.has(key)) return undefined;
      const value = source.environmentValue(pid, name);
      // A value found is kept for the process's life; none found only for the window: a process caught
      // in an exec shows an empty environment for a moment, and its tag must still be found after.
      if (value === undefined) missing.add(key);
      else environments.set(key, { startTime: entry.startTime, value });
      return value;
    },
    lastPid: () => source.lastPid(),
    clockTicks: () => source.clockTicks(),
    bootId: () => source.bootId?.(),
    close: () => source.close?.(),
    forget(pid) {
      entries.delete(pid);
      source.forget?.(pid);
    },
    refresh() {
      since = 0;
      fresh();
      source.refresh?.();
    },
  };
}
