/**
 * Who is at the other end of an accepted Unix socket connection. Node exposes no `SO_PEERCRED`, so the
 * peer is found with the kernel's socket diagnostics: `ss -xp` (iproute2) pairs the accepted socket's inode
 * with its peer's and lists the processes holding a descriptor on the peer. Then `describePeer` says what
 * a server needs to judge each one: its user, whether it shares this process's pid and user namespaces,
 * its ancestors, and its environment tags. Checks that arrive together share one listing.
 */
import { execFile } from 'node:child_process';
import { readFileSync, readlinkSync } from 'node:fs';
import type { Socket } from 'node:net';
import { findOnPath } from '../launch/spawn-check.js';

/** How long `ss` may take. */
const SS_TIMEOUT_MS = 5000;
/** At most this much of `ss`'s listing is read. */
const SS_MAX_BUFFER = 16 * 1024 * 1024;
/** The most ancestors walked per process. */
const MAX_ANCESTORS = 64;

/** Why a peer could not be identified (the connection is then refused by a careful server). */
export class PeerUnknownError extends Error {
  readonly code = 'PEER_UNKNOWN';
  constructor(message: string) {
    super(message);
    this.name = 'PeerUnknownError';
  }
}

/** The inode of the socket behind descriptor `fd` of this process. */
function socketInodeOf(fd: number): string {
  const target = readlinkSync(`/proc/self/fd/${fd}`);
  const match = /^socket:\[(\d+)\]$/.exec(target);
  if (match === null) throw new PeerUnknownError(`descriptor ${fd} is not a socket (${target})`);
  return match[1]!;
}

/** The columns of an `ss -xHn[p]` line: local inode, peer inode, and what follows them (the holders). */
function columnsOf(line: string): { local: string; peer: string; rest: string } | undefined {
  // `<netid> <state> <recv-q> <send-q> <local address> <local inode> <peer address> <peer inode> [users]`:
  // an address may hold spaces, an inode never does; the peer address of a connected socket is `*`, and
  // only the end or `users:` follows the peer inode (so `<send-q> * <inode>` never passes for a pair).
  const match = /\s(\d+)\s+\*\s+(\d+)(?:\s+(users:.*))?$/.exec(line.trimEnd());
  return match === null ? undefined : { local: match[1]!, peer: match[2]!, rest: match[3] ?? '' };
}

/** The peer inode an `ss -x` listing gives the socket with inode `local`. */
export function peerInodeIn(listing: string, local: string): string | undefined {
  for (const line of listing.split('\n')) {
    const columns = columnsOf(line);
    if (columns?.local === local) return columns.peer;
  }
  return undefined;
}

/**
 * The pids an `ss -xp` listing names as holders of the socket with inode `inode`. A process name can hold
 * any text, `pid=` too: a forged entry can only add a pid (checked, and refused, like any other), never
 * hide the real `",pid=N,fd=M)` that follows each name.
 */
export function holdersIn(listing: string, inode: string): number[] {
  for (const line of listing.split('\n')) {
    const columns = columnsOf(line);
    if (columns?.local !== inode) continue;
    return [...new Set([...columns.rest.matchAll(/pid=(\d+),fd=\d+\)/g)].map((match) => Number(match[1])))];
  }
  return [];
}

function listUnixSockets(ss: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      ss,
      ['-xpHn'],
      { encoding: 'utf8', timeout: SS_TIMEOUT_MS, maxBuffer: SS_MAX_BUFFER, env: { LC_ALL: 'C' } },
      (error, stdout) =>
        error ? reject(new PeerUnknownError(`ss failed: ${error.message}`)) : resolve(stdout),
    );
  });
}

interface ListingRequest {
  readonly ss: string;
  readonly resolve: (listing: string) => void;
  readonly reject: (error: unknown) => void;
}

/** Listings asked for and not started yet: requests that wait together share one run of `ss`. */
const waiting: ListingRequest[] = [];
let listing = false;

