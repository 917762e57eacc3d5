/**
 * Owners: the handle a session passes when it starts or reaches a task. Session equality grants access;
 * object identity decides cleanup and notification, so a reused session id never inherits a stale scope.
 */
import { InvalidArgumentError } from './errors.js';
import { asSessionId, type SessionId } from './ids.js';
import { defineOptions, type OptionsInput, option } from './options.js';

export type Cleanup = () => void | Promise<void>;

export interface Owner {
  readonly sessionId: SessionId;
  /** True once `dispose()` has been called (cleanups may still be running). */
  readonly disposed: boolean;
  /** The session's current conversation branch generation, stamped on tasks at registration. */
  readonly branchGeneration: number;
  /** Runs `cleanup` when the owner is disposed. Returns a function that detaches it again. */
  addCleanup(cleanup: Cleanup): () => void;
  /** Runs every attached cleanup; resolves once all have finished. Idempotent. */
  dispose(): Promise<void>;
}

/** A non-session caller with access to every task: dashboards, hosts, runtime sweeps. */
export interface TrustedCaller {
  readonly trusted: true;
  readonly name: string;
}

/**
 * Who is asking. An `Owner` sees its session's tasks; `undefined` (an anonymous non-agent caller) sees
 * ownerless tasks only; a `TrustedCaller` sees everything.
 */
export type Caller = Owner | TrustedCaller | undefined;

export function createTrustedCaller(name: string): TrustedCaller {
  return Object.freeze({ trusted: true as const, name });
}

export function isTrustedCaller(caller: Caller): caller is TrustedCaller {
  return caller !== undefined && 'trusted' in caller && caller.trusted === true;
}

/** The options of `createOwner`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
const createOwnerOptions = defineOptions('createOwner', {
  /** Reads the session's branch generation. Default: a constant 0. */
  branchGeneration: option.func<() => number>(),
});

/** Options of `createOwner`. */
export type CreateOwnerOptions = OptionsInput<typeof createOwnerOptions.rules>;

const SESSION_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

export function validateSessionId(value: unknown, field = 'sessionId'): SessionId {
  if (typeof value !== 'string' || !SESSION_ID_PATTERN.test(value)) {
    throw new InvalidArgumentError(
      field,
      'a session id of 1-128 letters, digits, ".", "_", ":" or "-"',
      value,
    );
  }
  return asSessionId(value);
}

class ScopedOwner implements Owner {
  readonly sessionId: SessionId;
  #cleanups = new Set<Cleanup>();
  #disposal: Promise<void> | undefined;
  readonly #branchGeneration: () => number;

  constructor(sessionId: SessionId, options: CreateOwnerOptions) {
    this.sessionId = sessionId;
    this.#branchGeneration = options.branchGeneration ?? (() => 0);
  }

  get disposed(): boolean {
    return this.#disposal !== undefined;
  }

  get branchGeneration(): number {
    return this.#branchGeneration();
  }

  addCleanup(cleanup: Cleanup): () => void {
    if (this.#disposal)
      throw new InvalidArgumentError('owner', 'an owner that is not disposed', this.sessionId);
    this.#cleanups.add(cleanup);
    return () => {
      this.#cleanups.delete(cleanup);
    };
  }

  dispose(): Promise<void> {
    if (this.#disposal === undefined) {
      // Marked disposed before any cleanup runs: work a cleanup triggers synchronously sees a disposed owner.
      let settle!: { resolve: () => void; reject: (error: unknown) => void };
      this.#disposal = new Promise<void>((resolve, reject) => {
        settle = { resolve, reject };
      });
      this.#runCleanups().then(settle.resolve, settle.reject);
    }
    return this.#disposal;
  }

  async #runCleanups(): Promise<void> {
    const cleanups = [...this.#cleanups];
    this.#cleanups.clear();
    const results = await Promise.allSettled(cleanups.map(async (cleanup) => cleanup()));
    const errors = results.flatMap((result) => (result.status === 'rejected' ? [result.reason] : []));
    if (errors.length > 0) {
      throw new AggregateError(errors, `Disposing the owner of session ${this.sessionId} failed`);
    }
  }
}

export function createOwner(sessionId: string, options: CreateOwnerOptions = {}): Owner {
  const id = validateSessionId(sessionId);
  return new ScopedOwner(id, createOwnerOptions.resolve(options));
}
