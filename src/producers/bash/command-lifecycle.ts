/**
 * What every command handle shares, however its command runs (piped through this runtime, durable, or on
 * a worker): the three promises a caller waits on (`spawned`, `stopped`, `outputFileReady`), the deadline,
 * the first stop reason asked for, how the command ended, and the one frozen `ExitFacts` it settles with.
 * A handle owns one and keeps only what its way of running needs; settling happens here, exactly once.
 */
import type { TerminationReport } from '../../process/index.js';
import { errnoOf } from '../../process/index.js';
import type { CancelTimer, Clock } from '../../tasks/clock.js';
import type { ExitFacts, StopReason } from './exit-facts.js';

/** What settling needs from the handle at that moment. */
export interface SettleFacts {
  readonly pid: number | null;
  readonly outputBytes: number;
  readonly outputFile: string | null;
  /** The cap a stop with reason `output_limit` exceeded. */
  readonly outputLimitBytes: number;
  /** Why the end could not be known, when it could not (the task is then `lost`). */
  readonly lost?: string | null;
}

export class CommandLifecycle {
  readonly startedAt: number;
  readonly spawned: Promise<boolean>;
  readonly stopped: Promise<ExitFacts>;
  readonly outputFileReady: Promise<string | undefined>;
  readonly #clock: Clock;
  #resolveSpawned!: (spawned: boolean) => void;
  #resolveStopped!: (facts: ExitFacts) => void;
  #resolveOutputFile!: (path: string | undefined) => void;
  #reason: StopReason | undefined;
  #cancelMessage: string | undefined;
  #error: { message: string; code: string | null } | undefined;
  #exitCode: number | null = null;
  #signal: NodeJS.Signals | null = null;
  #leaderExited = false;
  #timeoutMs: number | undefined;
  #cancelTimeout: CancelTimer | undefined;
  #facts: ExitFacts | undefined;

  constructor(clock: Clock, startedAt = clock.now()) {
    this.#clock = clock;
    this.startedAt = startedAt;
    this.spawned = new Promise((resolve) => {
      this.#resolveSpawned = resolve;
    });
    this.stopped = new Promise((resolve) => {
      this.#resolveStopped = resolve;
    });
    this.outputFileReady = new Promise((resolve) => {
      this.#resolveOutputFile = resolve;
    });
  }

  /** The facts it settled with; undefined while it runs. */
  get facts(): ExitFacts | undefined {
    return this.#facts;
  }

  get leaderExited(): boolean {
    return this.#leaderExited;
  }

  /** The first stop reason asked for before the leader exited; undefined: none. */
  get reason(): StopReason | undefined {
    return this.#reason;
  }

  get timeoutMs(): number | undefined {
    return this.#timeoutMs;
  }

  get exitCode(): number | null {
    return this.#exitCode;
  }

  spawnedAs(spawned: boolean): void {
    this.#resolveSpawned(spawned);
  }

  outputFileIs(path: string | undefined): void {
    this.#resolveOutputFile(path);
  }

  /** The first error worth reporting (a failed start, a failed output file); later ones are dropped. */
  noteError(message: string, code: string | null): void {
    this.#error ??= { message, code };
  }

  /**
   * Records a stop asked for (the first reason wins, and none once the leader exited); true when the
   * handle is to carry it out (it has not settled).
   */
  requestStop(reason: StopReason, message?: string): boolean {
    if (this.#facts) return false;
    if (!this.#leaderExited) this.#reason ??= reason;
    if (message !== undefined) this.#cancelMessage ??= message;
    return true;
  }

  /**
   * Sets the deadline to `timeoutMs` after the start (undefined removes it): `expire` runs once it
   * passes (at once when already past), unless the leader exited or `active` says the handle let go.
   */
  setDeadline(timeoutMs: number | undefined, expire: () => void, active = true): void {
    this.clearDeadline();
    this.#timeoutMs = timeoutMs;
    if (timeoutMs === undefined || this.#leaderExited || this.#facts || !active) return;
    const remaining = Math.max(0, this.startedAt + timeoutMs - this.#clock.now());
    this.#cancelTimeout = this.#clock.schedule(remaining, () => {
      this.#cancelTimeout = undefined;
      expire();
    });
  }

  clearDeadline(): void {
    this.#cancelTimeout?.();
    this.#cancelTimeout = undefined;
  }

  /** The leader ended (with its code or signal, when known): a command nobody stopped completed. */
  leaderEnded(code: number | null = this.#exitCode, signal: NodeJS.Signals | null = this.#signal): void {
    this.#leaderExited = true;
    this.#exitCode = code;
    this.#signal = signal;
    this.#reason ??= 'completed';
    this.clearDeadline();
  }

  /** The exit status something that outlived the runtime recorded (a durable wrapper's status file). */
  recordedExit(code: number): void {
    this.#exitCode = code;
    this.#signal = null;
  }

  /** Could not start: reason `spawn_error` with `message` and the cause's detail. */
  failedToStart(message: string, error: unknown, code: string | null = errnoOf(error)): void {
    const detail = error instanceof Error ? error.message : String(error);
    this.#reason = 'spawn_error';
    this.#error = { message: `${message} (${detail})`, code };
    this.#resolveSpawned(false);
  }

  /**
   * Whether a `completed` end carries no status at all (no code, no signal, no error): nothing told how
   * the command ended.
   */
  get endUnknown(): boolean {
    return (
      (this.#reason ?? 'completed') === 'completed' &&
      this.#exitCode === null &&
      this.#signal === null &&
      this.#error === undefined
    );
  }

  /** Settles once with the facts; later calls return the first facts. */
  settle(report: TerminationReport | undefined, facts: SettleFacts): ExitFacts {
    if (this.#facts) return this.#facts;
    const reason = this.#reason ?? 'completed';
    this.clearDeadline();
    this.#resolveOutputFile(facts.outputFile ?? undefined);
    this.#facts = Object.freeze({
      reason,
      exitCode: this.#exitCode,
      signal: this.#signal,
      pid: facts.pid,
      outputBytes: facts.outputBytes,
      outputFile: facts.outputFile,
      escalated: report?.escalated ?? false,
      signalledProcesses: report?.signalled ?? 0,
      survivors: Object.freeze([...(report?.survivors ?? [])]),
      startedAt: this.startedAt,
      endedAt: this.#clock.now(),
      error: this.#error?.message ?? null,
      errorCode: this.#error?.code ?? null,
      cancelMessage: this.#cancelMessage ?? null,
      timeoutMs: reason === 'timed_out' ? (this.#timeoutMs ?? null) : null,
      outputLimitBytes: reason === 'output_limit' ? facts.outputLimitBytes : null,
      lost: facts.lost ?? null,
    });
    this.#resolveStopped(this.#facts);
    return this.#facts;
  }
}
