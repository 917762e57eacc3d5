/**
 * The conversation between an `errand hook` process and the MCP server whose session it serves, over
 * the server's Unix socket: one connection per hook, newline-delimited JSON. The hook sends one `take`;
 * the server answers with the notifications it reserved for it (and, at the end of a turn, what is
 * still running); the hook prints them, then sends `commit` — or `release` if it printed nothing. A
 * connection that closes, or a lease that runs out, before `commit` releases the reservation: the
 * notifications go back to the head of the session's queue.
 *
 * An end-of-turn block is the one hand-over a client may throw away (Claude Code overrides a Stop hook
 * past its block cap and discards that block): its `commit` is only tentative. The server records it
 * delivered once the client shows it continued (its next end-of-turn hook says `stopHookActive`, or a
 * tool hook runs), and gives it back when the client shows it did not (a fresh turn's hook).
 *
 * Compaction: a `compact` take (before the client summarises the conversation) only marks the task
 * digest due and answers empty; a `context` take (the compacted conversation starting) answers the
 * digest; while it is due, a `tool` or `prompt` answer carries it too. It stays due until a hook that
 * carried it commits.
 */
import type { HookMoment } from './hook-clients.js';

export const HOOK_PROTOCOL_VERSION = 2;

/** The most bytes of one protocol line either side reads; a longer line ends the connection. */
export const MAX_HOOK_LINE_BYTES = 1024 * 1024;

/**
 * What an end-of-turn (or wake) take waits for before it answers:
 * - `none`: only the short gathering window (an interactive client that is woken later by other means);
 * - `first`: the first ending, then the gathering window (an interactive client with nothing to wake it);
 * - `all`: every running task's ending, up to `waitMs` (a headless run, which ends when its turn ends).
 */
export type HoldMode = 'none' | 'first' | 'all';

export const HOLD_MODES: readonly HoldMode[] = ['none', 'first', 'all'];

const TAKE_MOMENTS: readonly HookMoment[] = ['tool', 'prompt', 'stop', 'wake', 'compact', 'context'];

export interface TakeRequest {
  readonly op: 'take';
  readonly version: number;
  readonly moment: HookMoment;
  /** The hook's output budget in UTF-8 bytes (the hook prints a compact form past it). */
  readonly maxBytes: number;
  /**
   * At the end of a turn (or a wake): how long to wait for running background work, in ms (the server
   * caps it). 0 answers after the gathering window at most.
   */
  readonly waitMs: number;
  /** At the end of a turn or a wake: what the wait waits for. */
  readonly hold: HoldMode;
  /** The client is already continuing because an end-of-turn hook refused the end. */
  readonly stopHookActive: boolean;
  /**
   * The client's limit on consecutive end-of-turn blocks (it ends the turn past it, discarding the
   * block); 0 for none.
   */
  readonly blockCap: number;
  /**
   * The client hands a block's reason to the model as the next prompt (Gemini CLI): a prompt hook right
   * after a block is that continuation, not a new turn.
   */
  readonly promptContinues: boolean;
}

export interface SettleRequest {
  /** `commit`: printed (at the end of a turn: tentatively, see the module comment); `release`: not. */
  readonly op: 'commit' | 'release';
}

export type HookRequest = TakeRequest | SettleRequest;

export interface HookNotification {
  readonly taskId: string;
  readonly label: string;
  readonly text: string;
}

export interface RunningTask {
  readonly id: string;
  readonly label: string;
}

/**
 * Why an end-of-turn answer names running work:
 * - `reminder`: nothing ended within the wait (an interactive client);
 * - `final`: this is the last block the client allows in a row — it ends the turn at the next stop;
 * - `expired`: a headless run was held as long as it may be; the work is stopped when the run ends.
 */
export type RunningNotice = 'reminder' | 'final' | 'expired';

export interface TakeAnswer {
  readonly version: number;
  /** Reserved for this hook: print them, then commit. */
  readonly notifications: readonly HookNotification[];
  /** Notifications still queued after these (they follow at the next hook or tool result). */
  readonly more: number;
  /**
   * At the end of a turn: background work still running that the model is to be told of (reserved like
   * notifications: told once committed), and why (`notice`).
   */
  readonly stillRunning: readonly RunningTask[];
  readonly notice?: RunningNotice;
  /** How long the server holds the reservation for a commit, in ms. */
  readonly leaseMs: number;
  /**
   * The session's task digest (`<task-digest>…`): after a compaction, handed to the model with (or
   * without) the notifications. Print it, then commit: it is due until then.
   */
  readonly digest?: string;
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
export function parseTakeRequest(
  value: unknown,
  limits: { readonly maxWaitMs: number; readonly maxWakeWaitMs: number },
): TakeRequest | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const request = value as Record<string, unknown>;
  if (request.op !== 'take' || request.version !== HOOK_PROTOCOL_VERSION) return undefined;
  const moment = request.moment;
  if (!(TAKE_MOMENTS as readonly unknown[]).includes(moment)) return undefined;
  const { maxBytes, waitMs, blockCap, hold } = request;
  if (!isCount(maxBytes) || maxBytes < 1 || !isCount(waitMs) || !isCount(blockCap)) return undefined;
  if (!(HOLD_MODES as readonly unknown[]).includes(hold)) return undefined;
  return {
    op: 'take',
    version: HOOK_PROTOCOL_VERSION,
    moment: moment as HookMoment,
    maxBytes,
    waitMs: Math.min(waitMs, moment === 'wake' ? limits.maxWakeWaitMs : limits.maxWaitMs),
    hold: hold as HoldMode,
    stopHookActive: request.stopHookActive === true,
    blockCap,
    promptContinues: request.promptContinues === true,
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
  const notice = answer.notice;
  if (notice !== undefined && notice !== 'reminder' && notice !== 'final' && notice !== 'expired') {
    return undefined;
  }
  const digest = answer.digest;
  if (digest !== undefined && typeof digest !== 'string') return undefined;
  return {
    version: HOOK_PROTOCOL_VERSION,
    notifications,
    more,
    stillRunning,
    ...(notice === undefined ? {} : { notice }),
    leaseMs,
    ...(digest === undefined || digest === '' ? {} : { digest }),
  };
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function isNotification(value: unknown): value is HookNotification {
  const record = value as Record<string, unknown> | null;
  return (
    typeof record?.taskId === 'string' && typeof record.label === 'string' && typeof record.text === 'string'
  );
}

function isRunningTask(value: unknown): value is RunningTask {
  const record = value as Record<string, unknown> | null;
  return typeof record?.id === 'string' && typeof record.label === 'string';
}
