/**
 * Residency: a session idle for `unloadIdleAfterMs` is taken out of memory (`Session.unload`), and opened
 * again from the store when needed (`SessionRuntime.loadSession`). One timer, on the injected clock, armed
 * for the first session that may have become idle long enough.
 */
import { type CancelTimer, type Clock, describeError, type Logger } from '../tasks/index.js';
import type { Session } from './session.js';

/** What residency reads of a session, and the one step it takes. */
export type ResidentView = Pick<Session, 'id' | 'owner' | 'idle' | 'unloading' | 'unload'>;

export interface SessionResidencyContext {
  readonly clock: Clock;
  /** Unload after this long without activity; `undefined` or `false`: never. */
  readonly idleAfterMs: number | false | undefined;
  /** The sessions open now. */
  residents(): Iterable<ResidentView>;
  /** True while a task the session owns still runs: it stays, however idle its conversation. */
  isWorking(session: ResidentView): boolean;
  readonly logger: Logger;
}

export class SessionResidency {
  readonly #context: SessionResidencyContext;
  /** Per resident session: when it last did anything (clock milliseconds). */
  readonly #lastActive = new Map<string, number>();
  #cancelTimer: CancelTimer | undefined;
  #stopped = false;

  constructor(context: SessionResidencyContext) {
    this.#context = context;
  }

  /** The session did something (an event, a change of one of its tasks): its idle time starts over. */
  touch(sessionId: string): void {
    this.#lastActive.set(sessionId, this.#context.clock.now());
  }

  forget(sessionId: string): void {
    this.#lastActive.delete(sessionId);
  }

  /** Arms the timer for the first session that may have become idle long enough. */
  arm(): void {
    const idleMs = this.#context.idleAfterMs;
    if (idleMs === undefined || idleMs === false || this.#stopped) return;
    this.#cancel();
    let first = Number.POSITIVE_INFINITY;
    for (const session of this.#context.residents()) {
      // One already on its way out is not waited for again.
      if (!session.unloading) first = Math.min(first, this.#lastActive.get(session.id) ?? 0);
    }
    if (first === Number.POSITIVE_INFINITY) return;
    const delay = Math.max(0, first + idleMs - this.#context.clock.now());
    const cancel = this.#context.clock.schedule(delay, () => {
      if (this.#cancelTimer !== cancel) return;
      this.#cancelTimer = undefined;
      this.#unloadIdle(idleMs);
    });
    this.#cancelTimer = cancel;
  }

  /** No more unloading (the runtime is being disposed). */
  stop(): void {
    this.#stopped = true;
    this.#cancel();
  }

  #cancel(): void {
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
  }

  /**
   * Unloads every session idle for `idleMs`; one that looks idle but may not go (its work still runs,
   * a surface holds a reservation) counts as active now and is looked at again after `idleMs`.
   */
  #unloadIdle(idleMs: number): void {
    const now = this.#context.clock.now();
    for (const session of this.#context.residents()) {
      const id = session.id;
      if (session.unloading || now - (this.#lastActive.get(id) ?? now) < idleMs) continue;
      if (!session.idle || this.#context.isWorking(session)) {
        this.#lastActive.set(id, now);
        continue;
      }
      session.unload().catch((error: unknown) => {
        this.#context.logger.warn(`session ${id}: unloading it failed`, { error: describeError(error) });
      });
    }
    this.arm();
  }
}
