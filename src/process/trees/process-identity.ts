/**
 * Recognising a process tree after the fact: from what a task record kept (pid, start time, boot id,
 * process group, environment tag), tell whether the tree still runs, left members behind, is gone, or
 * cannot be judged — without trusting a bare pid. A pid of another boot names nothing; a pid whose start
 * time differs names another process; only the same pid with the same start time in the same boot is the
 * process that was recorded.
 */
import type { ProcessEntry, ProcessSource } from './process-table.js';
import { type EnvironmentTag, scanTree, type TreeRoot } from './process-tree.js';

/** What identifies a tree's root after its runtime is gone. */
export interface ProcessIdentity {
  /**
   * The root's pid. Undefined when the tree was recorded before its pid was known (a spawn not yet
   * answered): then only its tag recognises it.
   */
  readonly pid?: number | undefined;
  /** The root's start time in clock ticks after boot (`/proc/<pid>/stat` field 22). */
  readonly startTime?: number | undefined;
  /** The boot the root started in (`/proc/sys/kernel/random/boot_id`). */
  readonly bootId?: string | undefined;
  /** The environment tag every process of the tree carries. */
  readonly tag?: EnvironmentTag | undefined;
}

/**
 * - `running`: the root runs (same pid, same start time, same boot; without a recorded pid, the first
 *   session leader carrying the tag); `members` is the whole tree.
 * - `leftovers`: the root ended, but members of its group, session or tag still run.
 * - `gone`: nothing of the tree runs; `pidReused` when the root's pid now names another process.
 * - `other_boot`: the machine restarted since: nothing of it can run, and its pids name nothing of it.
 * - `unknown`: not enough facts (no start time, or no process table) to tell.
 */
export type Recognition =
  | {
      readonly state: 'running';
      readonly members: readonly ProcessEntry[];
      /** The root's pid and its start time as the table has them. */
      readonly root: TreeRoot;
    }
  | { readonly state: 'leftovers'; readonly members: readonly ProcessEntry[] }
  | { readonly state: 'gone'; readonly pidReused: boolean }
  | { readonly state: 'other_boot' }
  | { readonly state: 'unknown' };

/** Looks the tree up in `source` now. A zombie root counts as ended (it has exited; only its parent reaps it). */
export function recognizeTree(identity: ProcessIdentity, source: ProcessSource): Recognition {
  const bootId = source.bootId?.();
  if (identity.bootId !== undefined && bootId !== undefined && identity.bootId !== bootId) {
    return { state: 'other_boot' };
  }
  const startTime = identity.startTime;
  if (source.clockTicks() === 0) return { state: 'unknown' };
  if (startTime === undefined || identity.pid === undefined) return recognizeByTag(identity, source);
  const root = source.read(identity.pid);
  const rootRuns =
    root !== undefined && root.startTime === startTime && root.state !== 'Z' && root.state !== 'X';
  const census = scanTree(
    source,
    { pid: identity.pid, startTime },
    {
      // The root's pid (and so its group and session id) is ours only while the recorded process holds it.
      rootAlive: root !== undefined && root.startTime === startTime,
      exclude: process.pid,
      ...(identity.tag === undefined ? {} : { tag: identity.tag }),
    },
  );
  if (rootRuns) return { state: 'running', members: census.members, root: { pid: identity.pid, startTime } };
  if (census.members.length > 0) return { state: 'leftovers', members: census.members };
  return { state: 'gone', pidReused: root !== undefined && root.startTime !== startTime };
}

/**
 * Without a recorded start time only the tree's tag can tell its processes from others (tag values are
 * never reused): every live process carrying it is a member. The root runs when one of them has its pid;
 * without a recorded pid, when one of them leads its own session, as the root does (it is started in a
 * session of its own, and started before anything it forked).
 */
function recognizeByTag(identity: ProcessIdentity, source: ProcessSource): Recognition {
  const tag = identity.tag;
  if (tag === undefined) return { state: 'unknown' };
  const members: ProcessEntry[] = [];
  for (const pid of source.listPids()) {
    if (pid === process.pid) continue;
    const entry = source.read(pid);
    if (entry === undefined || entry.state === 'Z' || entry.state === 'X') continue;
    if (source.environmentValue(pid, tag.name) === tag.value) members.push(entry);
  }
  const root =
    identity.pid === undefined
      ? firstSessionLeader(members)
      : members.find((member) => member.pid === identity.pid);
  if (root !== undefined) {
    return { state: 'running', members, root: { pid: root.pid, startTime: root.startTime } };
  }
  if (members.length > 0) return { state: 'leftovers', members };
  // A live process at the pid without the tag is another one; a zombie there (its environment gone, nobody
  // reaped it yet) may well be the root itself: no evidence of reuse.
  const atPid = identity.pid === undefined ? undefined : source.read(identity.pid);
  return { state: 'gone', pidReused: atPid !== undefined && atPid.state !== 'Z' && atPid.state !== 'X' };
}

function firstSessionLeader(members: readonly ProcessEntry[]): ProcessEntry | undefined {
  let first: ProcessEntry | undefined;
  for (const member of members) {
    if (member.sid !== member.pid) continue;
    if (first === undefined || member.startTime < first.startTime) first = member;
  }
  return first;
}

/** `NAME=value` as a tag; undefined for anything else. */
export function parseEnvironmentTag(text: string | undefined): EnvironmentTag | undefined {
  if (text === undefined) return undefined;
  const at = text.indexOf('=');
  if (at < 1 || at === text.length - 1) return undefined;
  return { name: text.slice(0, at), value: text.slice(at + 1) };
}

export function formatEnvironmentTag(tag: EnvironmentTag): string {
  return `${tag.name}=${tag.value}`;
}
