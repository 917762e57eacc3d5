/**
 * The census of one command's process tree. The command is started in its own session and process
 * group (its pid is the session id and the group id), so a process belongs to the tree when it:
 * - is the root itself, while the root is our unreaped child (its pid cannot have been reused yet);
 * - is in the root's process group or session (unless the reaped root's pid now names another process);
 * - descends from a member through ppid links;
 * - was recorded by an earlier census (same pid and start time);
 * - carries the command's tag in its environment (finds setsid'd, double-forked daemons whose parent
 *   chain is broken).
 * Nothing that started before the root can be a member: a start-time check (field 22 of
 * /proc/<pid>/stat, against a lower bound taken from the clock at spawn) guards every rule, and records
 * from earlier censuses match only with the same start time, so a pid reused by an unrelated process is
 * never counted and never signalled.
 */
import { isDead, type ProcessEntry, type ProcessSource } from './process-table.js';

export interface TreeRoot {
  /** The root's pid, which is also its process group id and session id. */
  readonly pid: number;
  /**
   * No later than the root's start time (clock ticks after boot), taken just before it was spawned.
   * Every member of the tree started at or after it.
   */
  readonly startTime: number;
}

export interface TreeCensus {
  /** Live members (zombies are already dead and are left out). */
  readonly members: readonly ProcessEntry[];
  /** Whether signalling the group `-root.pid` reaches this tree and nothing else. */
  readonly groupIsOurs: boolean;
}

export interface CensusOptions {
  /**
   * True while the root has not been reaped: its pid cannot have been reused, so it (and its group and
   * session id) is ours. Once reaped, a process with the root's pid is someone else's.
   */
  readonly rootAlive?: boolean;
  /** pid → start time of processes an earlier census attributed to the tree. */
  readonly known?: ReadonlyMap<number, number>;
  /** Whether a process carries the tree's environment tag; only asked about otherwise-unmatched candidates. */
  readonly isTagged?: (pid: number) => boolean;
  /** A pid never counted (the runtime's own process). */
  readonly exclude?: number;
}

export function censusTree(
  root: TreeRoot,
  entries: Iterable<ProcessEntry>,
  options: CensusOptions = {},
): TreeCensus {
  const byPid = new Map<number, ProcessEntry>();
  for (const entry of entries) byPid.set(entry.pid, entry);
  const rootEntry = byPid.get(root.pid);
  // While the root's pid names some other process, its group and session ids are not ours either.
  const idReused = rootEntry !== undefined && options.rootAlive !== true;
  const candidates = [...byPid.values()].filter(
    (entry) => entry.startTime >= root.startTime && entry.pid !== options.exclude,
  );
  const members = new Set<number>();
  const belongs = (entry: ProcessEntry): boolean => {
    if (entry.pid === root.pid) return !idReused;
    if (!idReused && (entry.pgid === root.pid || entry.sid === root.pid)) return true;
    const parent = byPid.get(entry.ppid);
    if (parent !== undefined && members.has(parent.pid) && entry.startTime >= parent.startTime) return true;
    return options.known?.get(entry.pid) === entry.startTime;
  };
  // Parents start no later than their children, so most trees resolve in one pass; loop to a fixpoint.
  candidates.sort((left, right) => left.startTime - right.startTime || left.pid - right.pid);
  for (let changed = true; changed; ) {
    changed = false;
    for (const entry of candidates) {
      if (!members.has(entry.pid) && belongs(entry)) {
        members.add(entry.pid);
        changed = true;
      }
    }
    if (!changed && options.isTagged) {
      for (const entry of candidates) {
        if (!members.has(entry.pid) && !isDead(entry) && options.isTagged(entry.pid)) {
          members.add(entry.pid);
          changed = true;
        }
      }
      // Tags are read once; later passes only follow ppid links from what they found.
      options = { ...options, isTagged: undefined };
    }
  }
  const live = candidates.filter((entry) => members.has(entry.pid) && !isDead(entry));
  const groupIsOurs = rootEntry
    ? !idReused
    : live.some((entry) => entry.pgid === root.pid || entry.sid === root.pid);
  return { members: live, groupIsOurs };
}

export interface EnvironmentTag {
  readonly name: string;
  readonly value: string;
}

export interface ScanOptions extends CensusOptions {
  /** The environment variable marking the tree's processes; absent: no tag lookup. */
  readonly tag?: EnvironmentTag;
  /**
   * Read only pids handed out after the root's (plus the root and known pids). Valid while the pid
   * counter cannot have wrapped all the way around since the root started: use it for young roots only.
   */
  readonly newerPidsOnly?: boolean;
}

const EMPTY_CENSUS: TreeCensus = Object.freeze({ members: Object.freeze([]), groupIsOurs: false });

/** Up to this many pids handed out after the root are probed one by one instead of listing /proc. */
const PROBE_LIMIT = 64;

/** Reads the process table (all of it, or only pids newer than the root) and takes the census. */
export function scanTree(source: ProcessSource, root: TreeRoot, options: ScanOptions = {}): TreeCensus {
  const last = options.newerPidsOnly ? source.lastPid() : undefined;
  const known = options.known;
  const entries: ProcessEntry[] = [];
  const take = (pid: number) => {
    const entry = source.read(pid);
    if (entry !== undefined) entries.push(entry);
  };
  if (last !== undefined && last >= root.pid && last - root.pid <= PROBE_LIMIT) {
    // Few pids were handed out since the root started (a quick command): probe just those.
    for (let pid = root.pid; pid <= last; pid += 1) take(pid);
    for (const pid of known?.keys() ?? []) if (pid < root.pid || pid > last) take(pid);
  } else {
    const isCandidate = (pid: number): boolean => {
      if (last === undefined || pid === root.pid || known?.has(pid)) return true;
      // The counter hands out increasing pids and wraps past pid_max.
      return last >= root.pid ? pid > root.pid && pid <= last : pid > root.pid || pid <= last;
    };
    for (const pid of source.listPids()) if (isCandidate(pid)) take(pid);
  }
  // Nothing alive read (a quick command that started nothing, its shell reaped or a zombie): no member,
  // and no group left to signal.
  if (!entries.some((entry) => !isDead(entry))) return EMPTY_CENSUS;
  const tag = options.tag;
  return censusTree(root, entries, {
    ...options,
    ...(tag === undefined
      ? {}
      : { isTagged: (pid: number) => source.environmentValue(pid, tag.name) === tag.value }),
  });
}
