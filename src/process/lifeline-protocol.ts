/**
 * The lifeline's wire protocol: one JSON object per line over the sidecar's stdin (runtime → sidecar)
 * and stdout (sidecar → runtime). The sidecar's stdin reaching end of file is the signal that matters: the
 * runtime died (or released it). Every message has a `type`; a side that meets a type it does not know
 * answers `error` and carries on, so either side can grow the protocol (a `spawn` request, for the
 * sidecar to become the runtime's spawner) without breaking the other.
 */

/** The protocol version this code speaks; sent in `ready`. */
export const LIFELINE_PROTOCOL_VERSION = 1;

/** A process tree the sidecar stops when the runtime dies. */
export interface WatchMessage {
  readonly type: 'watch';
  /** Unique per tree within one runtime. */
  readonly key: string;
  /** The tree's root (its group and session id). */
  readonly pid: number;
  /** No later than the root's start time (clock ticks after boot); every member started at or after it. */
  readonly startTime: number;
  /** The tree's own environment tag, `NAME=value`, when it has one. */
  readonly tag?: string | undefined;
  /** Where the sidecar records that it stopped the tree (JSON, written atomically), when given. */
  readonly statusFile?: string | undefined;
}

export interface UnwatchMessage {
  readonly type: 'unwatch';
  readonly key: string;
}

/** A clean exit: stop nothing at end of file. */
export interface ReleaseMessage {
  readonly type: 'release';
}

export type RuntimeMessage = WatchMessage | UnwatchMessage | ReleaseMessage;

export interface ReadyMessage {
  readonly type: 'ready';
  readonly protocol: number;
  readonly pid: number;
}

export interface ErrorMessage {
  readonly type: 'error';
  /** The type of the message that could not be handled. */
  readonly of: string;
  readonly message: string;
}

export type SidecarMessage = ReadyMessage | ErrorMessage;

export function encodeMessage(message: RuntimeMessage | SidecarMessage): string {
  return `${JSON.stringify(message)}\n`;
}

/** Parses one line into a message object with a string `type`; undefined for anything else. */
export function decodeMessage(
  line: string,
): { readonly type: string; readonly [key: string]: unknown } | undefined {
  try {
    const value: unknown = JSON.parse(line);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    const type = (value as { type?: unknown }).type;
    return typeof type === 'string' ? (value as { type: string }) : undefined;
  } catch {
    return undefined;
  }
}

/** A watch message's fields, checked; undefined when malformed. */
export function readWatch(message: { readonly [key: string]: unknown }): WatchMessage | undefined {
  const { key, pid, startTime, tag, statusFile } = message;
  if (typeof key !== 'string' || key === '') return undefined;
  if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid < 2) return undefined;
  if (typeof startTime !== 'number' || !Number.isSafeInteger(startTime) || startTime < 0) return undefined;
  if (tag !== undefined && (typeof tag !== 'string' || !tag.includes('='))) return undefined;
  if (statusFile !== undefined && (typeof statusFile !== 'string' || statusFile === '')) return undefined;
  return { type: 'watch', key, pid, startTime, tag, statusFile };
}

/**
 * The spawner's messages travel over the sidecar's Node IPC channel, not its stdin: a reply carries a
 * pipe's handle (`stdout` then `stderr` of the command), which only that channel can pass. Runtime →
 * sidecar: `spawn`. Sidecar → runtime: `spawned` (with the pid), then one `pipe` message per stream with
 * the handle attached, then `exited` once the sidecar reaped the process; or `spawn_failed` instead of all
 * of them. An unknown type is answered with `error`.
 */
