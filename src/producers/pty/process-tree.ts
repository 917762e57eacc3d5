/**
 * Finds and signals the processes a pseudo-terminal started, through /proc (Linux). A pty child is a
 * session leader, so its family is: every process in its session (stat field 6), every descendant of a
 * member by parent pid (catches `setsid` children while their parent lives), and every process carrying
 * the task's environment mark (catches double-forked daemons whose parent is gone). Each process is
 * identified by pid *and* start time, and the start time is checked again right before a signal, so a
 * reused pid is never signalled.
 */
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcessStat {
  readonly pid: number;
  readonly state: string;
  readonly ppid: number;
  readonly pgrp: number;
  readonly session: number;
  /** The foreground process group of the process's controlling terminal (-1 without one). */
  readonly tpgid: number;
  /** Clock ticks since boot at which the process started: with the pid, its identity. */
  readonly startTime: number;
}

/** A process known by pid and start time. */
export interface ProcessIdentity {
  readonly pid: number;
  readonly startTime: number;
}

/** Where the proc filesystem is mounted; injectable for tests of the parser. */
export interface ProcFs {
  readonly root: string;
}

const DEFAULT_PROC: ProcFs = { root: '/proc' };

/**
 * Parses /proc/<pid>/stat. The command name (field 2) may contain spaces and parentheses, so the fields
 * are read after the *last* closing parenthesis.
 */
export function parseProcessStat(text: string): ProcessStat | undefined {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 1 || close < open) return undefined;
  const pid = Number(text.slice(0, open).trim());
  const fields = text
    .slice(close + 2)
    .trim()
    .split(' ');
  // fields[0] is field 3 (state); field N is fields[N - 3].
  if (fields.length < 20 || !Number.isInteger(pid)) return undefined;
  const numbers = [fields[1], fields[2], fields[3], fields[5], fields[19]].map(Number);
  if (numbers.some((value) => !Number.isFinite(value))) return undefined;
  const [ppid, pgrp, session, tpgid, startTime] = numbers as [number, number, number, number, number];
  return { pid, state: fields[0] ?? '?', ppid, pgrp, session, tpgid, startTime };
}

export function readProcessStat(pid: number, proc: ProcFs = DEFAULT_PROC): ProcessStat | undefined {
  try {
    return parseProcessStat(readFileSync(`${proc.root}/${pid}/stat`, 'latin1'));
  } catch {
    return undefined;
  }
}

/** True when /proc can be read here (Linux); without it only the leader can be signalled. */
export function hasProcFs(proc: ProcFs = DEFAULT_PROC): boolean {
  return readProcessStat(process.pid, proc) !== undefined;
}

/** Every readable process, except zombies (they are dead already and cannot be signalled). */
export function listProcesses(proc: ProcFs = DEFAULT_PROC): ProcessStat[] {
  let entries: string[];
  try {
    entries = readdirSync(proc.root);
  } catch {
    return [];
  }
  const found: ProcessStat[] = [];
  for (const entry of entries) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid <= 0) continue;
    const stat = readProcessStat(pid, proc);
    if (stat && !isDead(stat)) found.push(stat);
  }
  return found;
}

/** The process is still running as the same process (pid and start time match, not a zombie). */
export function isAlive(identity: ProcessIdentity, proc: ProcFs = DEFAULT_PROC): boolean {
  const stat = readProcessStat(identity.pid, proc);
  return stat !== undefined && stat.startTime === identity.startTime && !isDead(stat);
}

function isDead(stat: ProcessStat): boolean {
  return stat.state === 'Z' || stat.state === 'X' || stat.state === 'x';
}

function carriesMark(pid: number, mark: string, proc: ProcFs): boolean {
  try {
    return readFileSync(`${proc.root}/${pid}/environ`, 'latin1').split('\0').includes(mark);
  } catch {
    return false;
  }
}

export interface FamilyQuery {
  /** The session leader (the pty's child). Its session id is its pid. */
  readonly leader: ProcessIdentity;
  /** Members seen earlier, still recognised after their parent died (verified by start time). */
  readonly known?: Iterable<ProcessIdentity>;
  /** `NAME=value` that every process started in the pty inherits. */
  readonly environmentMark?: string;
  readonly proc?: ProcFs;
}

/** The live processes that belong to the pty: see the module comment. Never includes this process. */
export function findFamily(query: FamilyQuery): ProcessStat[] {
  const proc = query.proc ?? DEFAULT_PROC;
  const { leader } = query;
  const known = new Map<number, number>();
  for (const identity of query.known ?? []) known.set(identity.pid, identity.startTime);
  const all = listProcesses(proc).filter((stat) => stat.pid !== process.pid);
  const members = new Map<number, ProcessStat>();
  for (const stat of all) {
    const inSession = stat.session === leader.pid && stat.startTime >= leader.startTime;
    const wasKnown = known.get(stat.pid) === stat.startTime;
    if (inSession || wasKnown) members.set(stat.pid, stat);
  }
  if (query.environmentMark !== undefined) {
    for (const stat of all) {
      if (!members.has(stat.pid) && carriesMark(stat.pid, query.environmentMark, proc)) {
        members.set(stat.pid, stat);
      }
    }
  }
  // Descendants by parent pid, to a fixed point; a child cannot be older than its parent.
  let grew = true;
  while (grew) {
    grew = false;
    for (const stat of all) {
      if (members.has(stat.pid)) continue;
      const parent = members.get(stat.ppid);
      if (parent && stat.startTime >= parent.startTime) {
        members.set(stat.pid, stat);
        grew = true;
      }
    }
  }
  return [...members.values()];
}

/**
 * Sends `signal` to the process only if it is still the same process (start time unchanged).
 * Returns true when the signal was delivered.
 */
export function signalProcess(
  identity: ProcessIdentity,
  signal: NodeJS.Signals,
  proc: ProcFs = DEFAULT_PROC,
): boolean {
  if (!isAlive(identity, proc)) return false;
  try {
    process.kill(identity.pid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * Sends `signal` to a process group, but only while a verified member of it is alive: a group id stays
 * reserved while the group has members, so this cannot reach an unrelated group.
 */
export function signalProcessGroup(
  pgid: number,
  member: ProcessIdentity,
  signal: NodeJS.Signals,
  proc: ProcFs = DEFAULT_PROC,
): boolean {
  const stat = readProcessStat(member.pid, proc);
  if (!stat || stat.startTime !== member.startTime || isDead(stat) || stat.pgrp !== pgid || pgid <= 1) {
    return false;
  }
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}
