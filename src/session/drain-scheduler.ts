/**
 * When an idle session looks at its queue again. A lone arrival — nothing else arrived within
 * `idleDrainQuietMs` before it and no other command is ending (`endingsUnderway`) — is drained on the
 * clock's next turn, so a single completion reaches the model without waiting out a window. Arrivals
 * that come close together, or while other commands are still ending, are debounced: a burst of
 * completions starts one turn with one message, and the window stays open while endings are on their
 * way (up to `idleDrainMaxDelayMs` after the first). After the store failed to record a delivery the next
 * look waits, doubling with each failure in a row up to a cap; a hold (a "send now" promotion lease) keeps
 * idle draining off.
 * Timers run on the injected `Clock`, so a test drives every window with `createManualClock`.
 */
import type { CancelTimer, Clock } from '../tasks/index.js';
import type { ResolvedSessionLimits } from './session-limits.js';

export type DrainTimingLimits = Pick<
  ResolvedSessionLimits,
  | 'idleDrainQuietMs'
  | 'idleDrainMaxDelayMs'
  | 'idleDrainLoneAtOnce'
  | 'deliveryRetryMs'
  | 'deliveryRetryMaxMs'
>;

/** What the scheduler needs from its session. */
export interface DrainSchedulerContext {
  readonly clock: Clock;
  readonly limits: DrainTimingLimits;
  /** True once shutdown began: nothing is scheduled any more. */
  isClosing(): boolean;
  /** Works the queue (the timer fired). */
  drain(): void;
  /**
   * How many commands are ending now (their exit heard, their ending not yet told): while any are, an
   * arrival is gathered with theirs instead of drained at once. Default: none ever.
   */
  endingsUnderway?(): number;
}

/** The most doublings of the retry delay; the cap is reached long before. */
const MAX_DOUBLINGS = 30;

export class DrainScheduler {
  readonly #context: DrainSchedulerContext;
  #cancelTimer: CancelTimer | undefined;
  /** When the current debounce window opened (clock milliseconds). */
  #windowStart = 0;
  /** When the last arrival was scheduled (clock milliseconds); none yet: never. */
  #lastArrival = Number.NEGATIVE_INFINITY;
  #holds = 0;
  /** Deliveries in a row that the store failed to record; sets the delay of the next retry. */
  #failures = 0;

  constructor(context: DrainSchedulerContext) {
    this.#context = context;
  }

  /** True while a drain is due (its timer is set). */
  get scheduled(): boolean {
    return this.#cancelTimer !== undefined;
  }

  /** True while some hold keeps idle draining off. */
  get held(): boolean {
    return this.#holds > 0;
  }

  /** Deliveries in a row the store failed to record. */
  get failures(): number {
    return this.#failures;
  }

  /**
   * An arrival. A lone one (see the module comment) drains on the clock's next turn; otherwise the drain
   * runs once arrivals have been quiet for `idleDrainQuietMs` and no command is still ending, and at most
   * `idleDrainMaxDelayMs` after the first of them.
   */
  schedule(): void {
    if (this.#context.isClosing()) return;
    const now = this.#context.clock.now();
    const first = this.#cancelTimer === undefined;
    if (first) this.#windowStart = now;
    else this.#cancelTimer!();
    const { idleDrainQuietMs, idleDrainLoneAtOnce } = this.#context.limits;
    const lone =
      idleDrainLoneAtOnce && first && now - this.#lastArrival >= idleDrainQuietMs && this.#underway() === 0;
    this.#lastArrival = now;
    this.#arm(lone ? 0 : this.#quietDelay(now));
  }

  /**
   * After the store failed to record a delivery: the drain looks at the queue again after
   * `deliveryRetryMs`, doubling with each failure in a row up to `deliveryRetryMaxMs`. A new arrival
   * drains sooner, as usual.
   */
  retry(): void {
    if (this.#context.isClosing()) return;
    const { deliveryRetryMs, deliveryRetryMaxMs } = this.#context.limits;
    const doublings = Math.min(this.#failures - 1, MAX_DOUBLINGS);
    const delay = Math.min(deliveryRetryMaxMs, deliveryRetryMs * 2 ** Math.max(0, doublings));
    this.#cancelTimer?.();
    // The window opens when the retry is due, so an arrival meanwhile waits no longer than usual after it.
    this.#windowStart = this.#context.clock.now() + delay;
    this.#arm(delay);
  }

  /** The store failed to record a delivery. */
  noteFailure(): void {
    this.#failures += 1;
  }

  /** A delivery was recorded: the back-off starts over. */
  noteSuccess(): void {
    this.#failures = 0;
  }

  /** Keeps idle draining off until the returned release is called (once; later calls do nothing). */
  hold(): () => void {
    this.#holds += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#holds -= 1;
      this.schedule();
    };
  }

  /** Drops the due drain (shutdown). */
  cancel(): void {
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
  }

  /** The wait for quiet from `now`: `idleDrainQuietMs`, never past the window's `idleDrainMaxDelayMs`. */
  #quietDelay(now: number): number {
    const { idleDrainQuietMs, idleDrainMaxDelayMs } = this.#context.limits;
    return Math.min(idleDrainQuietMs, Math.max(0, this.#windowStart + idleDrainMaxDelayMs - now));
  }

  #underway(): number {
    return this.#context.endingsUnderway?.() ?? 0;
  }

  #arm(delay: number): void {
    const cancel = this.#context.clock.schedule(delay, () => {
      if (this.#cancelTimer !== cancel) return;
      // Quiet, but commands are still ending: their endings join this turn (the window's cap holds).
      const now = this.#context.clock.now();
      const wait = this.#quietDelay(now);
      if (wait > 0 && this.#underway() > 0) {
        this.#cancelTimer = undefined;
        this.#arm(wait);
        return;
      }
      this.#cancelTimer = undefined;
      this.#context.drain();
    });
    this.#cancelTimer = cancel;
  }
}