export interface SpawnMessage {
  readonly type: 'spawn';
  /** Unique per launch within one runtime; every answer names it. */
  readonly id: number;
  readonly file: string;
  readonly args: readonly string[];
  readonly cwd: string;
  /** The complete environment, the tags included. */
  readonly env: Readonly<Record<string, string>>;
  /**
   * The tree to watch from its start, as a `watch` message would tell it (the pid is the spawned
   * process's): the sidecar watches it before it answers `spawned`, and the runtime sends no `watch`.
   */
  readonly watch?: Omit<WatchMessage, 'type' | 'pid'> | undefined;
  /**
   * The runtime's own pipes for the command's stdout and stderr (their read ends, held by `pid`): the
   * sidecar opens their write sides through `/proc/<pid>/fd/<fd>`, checks each is the pipe `ino` names,
   * and gives them to the command, so no pipe handle comes back. Without it, or when opening fails, the
   * sidecar makes the pipes and sends them as `pipe` messages.
   */
  readonly stdio?: SharedStdio | undefined;
}

/** A pipe the runtime made: its read end's descriptor in the runtime and its inode (decimal). */
export interface SharedPipe {
  readonly fd: number;
  readonly ino: string;
}

export interface SharedStdio {
  readonly pid: number;
  readonly stdout: SharedPipe;
  readonly stderr: SharedPipe;
}

export interface SpawnedMessage {
  readonly type: 'spawned';
  readonly id: number;
  readonly pid: number;
  /** `shared`: the command writes to the runtime's pipes (`SpawnMessage.stdio`); no `pipe` message follows. */
  readonly stdio?: 'shared' | undefined;
}

export interface PipeMessage {
  readonly type: 'pipe';
  readonly id: number;
  readonly stream: 'stdout' | 'stderr';
}

/** The process was reaped. */
export interface ExitedMessage {
  readonly type: 'exited';
  readonly id: number;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** The error `child_process.spawn` reported, as its fields (an `Error` does not cross the channel). */
export interface SpawnFailedMessage {
  readonly type: 'spawn_failed';
  readonly id: number;
  readonly message: string;
  readonly code?: string | undefined;
  readonly errno?: number | undefined;
  readonly syscall?: string | undefined;
  readonly path?: string | undefined;
}

/** A spawn message's fields, checked; undefined when malformed. */
export function readSpawn(message: { readonly [key: string]: unknown }): SpawnMessage | undefined {
  const { id, file, args, cwd, env, watch, stdio } = message;
  if (typeof id !== 'number' || !Number.isSafeInteger(id)) return undefined;
  if (typeof file !== 'string' || file === '' || typeof cwd !== 'string') return undefined;
  if (!Array.isArray(args) || !args.every((arg) => typeof arg === 'string')) return undefined;
  if (typeof env !== 'object' || env === null || Array.isArray(env)) return undefined;
  if (!Object.values(env).every((value) => typeof value === 'string')) return undefined;
  const shared = stdio === undefined ? undefined : readSharedStdio(stdio);
  if (stdio !== undefined && shared === undefined) return undefined;
  const request = {
    type: 'spawn' as const,
    id,
    file,
    args,
    cwd,
    env: env as Record<string, string>,
    ...(shared === undefined ? {} : { stdio: shared }),
  };
  if (watch === undefined) return request;
  if (typeof watch !== 'object' || watch === null) return undefined;
  // Checked as the watch message it stands for; the pid is the spawned process's, any valid one here.
  const tree = readWatch({ ...(watch as Record<string, unknown>), pid: 2 });
  if (tree === undefined) return undefined;
  const { key, startTime, tag, statusFile } = tree;
  return { ...request, watch: { key, startTime, tag, statusFile } };
}

function readSharedPipe(value: unknown): SharedPipe | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { fd, ino } = value as Record<string, unknown>;
  if (typeof fd !== 'number' || !Number.isSafeInteger(fd) || fd < 0) return undefined;
  if (typeof ino !== 'string' || !/^[0-9]{1,20}$/.test(ino)) return undefined;
  return { fd, ino };
}

function readSharedStdio(value: unknown): SharedStdio | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { pid, stdout, stderr } = value as Record<string, unknown>;
  if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid <= 1) return undefined;
  const out = readSharedPipe(stdout);
  const err = readSharedPipe(stderr);
  return out === undefined || err === undefined ? undefined : { pid, stdout: out, stderr: err };
}
