/**
 * The facts that leave the runtime: `BackgroundTaskStarted`, `BackgroundTaskUpdated`,
 * `BackgroundTaskCompleted`, `BackgroundTaskRemoved`, and the level signal `BackgroundWorksLevel` (the
 * full set of current work).
 */
import type { BackgroundTaskFacts } from './background-task-facts.js';

interface EventEnvelope {
  /** Monotonic within one feed (see `BackgroundEventFeed.streamId`); starts at 1. */
  readonly id: number;
  /** When the feed emitted it, in epoch milliseconds. */
  readonly at: number;
}

/** A task became background work: started in the background, moved there, or resumed. */
export interface BackgroundTaskStarted extends EventEnvelope, BackgroundTaskFacts {
  readonly type: 'BackgroundTaskStarted';
}

/**
 * Something a viewer sees changed: pid, output bytes, tail, cancel state (stopping, no longer
 * cancellable), or — after completion — whether its result was delivered.
 */
export interface BackgroundTaskUpdated extends EventEnvelope, BackgroundTaskFacts {
  readonly type: 'BackgroundTaskUpdated';
}

/** The task reached a terminal status (completed, killed, failed, lost). */
export interface BackgroundTaskCompleted extends EventEnvelope, BackgroundTaskFacts {
  readonly type: 'BackgroundTaskCompleted';
}

export type BackgroundTaskEvent = BackgroundTaskStarted | BackgroundTaskUpdated | BackgroundTaskCompleted;
export type BackgroundTaskEventType = BackgroundTaskEvent['type'];

/**
 * The task is no longer background work a viewer shows: the registry let go of it (retention, its
 * owner's disposal), or a resumed id came back as foreground work. A viewer drops it. One event per
 * task, whatever the session holds: a long session's evictions cost a line each, not its whole level.
 */
export interface BackgroundTaskRemoved extends EventEnvelope {
  readonly type: 'BackgroundTaskRemoved';
  readonly taskId: string;
  /** The owning session; null for an ownerless task. */
  readonly sessionId: string | null;
  /** The attempt that left (a resumed id comes back as a new attempt, with `BackgroundTaskStarted`). */
  readonly attempt: number;
}

/**
 * The level signal: every current background work in its scope. A viewer replaces what it holds for
 * that scope, so whatever it missed (a dropped connection, a reset stream) cannot leave a stale entry.
 * Built on demand: at connect, and after a reset.
 */
export interface BackgroundWorksLevel extends EventEnvelope {
  readonly type: 'BackgroundWorksLevel';
  /** `all`: every session; `session`: only `sessionId`'s work. */
  readonly scope: 'all' | 'session';
  /** The session of a `session` level (null: ownerless work); null for `all`. */
  readonly sessionId: string | null;
  readonly tasks: readonly BackgroundTaskFacts[];
}

export type BackgroundEvent = BackgroundTaskEvent | BackgroundTaskRemoved | BackgroundWorksLevel;

/** A level signal of `tasks`: every work of `sessionId` when one is given (null: ownerless), else all. */
export function worksLevel(
  tasks: readonly BackgroundTaskFacts[],
  sessionId: string | null | undefined,
  id: number,
  at: number,
): BackgroundWorksLevel {
  const scoped = sessionId !== undefined;
  return Object.freeze({
    type: 'BackgroundWorksLevel' as const,
    id,
    at,
    scope: scoped ? ('session' as const) : ('all' as const),
    sessionId: scoped ? sessionId : null,
    tasks,
  });
}

export function isBackgroundTaskEvent(event: BackgroundEvent): event is BackgroundTaskEvent {
  return event.type !== 'BackgroundWorksLevel' && event.type !== 'BackgroundTaskRemoved';
}
