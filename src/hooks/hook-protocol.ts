/**
 * The conversation between an `errand hook` process and the MCP server whose session it serves, over
 * the server's Unix socket: one connection per hook, newline-delimited JSON. The hook sends one `take`;
 * the server answers with the notifications it reserved for it (and, at the end of a turn, what is
 * still running); the hook prints them, then sends `commit` — or `release` if it printed nothing. A
 * connection that closes, or a lease that runs out, before `commit` releases the reservation: the
 * notifications go back to the head of the session's queue.
 */
import type { HookMoment } from './hook-clients.js';

export const HOOK_PROTOCOL_VERSION = 1;

/** The most bytes of one protocol line either side reads; a longer line ends the connection. */
export const MAX_HOOK_LINE_BYTES = 1024 * 1024;

export interface TakeRequest {
  readonly op: 'take';
  readonly version: number;
  readonly moment: HookMoment;
  /** The most UTF-8 bytes of notification text to reserve (at least one notification is always taken). */
  readonly maxBytes: number;
  /**
   * At the end of a turn: how long to wait for running background work to end, in ms (the server caps
   * it). 0 answers at once.
   */
  readonly waitMs: number;
  /** The client is already continuing because an end-of-turn hook refused the end. */
  readonly stopHookActive: boolean;
}

export interface SettleRequest {
  readonly op: 'commit' | 'release';
}

export type HookRequest = TakeRequest | SettleRequest;

export interface HookNotification {
  readonly taskId: string;
  readonly text: string;
}

export interface RunningTask {
  readonly id: string;
  readonly label: string;
}

export interface TakeAnswer {
  readonly version: number;
  /** Reserved for this hook: print them, then commit. */
  readonly notifications: readonly HookNotification[];
  /** Notifications still queued after these (they follow at the next hook or tool result). */
  readonly more: number;
  /**
   * At the end of a turn, when nothing ended within the wait: background work still running that the
   * model has not been reminded of yet (reserved like notifications: reminded once committed).
   */
  readonly stillRunning: readonly RunningTask[];
  /** How long the server holds the reservation for a commit, in ms. */
  readonly leaseMs: number;
}

export interface SettleAnswer {
  /** True when the commit recorded the delivery (or the release gave the notifications back). */
  readonly ok: boolean;
  readonly error?: string;
}

/** Frames a message as one protocol line. */
export function encodeLine(message: unknown): string {
  return `${JSON.stringify(message)}\n`;
}

/**
 * Splits a byte stream into lines. `push` returns the complete lines so far; a line longer than
 * `MAX_HOOK_LINE_BYTES` throws (the peer is not speaking the protocol).
 */
export class LineReader {
  #buffer = '';

  push(chunk: Buffer | string): string[] {
    this.#buffer += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    const lines: string[] = [];
    let newline = this.#buffer.indexOf('\n');
    while (newline >= 0) {
      lines.push(this.#buffer.slice(0, newline));
      this.#buffer = this.#buffer.slice(newline + 1);
      newline = this.#buffer.indexOf('\n');
    }
    if (this.#buffer.length > MAX_HOOK_LINE_BYTES) throw new Error('protocol line too long');
    return lines;
  }
}

/** Reads a `take` request; undefined when `value` is not one (the server then closes the connection). */
export function parseTakeRequest(value: unknown, limits: { maxWaitMs: number }): TakeRequest | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const request = value as Record<string, unknown>;
  if (request.op !== 'take' || request.version !== HOOK_PROTOCOL_VERSION) return undefined;
  if (request.moment !== 'tool' && request.moment !== 'prompt' && request.moment !== 'stop') return undefined;
  const maxBytes = request.maxBytes;
  const waitMs = request.waitMs;
  if (typeof maxBytes !== 'number' || !Number.isSafeInteger(maxBytes) || maxBytes < 1) return undefined;
  if (typeof waitMs !== 'number' || !Number.isSafeInteger(waitMs) || waitMs < 0) return undefined;
  return {
    op: 'take',
    version: HOOK_PROTOCOL_VERSION,
    moment: request.moment,
    maxBytes,
    waitMs: Math.min(waitMs, limits.maxWaitMs),
    stopHookActive: request.stopHookActive === true,
  };
}

/** Reads a `take` answer; undefined when the server's line is not one. */
export function parseTakeAnswer(value: unknown): TakeAnswer | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const answer = value as Record<string, unknown>;
  if (answer.version !== HOOK_PROTOCOL_VERSION) return undefined;
  const notifications = answer.notifications;
  const stillRunning = answer.stillRunning;
  if (!Array.isArray(notifications) || !Array.isArray(stillRunning)) return undefined;
  if (!notifications.every(isNotification) || !stillRunning.every(isRunningTask)) return undefined;
  const more = answer.more;
  const leaseMs = answer.leaseMs;
  if (typeof more !== 'number' || typeof leaseMs !== 'number') return undefined;
  return { version: HOOK_PROTOCOL_VERSION, notifications, more, stillRunning, leaseMs };
}

function isNotification(value: unknown): value is HookNotification {
  const record = value as Record<string, unknown> | null;
  return typeof record?.taskId === 'string' && typeof record.text === 'string';
}

function isRunningTask(value: unknown): value is RunningTask {
  const record = value as Record<string, unknown> | null;
  return typeof record?.id === 'string' && typeof record.label === 'string';
}
