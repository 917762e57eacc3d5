/**
 * The told-endings memory: which task ends a tool result already showed the model. A notification of
 * such an end would tell the model twice, so every surface (the session's inbox, the AI SDK bridge)
 * discards the queued one and refuses one that is still being formatted — with these rules, in one place.
 */
import { InvalidArgumentError } from '../tasks/index.js';
import type { ToldTaskEnd } from '../tools/tool-definition.js';

/**
 * How many task ids the memory keeps (the oldest is forgotten first). A notification that races a read
 * is formatted within milliseconds; the bound only caps memory.
 */
export const MAX_TOLD_ENDINGS = 256;

/** What a told end is compared with: a notification's task and, when known, its attempt. */
export interface EndOfAttempt {
  readonly taskId: string;
  readonly attempt?: number | undefined;
}

/**
 * Checks a told end a caller handed over: a non-empty task id and an integer attempt, or none.
 * Returns it with `attempt` spelt out.
 */
export function validateToldTaskEnd(end: {
  readonly taskId: string;
  readonly attempt?: number | undefined;
}): ToldTaskEnd {
  const { taskId, attempt } = end ?? ({} as never);
  if (typeof taskId !== 'string' || taskId === '') {
    throw new InvalidArgumentError('taskId', 'a task id', taskId);
  }
  if (attempt !== undefined && !Number.isSafeInteger(attempt)) {
    throw new InvalidArgumentError('attempt', 'an integer or undefined', attempt);
  }
  return { taskId, attempt };
}

/**
 * The covering rule: a told end covers a queued notification of the same task whose attempt is that
 * attempt or an earlier one — and every one of the task when either attempt is unknown.
 */
export function endCovers(end: ToldTaskEnd, notification: EndOfAttempt): boolean {
  return (
    notification.taskId === end.taskId &&
    (end.attempt === undefined || notification.attempt === undefined || notification.attempt <= end.attempt)
  );
}

/** Task id → the highest attempt whose end a tool result showed the model, bounded, oldest first. */
export class ToldEndings {
  readonly #attempts = new Map<string, number>();
  readonly #limit: number;

  constructor(limit = MAX_TOLD_ENDINGS) {
    if (!Number.isSafeInteger(limit) || limit < 1) {
      throw new InvalidArgumentError('limit', 'a positive integer', limit);
    }
    this.#limit = limit;
  }

  /** Remembers an end whose attempt is known (one without an attempt can only discard what is queued). */
  note(end: ToldTaskEnd): void {
    if (end.attempt === undefined) return;
    const known = this.#attempts.get(end.taskId);
    // Re-inserted, so the task id counts as the newest.
    this.#attempts.delete(end.taskId);
    this.#attempts.set(end.taskId, Math.max(known ?? 0, end.attempt));
    if (this.#attempts.size > this.#limit) {
      const oldest = this.#attempts.keys().next().value;
      if (oldest !== undefined) this.#attempts.delete(oldest);
    }
  }

  /**
   * The admission rule: true when the model already read the end of this attempt (or a later one) of the
   * task. A notification of an unknown attempt is never refused by the memory.
   */
  covers(notification: EndOfAttempt): boolean {
    if (notification.attempt === undefined) return false;
    const reported = this.#attempts.get(notification.taskId);
    return reported !== undefined && notification.attempt <= reported;
  }

  /** Task ids remembered now. */
  get size(): number {
    return this.#attempts.size;
  }
}
