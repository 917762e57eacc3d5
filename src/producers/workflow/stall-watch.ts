/**
 * Stall detection for a running workflow: when no progress (a step starting or ending, `ctx.progress`,
 * command output, subagent activity) arrives for `stallAfterMs`, it reports a stall — once per stall:
 * the next report needs new progress first. Sleeping and waiting for an answer are not stalls, so the
 * watch pauses while a run does either.
 */
import type { CancelTimer, Clock } from '../bash/index.js';

export interface StallReport {
  /** How long the run has made no progress. */
  readonly idleMs: number;
  /** The last progress message, if any. */
  readonly lastMessage: string | undefined;
}

export class StallWatch {
  readonly #clock: Clock;
  readonly #stallAfterMs: number | false;
  readonly #onStall: (report: StallReport) => void;
  #lastActivityAt: number;
  #lastMessage: string | undefined;
  #cancelTimer: CancelTimer | undefined;
  #pauses = 0;
  #reported = false;
  #stopped = false;

  constructor(clock: Clock, stallAfterMs: number | false, onStall: (report: StallReport) => void) {
    this.#clock = clock;
    this.#stallAfterMs = stallAfterMs;
    this.#onStall = onStall;
    this.#lastActivityAt = clock.now();
    this.#arm();
  }

  /** Progress: restarts the countdown; a reported stall is over. */
  note(message?: string): void {
    if (this.#stopped) return;
    this.#lastActivityAt = this.#clock.now();
    if (message !== undefined) this.#lastMessage = message;
    this.#reported = false;
    this.#arm();
  }

  /** Stops counting until `resume` (pauses nest). */
  pause(): void {
    this.#pauses += 1;
    this.#disarm();
  }

  resume(): void {
    if (this.#pauses === 0) return;
    this.#pauses -= 1;
    if (this.#pauses === 0) this.note();
  }

  stop(): void {
    this.#stopped = true;
    this.#disarm();
  }

  #arm(): void {
    this.#disarm();
    if (this.#stopped || this.#pauses > 0 || this.#reported || this.#stallAfterMs === false) return;
    this.#cancelTimer = this.#clock.schedule(this.#stallAfterMs, () => this.#fire());
  }

  #disarm(): void {
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
  }

  #fire(): void {
    this.#cancelTimer = undefined;
    if (this.#stopped || this.#pauses > 0 || this.#reported) return;
    this.#reported = true;
    this.#onStall({ idleMs: this.#clock.now() - this.#lastActivityAt, lastMessage: this.#lastMessage });
  }
}
