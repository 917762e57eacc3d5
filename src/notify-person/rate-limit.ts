/**
 * A token bucket per sink: at most `burst` notices at once, refilled at `perMinute`. A notice over the
 * limit is not sent (the "what was sent" view records it as rate-limited); a person flooded by a
 * thousand ends learns nothing more from the thousandth.
 */
import type { Clock } from '../tasks/index.js';

export interface RateLimitSettings {
  /** Notices refilled per minute. */
  readonly perMinute: number;
  /** The most notices sent back to back. */
  readonly burst: number;
}

export class RateLimiter {
  readonly #settings: RateLimitSettings;
  readonly #clock: Clock;
  #tokens: number;
  #refilledAt: number;

  constructor(settings: RateLimitSettings, clock: Clock) {
    this.#settings = settings;
    this.#clock = clock;
    this.#tokens = settings.burst;
    this.#refilledAt = clock.now();
  }

  /** Takes one token; false when none is left. */
  take(): boolean {
    const now = this.#clock.now();
    const elapsed = Math.max(0, now - this.#refilledAt);
    this.#refilledAt = now;
    this.#tokens = Math.min(
      this.#settings.burst,
      this.#tokens + (elapsed * this.#settings.perMinute) / 60_000,
    );
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }
}
