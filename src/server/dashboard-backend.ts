/**
 * What the dashboard server needs from a runtime, and nothing more: sessions, the background event
 * feed, a stop, output snapshots and output readers. The session runtime implements it; so does
 * `createTaskServiceBackend` for a bare task service, and `createStoreDashboardBackend` for every
 * process recording into a store.
 */
import type { BackgroundEventFeed } from '../events/index.js';
import type { OpenCursorOptions, OutputCursor } from '../tasks/index.js';

export interface DashboardSession {
  readonly id: string;
  /** A short human title for the session list. */
  readonly title?: string | undefined;
  /** The session that started this one (a subagent's parent); absent for a top-level session. */
  readonly parentId?: string | undefined;
  /** Epoch milliseconds. */
  readonly createdAt?: number | undefined;
}

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
  /**
   * Opens a non-consuming reader of a background work's output (an observation cursor, or a reader of
   * its output file), for the live output endpoints. Undefined when nothing holds that work's output
   * (the server answers 404 `OUTPUT_UNAVAILABLE`); a position outside the output throws
   * `INVALID_ARGUMENT`, too many open readers `CURSOR_LIMIT`. Absent: the live endpoints answer 404.
   * The server closes every reader it opened.
   */
  openOutput?(workId: string, options: OpenCursorOptions): MaybePromise<OutputCursor | undefined>;
}
