/**
 * What the dashboard server needs from a runtime, and nothing more: sessions, the background event
 * feed, a stop, output snapshots and output readers — and, where the runtime has them, the conversation, its running
 * foreground work and a "move to background". `createErrandRuntime`'s `dashboard` implements all of it,
 * `createStoreDashboardBackend` too (through the store), `createTaskServiceBackend` the required part.
 */
import type { BackgroundEventFeed } from '../events/index.js';
import type { MessageRecord } from '../store/index.js';
import type { OpenCursorOptions, OutputCursor } from '../tasks/index.js';

export interface DashboardSession {
  readonly id: string;
  /** A short title recorded for the session (an MCP session's: its client's name and version). */
  readonly title?: string | undefined;
  /** The session that started this one (a subagent's parent); absent for a top-level session. */
  readonly parentId?: string | undefined;
  /** Epoch milliseconds. */
  readonly createdAt?: number | undefined;
  /** The session's working directory. */
  readonly cwd?: string | undefined;
  /** The first thing a person wrote in it (one line, bounded): what a person recognises it by. */
  readonly firstUserMessage?: string | undefined;
  /** A runtime has it open now. False: it ended, or the process holding it is gone. Default: true. */
  readonly live?: boolean | undefined;
  /** Open in the runtime that serves this dashboard (the server's own session). Default false. */
  readonly own?: boolean | undefined;
  /** The process holding it, when known. */
  readonly pid?: number | undefined;
  /**
   * Running background works of the session that the event feed does not carry (another process's, seen
   * in the store): the session list still marks it. Default 0.
   */
  readonly runningElsewhere?: number | undefined;
}

/** A page of a session's conversation: `afterSeq` for what is newer, else the newest before `beforeSeq`. */
export interface MessagePageRequest {
  readonly afterSeq?: number | undefined;
  readonly beforeSeq?: number | undefined;
  /** At least 1; the server bounds it. */
  readonly limit: number;
}

export interface MessagePage {
  /** Oldest first. */
  readonly messages: readonly MessageRecord[];
  /** Older messages exist before the first one. */
  readonly hasOlder: boolean;
}

/** A running foreground call of a session: its tool call waits on it, and a person may move it on. */
export interface ForegroundWork {
  readonly workId: string;
  readonly sessionId: string;
  /** The tool call it serves, when known (its conversation card). */
  readonly toolCallId: string | null;
  readonly taskKind: string;
  readonly label: string;
  readonly startedAt: number;
  /** A person can move it to the background (a bash command or a subagent held by a live runtime). */
  readonly canMoveToBackground: boolean;
}

/** Why nothing was moved to the background. */
export type MoveRejectionReason = 'not_found' | 'not_running' | 'not_supported';

export type MoveToBackgroundResult =
  | { readonly ok: true; readonly workId: string }
  | { readonly ok: false; readonly reason: MoveRejectionReason };

/** Why a stop cancelled nothing. The `background_task_` prefixed forms are accepted and stripped. */
export type StopRejectionReason = 'not_found' | 'not_running' | 'cancel_not_supported';

export type StopBackgroundWorkResult =
  | { readonly ok: true }
  | {
      readonly ok: false;
      readonly reason: StopRejectionReason | `background_task_${StopRejectionReason}`;
    };

export interface OutputSnapshot {
  /** The end of the work's output; the server cuts it to its byte budget, keeping the end. */
  readonly text: string;
  /** Every byte the work produced, when known (more than `text` once output was cut). */
  readonly totalBytes?: number | undefined;
}

export type MaybePromise<Value> = Value | Promise<Value>;

export interface DashboardBackend {
  /** Every session a person may look at. */
  listSessions(): MaybePromise<readonly DashboardSession[]>;
  /** One session, with its `parentId`; undefined when unknown. */
  getSession(sessionId: string): MaybePromise<DashboardSession | undefined>;
  /**
   * The background events of every session (a trusted view). The server reads its level, replays it to
   * reconnecting viewers and projects it to `backgroundWorks`; it never disposes it.
   */
  readonly events: BackgroundEventFeed;
  /**
   * Stops a running background work on a person's request (initiator `user`). Resolves `{ ok: true }`
   * only when a cancel was really requested; otherwise the reason nothing was cancelled. Throwing means
   * the stop itself failed (the work may keep running).
   */
  stopBackgroundWork(workId: string): MaybePromise<StopBackgroundWorkResult>;
  /**
   * The output of `workId` as known to `sessionId`'s live runtime, at most `maxBytes` (larger answers
   * are cut by the server). Answers undefined when that runtime is not loaded or does not hold the
   * work: it must never load or resume a runtime just to read output. The server asks the work's own
   * session first, then walks up the `parentId` chain.
   */
  outputSnapshot(
    sessionId: string,
    workId: string,
    maxBytes: number,
  ): MaybePromise<OutputSnapshot | undefined>;
  /** A page of the session's stored conversation; absent (or undefined) where none is kept. */
  readMessages?(sessionId: string, page: MessagePageRequest): MaybePromise<MessagePage | undefined>;
  /** The session's running foreground work; absent where the backend cannot see it. */
  listForegroundWork?(sessionId: string): MaybePromise<readonly ForegroundWork[]>;
  /**
   * Moves a running foreground command or subagent to the background, as a person's key in the terminal
   * does: the waiting tool call returns at once with its task id. Absent: the backend cannot.
   */
  moveToBackground?(workId: string): MaybePromise<MoveToBackgroundResult>;
  /**
   * Opens a non-consuming reader of a background work's output (an observation cursor, or a reader of
   * its output file), for the live output endpoints. Undefined when nothing holds that work's output
   * (the server answers 404 `OUTPUT_UNAVAILABLE`); a position outside the output throws
   * `INVALID_ARGUMENT`, too many open readers `CURSOR_LIMIT`. Absent: the live endpoints answer 404.
   * The server closes every reader it opened.
   */
  openOutput?(workId: string, options: OpenCursorOptions): MaybePromise<OutputCursor | undefined>;
}
