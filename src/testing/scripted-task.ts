/**
 * A producer whose every move a test decides: push output, settle with any outcome, and choose how it
 * answers cancel (settle as killed, ignore, or throw). Use it instead of one-off mocks of the hooks.
 * `scriptedTask<MyFacts>(...)` publishes facts of your own type (`start<MyFacts>(task.spec)`).
 */
import type {
  Owner,
  TaskFacts,
  TaskHooks,
  TaskKind,
  TaskOutcome,
  TaskOutputStream,
  TaskRunContext,
  TaskSpec,
} from '../tasks/index.js';

export type CancelBehavior = 'settle' | 'ignore' | 'throw';

export interface ScriptedTaskOptions<F extends TaskFacts = TaskFacts> {
  readonly kind?: TaskKind;
  readonly label?: string;
  readonly owner?: Owner;
  /** Streaming tasks expose `readOutput`; final-output tasks do not. Default true. */
  readonly streaming?: boolean;
  /**
   * Whether a streaming task also exposes its output as a byte stream (`TaskHooks.output`) for
   * observation cursors. Default true.
   */
  readonly observable?: boolean;
  /**
   * The stream keeps only its newest this many bytes, as a bounded stream (a Redis stream with a cap)
   * would: older ones leave it, and a cursor behind them reads a missed-bytes marker. Default: keep all.
   */
  readonly retainBytes?: number;
  /** How `cancel` answers. `settle` (default) settles as killed on the next microtask. */
  readonly onCancel?: CancelBehavior;
  readonly cancellable?: boolean;
  readonly outputLimitBytes?: number;
  readonly background?: boolean;
  readonly acceptsMessages?: boolean;
  /** Spec fields passed through unchanged (resume, detail, branch generation). */
  readonly spec?: Partial<Omit<TaskSpec<F>, 'run'>>;
}

export interface ScriptedTask<F extends TaskFacts = TaskFacts> {
  readonly spec: TaskSpec<F>;
  /** How many times the service called `run()`. */
  readonly runCalls: number;
  readonly cancelReasons: readonly (string | undefined)[];
  readonly messages: readonly string[];
  readonly context: TaskRunContext<F> | undefined;
  /** Appends streaming output (to the consuming read and to the byte stream). */
  push(text: string): void;
  /** Bytes pushed so far: the byte stream's end. */
  readonly streamBytes: number;
  /** Settles `done` with the given outcome (default completed). */
  settle(outcome?: TaskOutcome<F>): void;
  /** Rejects `done`: a producer breaking its contract. */
  reject(error: unknown): void;
}

export function scriptedTask<F extends TaskFacts = TaskFacts>(
  options: NoInfer<ScriptedTaskOptions<F>> = {},
): ScriptedTask<F> {
  let resolveDone!: (outcome: TaskOutcome<F>) => void;
  let rejectDone!: (error: unknown) => void;
  let buffer = '';
  let runCalls = 0;
  let context: TaskRunContext<F> | undefined;
  const cancelReasons: (string | undefined)[] = [];
  const messages: string[] = [];
  const onCancel = options.onCancel ?? 'settle';
  const stream =
    options.streaming !== false && options.observable !== false ? byteStream(options) : undefined;

  const run = (runContext: TaskRunContext<F>): TaskHooks<F> => {
    runCalls += 1;
    context = runContext;
    const done = new Promise<TaskOutcome<F>>((resolve, reject) => {
      resolveDone = resolve;
      rejectDone = reject;
    });
    const hooks: TaskHooks<F> = {
      done,
      cancellable: options.cancellable ?? true,
      cancel(reason) {
        cancelReasons.push(reason);
        if (onCancel === 'throw') throw new Error('scripted cancel failure');
        if (onCancel === 'settle') {
          queueMicrotask(() =>
            resolveDone({ status: 'killed', detail: { reason: 'cancelled' } as Partial<F> }),
          );
        }
      },
      ...(options.streaming === false
        ? {}
        : {
            readOutput() {
              const text = buffer;
              buffer = '';
              return text;
            },
            ...(stream ? { output: stream.port } : {}),
          }),
      ...(options.acceptsMessages ? { sendMessage: (message: string) => void messages.push(message) } : {}),
    };
    return hooks;
  };

  const spec: TaskSpec<F> = {
    kind: options.kind ?? 'scripted',
    label: options.label ?? 'scripted task',
    ...(options.owner ? { owner: options.owner } : {}),
    ...(options.outputLimitBytes ? { outputLimitBytes: options.outputLimitBytes } : {}),
    ...(options.background === undefined ? {} : { background: options.background }),
    ...options.spec,
    run,
  };

  return {
    spec,
    get runCalls() {
      return runCalls;
    },
    cancelReasons,
    messages,
    get context() {
      return context;
    },
    push(text) {
      buffer += text;
      stream?.append(text);
    },
    get streamBytes() {
      return stream?.port.end ?? 0;
    },
    settle(outcome = { status: 'completed' }) {
      resolveDone(outcome);
    },
    reject(error) {
      rejectDone(error);
    },
  };
}

/** The byte stream of a scripted task: what was pushed, the newest `retainBytes` of it kept. */
function byteStream(options: ScriptedTaskOptions): {
  readonly port: TaskOutputStream;
  append(text: string): void;
} {
  const retain = options.retainBytes ?? Number.POSITIVE_INFINITY;
  let held = Buffer.alloc(0);
  let heldFrom = 0;
  const listeners = new Set<() => void>();
  const port: TaskOutputStream = {
    get end() {
      return heldFrom + held.length;
    },
    get retainedFrom() {
      return heldFrom;
    },
    location: 'scripted-output',
    read(offset, maxBytes) {
      const from = Math.max(offset, heldFrom);
      const start = from - heldFrom;
      return { from, bytes: Buffer.from(held.subarray(start, start + maxBytes)) };
    },
    onGrow(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
  };
  return {
    port,
    append(text) {
      if (text === '') return;
      held = Buffer.concat([held, Buffer.from(text, 'utf8')]);
      if (held.length > retain) {
        heldFrom += held.length - retain;
        held = held.subarray(held.length - retain);
      }
      for (const listener of [...listeners]) listener();
    },
  };
}
