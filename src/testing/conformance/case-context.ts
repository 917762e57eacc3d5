/**
 * What one conformance case runs with: a fresh provider from the factory, scripted producers it tracks so
 * that cleanup can always end them, and the waiting and assertion helpers every case shares.
 */
import assert from 'node:assert/strict';
import {
  type Caller,
  createTrustedCaller,
  type Logger,
  type TaskService,
  type TaskSnapshot,
  type TrustedCaller,
} from '../../tasks/index.js';
import { type ScriptedTask, type ScriptedTaskOptions, scriptedTask } from '../scripted-task.js';

/** A warning the provider logged while a case ran. */
export interface LoggedWarning {
  readonly message: string;
  readonly context: Record<string, unknown> | undefined;
}

/** The limits a case may ask the factory for (each provider maps them onto its own options). */
export interface ConformanceLimits {
  readonly maxLiveTasksPerOwner?: number;
  /** The live ownerless tasks at once (one shared bucket); absent: the same as `maxLiveTasksPerOwner`. */
  readonly maxLiveOwnerlessTasks?: number;
  readonly maxLiveTasks?: number;
  readonly maxRetainedTasksPerOwner?: number;
  /** Observation cursors open at once on one task. */
  readonly maxCursorsPerTask?: number;
  /** Observation cursors open at once in the whole provider. */
  readonly maxCursors?: number;
  /** How long a cursor nobody reads stays open. */
  readonly cursorIdleMs?: number;
  /** The most bytes one cursor read returns. */
  readonly maxCursorReadBytes?: number;
}

/** What the factory is given for one case. */
export interface TaskServiceConformanceSetup extends ConformanceLimits {
  /** Where the provider must send its warnings: some cases check that a warning was logged. */
  readonly logger: Logger;
}

/** What the factory returns for one case: a fresh, empty provider and how to drive it. */
export interface TaskServiceConformanceSubject {
  readonly tasks: TaskService;
  /**
   * Resolves once the provider has acted on everything producers and callers did before the call (a
   * settlement, a cancel). Default: a few turns of the event loop, enough for an in-process provider.
   */
  idle?(): Promise<void>;
  /** Releases what the factory made besides the service (connections, directories); runs after disposal. */
  cleanup?(): void | Promise<void>;
}

export type TaskServiceConformanceFactory = (
  setup: TaskServiceConformanceSetup,
) => TaskServiceConformanceSubject | Promise<TaskServiceConformanceSubject>;

/** The name the suite attaches its controller under. */
export const CONFORMANCE_CONTROLLER = 'conformance';

async function turnsOfTheEventLoop(turns: number): Promise<void> {
  for (let turn = 0; turn < turns; turn += 1) await new Promise<void>((resolve) => setImmediate(resolve));
}

export class CaseContext {
  readonly tasks: TaskService;
  readonly warnings: LoggedWarning[];
  /** A caller that sees every task (a dashboard, a host). */
  readonly trusted: TrustedCaller = createTrustedCaller('conformance');
  readonly #subject: TaskServiceConformanceSubject;
  readonly #patienceMs: number;
  readonly #producers: ScriptedTask[] = [];
  readonly #cleanups: Array<() => void> = [];

  constructor(subject: TaskServiceConformanceSubject, warnings: LoggedWarning[], patienceMs: number) {
    this.#subject = subject;
    this.tasks = subject.tasks;
    this.warnings = warnings;
    this.#patienceMs = patienceMs;
  }

  // Arrow properties: cases destructure them.

  /** A scripted producer the case drives; cleanup settles it if the case did not. */
  readonly producer = (options: ScriptedTaskOptions = {}): ScriptedTask => {
    const task = scriptedTask(options);
    this.#producers.push(task);
    return task;
  };

  /** Starts a scripted producer and returns it with the committed snapshot. */
  readonly start = async (
    options: ScriptedTaskOptions = {},
  ): Promise<{ task: ScriptedTask; snapshot: TaskSnapshot }> => {
    const task = this.producer(options);
    const snapshot = await this.tasks.start(task.spec);
    return { task, snapshot };
  };

  /** Runs `cleanup` when the case ends, before the service is disposed (settling hand-made producers). */
  readonly onCleanup = (cleanup: () => void): void => {
    this.#cleanups.push(cleanup);
  };

  /** Lets the provider act on what happened so far. */
  readonly idle = (): Promise<void> => (this.#subject.idle ? this.#subject.idle() : turnsOfTheEventLoop(5));

  /** Waits until `check` holds, failing with `what` when it does not within the suite's patience. */
  readonly eventually = async (check: () => boolean, what: string): Promise<void> => {
    // Counted in turns rather than read from a clock: about `patienceMs` in all.
    const timedTurns = Math.ceil(this.#patienceMs / 5);
    for (let turn = 0; turn < 50 + timedTurns; turn += 1) {
      if (check()) return;
      if (turn < 50) await turnsOfTheEventLoop(1);
      else await new Promise<void>((resolve) => setTimeout(resolve, 5));
    }
    if (check()) return;
    assert.fail(`expected ${what} within about ${this.#patienceMs} ms`);
  };

  /** Waits until the task is terminal, without claiming it (no wait, no read), and returns its snapshot. */
  readonly settled = async (id: string, caller: Caller = this.trusted): Promise<TaskSnapshot> => {
    let snapshot = this.tasks.get(id, caller);
    await this.eventually(() => {
      snapshot = this.tasks.get(id, caller);
      return !isLiveStatus(snapshot.status);
    }, `task ${id} to settle`);
    return snapshot;
  };

  /** Whether `promise` is still pending once the provider went idle. */
  readonly isPending = async (promise: Promise<unknown>): Promise<boolean> => {
    let done = false;
    const mark = () => {
      done = true;
    };
    promise.then(mark, mark);
    await this.idle();
    return !done;
  };

  /** Ends every tracked producer, disposes the service and the factory's resources. */
  async close(): Promise<void> {
    for (const cleanup of this.#cleanups) cleanup();
    for (const task of this.#producers) if (task.runCalls > 0) task.settle({ status: 'killed' });
    const disposal = this.tasks.dispose();
    let disposed = false;
    disposal.then(() => {
      disposed = true;
    });
    try {
      await this.eventually(() => disposed, 'the service to dispose once every producer settled');
    } finally {
      await this.#subject.cleanup?.();
    }
  }
}

/** The error `action` throws or rejects with; fails when it succeeds. */
export async function failure(action: () => unknown, what = 'the call'): Promise<unknown> {
  try {
    await action();
  } catch (error) {
    return error;
  }
  return assert.fail(`expected ${what} to fail`);
}

/** Asserts that `error` carries the stable `code` (and, when given, names `field` in its message). */
export function assertCode(error: unknown, code: string, field?: string): void {
  const actual = (error as { code?: unknown } | null)?.code;
  assert.equal(actual, code, `expected error code ${code}, got ${String(actual)}: ${String(error)}`);
  if (field !== undefined) {
    const message = (error as { message?: unknown }).message;
    assert.ok(
      typeof message === 'string' && message.includes(`\`${field}\``),
      `expected the message to name \`${field}\`: ${String(message)}`,
    );
  }
}

/** Fails with `code` (see `assertCode`) and returns the error. */
export async function failsWith(action: () => unknown, code: string, field?: string): Promise<unknown> {
  const error = await failure(action, `a call expected to fail with ${code}`);
  assertCode(error, code, field);
  return error;
}

export function isLiveStatus(status: string): boolean {
  return status === 'running' || status === 'stopping';
}
