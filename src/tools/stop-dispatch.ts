/**
 * The stop dispatch: one entry for every way a task is stopped — the model's task_kill, a person's Stop
 * in a UI, the runtime's sweeps. It answers ok, or why nothing was stopped (`not_found`, `not_running`,
 * `cancel_not_supported`); a producer whose cancel throws is not an answer but a failure: the
 * `CANCEL_FAILED` error is thrown and the task keeps running.
 *
 * Producers with their own stop protocol register a strategy for their kind. The default records the
 * initiator and requests the cancel in one registry step (`kill(..., { initiator })`), which announces
 * `stopping` with `cancelRequestedAt` before the producer is asked — what a workflow (initiator first)
 * and bash (not cancellable any more, then cancel) need.
 */
import {
  type Caller,
  type Disposer,
  ErrandError,
  InvalidArgumentError,
  isTerminalStatus,
  isValidTaskKind,
  type StopInitiator,
  type TaskKind,
  type TaskService,
  type TaskSnapshot,
} from '../tasks/index.js';
import { defineOptions, type OptionsInput, option } from '../tasks/options.js';

export type StopFailureReason = 'not_found' | 'not_running' | 'cancel_not_supported';

export type StopResult =
  | { readonly ok: true; readonly snapshot: TaskSnapshot }
  | { readonly ok: false; readonly reason: StopFailureReason; readonly snapshot?: TaskSnapshot };

export interface StopRequest {
  /** Who asks: `user` (a person in a UI), `model` (task_kill), `system` (runtime sweeps). */
  readonly initiator: StopInitiator;
  /** Whose view the id is resolved in; unauthorized ids answer `not_found`. */
  readonly caller?: Caller;
  /** Passed to the producer's cancel. */
  readonly reason?: string;
}

export interface StopStrategyContext {
  readonly tasks: TaskService;
  /** The task as it was when the dispatch resolved it (live and cancellable). */
  readonly snapshot: TaskSnapshot;
  readonly request: StopRequest;
  /** The default stop: initiator recorded, then the registry's kill. */
  defaultStop(): Promise<StopResult>;
}

/** A kind's own stop protocol. Throwing `CANCEL_FAILED` means the task keeps running. */
export type StopStrategy = (context: StopStrategyContext) => StopResult | Promise<StopResult>;

export interface StopAllEntry {
  readonly taskId: string;
  /** Set when the stop answered. */
  readonly result?: StopResult;
  /** Set when the stop failed (for example `CANCEL_FAILED`). */
  readonly error?: unknown;
}

export interface StopDispatch {
  stopBackgroundTask(id: string, request: StopRequest): Promise<StopResult>;
  /** Stops every live task visible to `request.caller` (optionally filtered); one failure does not stop the rest. */
  stopAll(
    request: StopRequest & { readonly filter?: (snapshot: TaskSnapshot) => boolean },
  ): Promise<StopAllEntry[]>;
  /** Registers the stop protocol of `kind`; returns a disposer that removes it. */
  registerStrategy(kind: TaskKind, strategy: StopStrategy): Disposer;
}

/** The options of `createStopDispatch`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
const stopDispatchOptions = defineOptions('createStopDispatch', {
  tasks: option.required(option.shaped<TaskService>('a TaskService', ['kill'])),
  /** Strategies per kind; kinds without one use the default. */
  strategies: option.record<TaskKind, StopStrategy, StopStrategy | undefined>(option.func<StopStrategy>(), {
    keys: { expected: 'task kinds', isValid: isValidTaskKind },
  }),
});

/** Options of `createStopDispatch`. */
export type StopDispatchOptions = OptionsInput<typeof stopDispatchOptions.rules>;

const INITIATORS: readonly StopInitiator[] = ['user', 'model', 'system'];

function validateRequest(request: StopRequest): void {
  if (typeof request !== 'object' || request === null) {
    throw new InvalidArgumentError('request', 'an object', request);
  }
  if (!INITIATORS.includes(request.initiator)) {
    throw new InvalidArgumentError('initiator', '"user", "model" or "system"', request.initiator);
  }
  if (request.reason !== undefined && typeof request.reason !== 'string') {
    throw new InvalidArgumentError('reason', 'a string', request.reason);
  }
}

/** The default strategy: one guarded registry step records the initiator and requests the cancel. */
export async function killWithInitiator(
  tasks: TaskService,
  snapshot: TaskSnapshot,
  request: StopRequest,
): Promise<StopResult> {
  try {
    const after = await tasks.kill(snapshot.id, request.caller, request.reason, {
      initiator: request.initiator,
    });
    // Settlement is asynchronous, so a terminal answer means it had ended before the request.
    if (isTerminalStatus(after.status)) return { ok: false, reason: 'not_running', snapshot: after };
    return { ok: true, snapshot: after };
  } catch (error) {
    if (ErrandError.hasCode(error, 'TASK_NOT_FOUND')) return { ok: false, reason: 'not_found' };
    if (ErrandError.hasCode(error, 'CANCEL_NOT_SUPPORTED')) {
      return { ok: false, reason: 'cancel_not_supported', snapshot };
    }
    throw error;
  }
}

export function createStopDispatch(options: StopDispatchOptions): StopDispatch {
  const resolved = stopDispatchOptions.resolve(options);
  const { tasks } = resolved;
  const strategies = new Map<TaskKind, StopStrategy>();
  for (const [kind, strategy] of Object.entries(resolved.strategies)) {
    if (strategy !== undefined) register(kind, strategy);
  }

  function register(kind: TaskKind, strategy: StopStrategy): Disposer {
    if (!isValidTaskKind(kind)) throw new InvalidArgumentError('kind', 'a task kind', kind);
    if (typeof strategy !== 'function') throw new InvalidArgumentError('strategy', 'a function', strategy);
    strategies.set(kind, strategy);
    return () => {
      if (strategies.get(kind) === strategy) strategies.delete(kind);
    };
  }

  async function stopBackgroundTask(id: string, request: StopRequest): Promise<StopResult> {
    validateRequest(request);
    let snapshot: TaskSnapshot;
    try {
      snapshot = tasks.get(id, request.caller);
    } catch (error) {
      if (ErrandError.hasCode(error, 'TASK_NOT_FOUND')) return { ok: false, reason: 'not_found' };
      throw error;
    }
    if (isTerminalStatus(snapshot.status)) return { ok: false, reason: 'not_running', snapshot };
    if (!snapshot.cancellable) return { ok: false, reason: 'cancel_not_supported', snapshot };
    const defaultStop = () => killWithInitiator(tasks, snapshot, request);
    const strategy = strategies.get(snapshot.kind);
    if (strategy === undefined) return defaultStop();
    return strategy({ tasks, snapshot, request, defaultStop });
  }

  return {
    stopBackgroundTask,
    async stopAll(request) {
      validateRequest(request);
      const live = tasks
        .list(request.caller)
        .filter((snapshot) => !isTerminalStatus(snapshot.status) && (request.filter?.(snapshot) ?? true));
      return Promise.all(
        live.map(async (snapshot): Promise<StopAllEntry> => {
          try {
            return { taskId: snapshot.id, result: await stopBackgroundTask(snapshot.id, request) };
          } catch (error) {
            return { taskId: snapshot.id, error };
          }
        }),
      );
    },
    registerStrategy: register,
  };
}