/** A listing that started after this call, so it shows every socket accepted before it. */
function freshListing(ss: string): Promise<string> {
  return new Promise((resolve, reject) => {
    waiting.push({ ss, resolve, reject });
    if (!listing) runListing();
  });
}

function runListing(): void {
  const batch = waiting.splice(0);
  if (batch.length === 0) return;
  listing = true;
  listUnixSockets(batch[0]!.ss)
    .then(
      (text) => {
        for (const request of batch) request.resolve(text);
      },
      (error: unknown) => {
        for (const request of batch) request.reject(error);
      },
    )
    .finally(() => {
      listing = false;
      runListing();
    });
}

/** Where `ss` is: on PATH, else the usual places. */
export function findSs(searchPath = process.env.PATH ?? ''): string | undefined {
  return findOnPath('ss', `${searchPath}:/usr/sbin:/sbin:/usr/bin:/bin`, { absoluteOnly: true });
}

/**
 * The pids at the other end of `socket` (an accepted Unix stream connection of this process). Rejects
 * with `PeerUnknownError` when they cannot be found (no `ss`, no descriptor, nobody holds the peer).
 */
export async function peerProcessesOf(socket: Socket, ss = findSs()): Promise<number[]> {
  if (ss === undefined) {
    throw new PeerUnknownError('`ss` (iproute2) was not found: the peer of a socket cannot be named');
  }
  const fd = (socket as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  if (typeof fd !== 'number' || fd < 0) throw new PeerUnknownError('the connection has no descriptor');
  const local = socketInodeOf(fd);
  const text = await freshListing(ss);
  const peer = peerInodeIn(text, local);
  if (peer === undefined) throw new PeerUnknownError(`no peer of socket ${local} is listed`);
  const holders = holdersIn(text, peer);
  if (holders.length === 0) throw new PeerUnknownError(`no process holds the peer socket ${peer}`);
  return holders;
}

export interface PeerFacts {
  readonly pid: number;
  /** Real user id (the `Uid:` line's first field), or undefined when unreadable. */
  readonly uid: number | undefined;
  /** Whether it is in this process's pid namespace and user namespace. */
  readonly sameNamespaces: boolean;
  /** Its ancestors, nearest first, each with its start time, up to (not including) pid 1. */
  readonly ancestors: readonly { pid: number; startTime: number }[];
  /** The names of the variables in its environment. */
  readonly variables: ReadonlySet<string>;
}

function startTimeOf(pid: number): { ppid: number; startTime: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(fields[1]), startTime: Number(fields[19]) };
  } catch {
    return undefined;
  }
}

function namespace(pid: number | 'self', kind: 'pid' | 'user'): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/ns/${kind}`);
  } catch {
    return undefined;
  }
}

/** What a server judges a peer process by, read from /proc now. */
export function describePeer(pid: number): PeerFacts {
  let uid: number | undefined;
  try {
    const line = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'));
    uid = line ? Number(line[1]) : undefined;
  } catch {
    uid = undefined;
  }
  const sameNamespaces = (['pid', 'user'] as const).every((kind) => {
    const theirs = namespace(pid, kind);
    return theirs !== undefined && theirs === namespace('self', kind);
  });
  const ancestors: { pid: number; startTime: number }[] = [];
  let current = startTimeOf(pid);
  while (current !== undefined && current.ppid > 1 && ancestors.length < MAX_ANCESTORS) {
    const parent = startTimeOf(current.ppid);
    if (parent === undefined) break;
    ancestors.push({ pid: current.ppid, startTime: parent.startTime });
    current = parent;
  }
  let variables = new Set<string>();
  try {
    variables = new Set(
      readFileSync(`/proc/${pid}/environ`, 'latin1')
        .split('\0')
        .filter((entry) => entry.includes('='))
        .map((entry) => entry.slice(0, entry.indexOf('='))),
    );
  } catch {
    // Unreadable: judged without it.
  }
  return { pid, uid, sameNamespaces, ancestors, variables };
}
