/**
 * The lifeline's wire protocol: one JSON object per line over the sidecar's stdin (runtime → sidecar)
 * and stdout (sidecar → runtime). The sidecar's stdin reaching end of file is the signal that matters: the
 * runtime died (or released it). Every message has a `type`; a side that meets a type it does not know
 * answers `error` and carries on, so either side can grow the protocol without breaking the other.
 * `ping` asks the sidecar to show it still reads its stdin: it answers `pong` with the same `seq`, and a
 * sidecar that does not answer within the runtime's bound is taken for dead (see `Lifeline`).
 */

/** The protocol version this code speaks; sent in `ready`. */
export const LIFELINE_PROTOCOL_VERSION = 2;

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

/** Asks for a `pong` with the same `seq`: the sidecar still reads what it is told. */
export interface PingMessage {
  readonly type: 'ping';
  readonly seq: number;
}

export type RuntimeMessage = WatchMessage | UnwatchMessage | ReleaseMessage | PingMessage;

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

export interface PongMessage {
  readonly type: 'pong';
  readonly seq: number;
}

export type SidecarMessage = ReadyMessage | ErrorMessage | PongMessage;

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
