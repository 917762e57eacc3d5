/**
 * Rate-limits progress updates: the first change publishes at once, later ones at most every
 * `intervalMs`, and the last change is always published (trailing edge) unless stopped first.
 */
import type { CancelTimer, Clock } from '../../tasks/clock.js';

export class DetailThrottle {
  readonly #clock: Clock;
  readonly #intervalMs: number;
  readonly #publish: () => void;
  #lastPublishedAt = Number.NEGATIVE_INFINITY;
  #pending: CancelTimer | undefined;
  #stopped = false;

  constructor(clock: Clock, intervalMs: number, publish: () => void) {
    this.#clock = clock;
    this.#intervalMs = intervalMs;
    this.#publish = publish;
  }

  /** Something changed: publish now, or once the interval since the last publication has passed. */
  notify(): void {
    if (this.#stopped || this.#pending) return;
    const wait = this.#lastPublishedAt + this.#intervalMs - this.#clock.now();
    if (wait <= 0) {
      this.#fire();
      return;
    }
    this.#pending = this.#clock.schedule(wait, () => {
      this.#pending = undefined;
      if (!this.#stopped) this.#fire();
    });
  }

  /** No more publications (the final value goes out another way). */
  stop(): void {
    this.#stopped = true;
    this.#pending?.();
    this.#pending = undefined;
  }

  #fire(): void {
    this.#lastPublishedAt = this.#clock.now();
    this.#publish();
  }
}
