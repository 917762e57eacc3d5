/**
 * The bash producer: registers commands with the task service (kind `bash`) and adapts process handles
 * to task hooks. The command is spawned inside `run()`, so a registration that fails its preflight
 * (no controller, an admission limit) never starts a process. Progress (pid, output bytes) is published
 * through `updateDetail`, throttled; output files are deleted when the task service forgets the task.
 */

import { DetailThrottle, type SandboxSetting } from '../../process/index.js';
import { type Clock, systemClock } from '../../tasks/clock.js';
import {
  type Caller,
  createTrustedCaller,
  type Disposer,
  InvalidArgumentError,
  InvalidTimeoutError,
  type Owner,
  type TaskHooks,
  type TaskId,
  TaskNotFoundError,
  type TaskOutcome,
  type TaskRunContext,
  type TaskService,
  type TaskSnapshot,
} from '../../tasks/index.js';
import { optionKeys, rejectUnknownOptions } from '../../tasks/option-keys.js';
import { bashOutcome } from './bash-outcome.js';
import { type BashExecutor, MAX_COMMAND_TIMEOUT_MS } from './executor.js';
import { integerOption, OUTPUT_SNAPSHOT_BYTES } from './executor-options.js';
import type { OutputSnapshot, ProcessHandle } from './process-handle.js';
import { withSkippedOutputMarker } from './skipped-output-marker.js';

/** The runtime cap Errand applies to background bash owned by a subagent: one hour. */
export const SUBAGENT_BACKGROUND_RUNTIME_CAP_MS = 3_600_000;

const MAX_LABEL_CHARACTERS = 200;
const MAX_COMMAND_DETAIL_CHARACTERS = 4096;

/** Options of `createBashProducer`. A key not listed here is rejected with `UNKNOWN_OPTION`. */
export interface BashProducerOptions {
  readonly tasks: TaskService;
  readonly executor: BashExecutor;
  /**
   * The presentation budget of a task's model-facing text (projected into snapshots as
   * `outputLimitBytes`), and the most one `read` returns before the skipped-output marker. Default 30000.
   */
  readonly outputLimitBytes?: number;
  /** The shortest time between two output-progress updates of a task's detail. Default 250 ms. */
  readonly detailIntervalMs?: number;
  readonly clock?: Clock;
}

/** Every key of `BashProducerOptions`; any other key is rejected with `UNKNOWN_OPTION`. */
export const BASH_PRODUCER_OPTION_KEYS = optionKeys<BashProducerOptions>()({
  tasks: true,
  executor: true,
  outputLimitBytes: true,
  detailIntervalMs: true,
  clock: true,
});

export interface BashTaskRequest {
  readonly command: string;
  /** A short description for people; the task's label (else the command). */
  readonly description?: string;
  readonly owner?: Owner;
  /** The tool call that started it (`<tool-use-id>` in notifications). */
  readonly toolUseId?: string;
  readonly cwd?: string;
  /** The complete environment of the shell. Default `process.env` at start. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Registered as background work. Default true; foreground work is registered too and can be promoted. */
  readonly background?: boolean;
  /**
   * The deadline, from the start. For foreground work it applies until the work moves to the
   * background; for background work it is combined with the runtime cap (the shorter wins).
   */
  readonly timeoutMs?: number;
  /**
   * The most a command may run in the background, from its start (expiry kills it with reason
   * `timed_out`), 1 to 2147483647 ms. Default: no cap. Subagents use `SUBAGENT_BACKGROUND_RUNTIME_CAP_MS`.
   */
  readonly backgroundRuntimeCapMs?: number;
  /** The sandbox the command runs in (a profile, `{ profile, network }` or a `Sandbox`). Default: the executor's. */
  readonly sandbox?: SandboxSetting;
  /** Where `workspace-write` allows writes (the session's directory). Default: `cwd`. */
  readonly workspace?: string;
}

export interface StartedBashTask {
  readonly taskId: TaskId;
  /** The snapshot right after registration (pid and output file in its detail). */
  readonly snapshot: TaskSnapshot;
  readonly handle: ProcessHandle;
}

/** What a UI's bash detail view shows: the newest output, at most 8192 bytes, never consumed. */
export interface BashOutputView extends OutputSnapshot {
  readonly taskId: TaskId;
}

export class BashProducer {
  readonly tasks: TaskService;
  readonly executor: BashExecutor;
  readonly outputLimitBytes: number;
  readonly #detailIntervalMs: number;
  readonly #clock: Clock;
  readonly #trusted = createTrustedCaller('bash-producer');
  /** Task id → the handle serving it. */
  readonly #handles = new Map<string, ProcessHandle>();
  readonly #unsubscribe: Disposer;

  constructor(options: BashProducerOptions) {
    rejectUnknownOptions(options, BASH_PRODUCER_OPTION_KEYS, { where: 'createBashProducer' });
    if (typeof options?.tasks?.start !== 'function') {
      throw new InvalidArgumentError('tasks', 'a TaskService', options?.tasks);
    }
    if (typeof options.executor?.start !== 'function') {
      throw new InvalidArgumentError('executor', 'a BashExecutor', options.executor);
    }
    this.tasks = options.tasks;
    this.executor = options.executor;
    this.outputLimitBytes = integerOption('outputLimitBytes', options.outputLimitBytes, 30_000, 1);
    this.#detailIntervalMs = integerOption('detailIntervalMs', options.detailIntervalMs, 250, 0);
    this.#clock = options.clock ?? systemClock;
    this.#unsubscribe = this.tasks.onTasksChanged(
      (change) => {
        if (change.reason === 'removed' && change.task.kind === 'bash') this.#forget(change.task.id);
      },
      { caller: this.#trusted },
    );
  }

  /**
   * Registers and starts a command. Throws what the registration throws (nothing is spawned then);
   * a command that cannot start still gets a task, which settles as failed with reason `spawn_error`.
   */
  async start(request: BashTaskRequest): Promise<StartedBashTask> {
    const background = request.background ?? true;
    const cap = optionalDuration('backgroundRuntimeCapMs', request.backgroundRuntimeCapMs);
    const timeoutMs = optionalDuration('timeoutMs', request.timeoutMs);
    const resolved = this.executor.resolve({
      command: request.command,
      ...(request.cwd === undefined ? {} : { cwd: request.cwd }),
      ...(request.env === undefined ? {} : { env: request.env }),
      ...(request.sandbox === undefined ? {} : { sandbox: request.sandbox }),
      ...(request.workspace === undefined ? {} : { workspace: request.workspace }),
      ...(shorter(timeoutMs, background ? cap : undefined) === undefined
        ? {}
        : { timeoutMs: shorter(timeoutMs, background ? cap : undefined) }),
    });
    if (request.description !== undefined && typeof request.description !== 'string') {
      throw new InvalidArgumentError('description', 'a string', request.description);
    }
    if (request.toolUseId !== undefined && typeof request.toolUseId !== 'string') {
      throw new InvalidArgumentError('toolUseId', 'a string', request.toolUseId);
    }
    let started: ProcessHandle | undefined;
    const snapshot = await this.tasks.start({
      kind: 'bash',
      label: labelOf(request.description, request.command),
      ...(request.owner ? { owner: request.owner } : {}),
      outputLimitBytes: this.outputLimitBytes,
      background,
      detail: {
        command: request.command.slice(0, MAX_COMMAND_DETAIL_CHARACTERS),
        description: request.description ?? null,
        cwd: resolved.cwd,
        toolUseId: request.toolUseId ?? null,
        // Shown wherever details are: the task list, the dashboard, the store.
        ...(resolved.sandbox === undefined ? {} : { sandbox: { ...resolved.sandbox.facts } }),
      },
      run: (context) => {
        const handle = this.executor.start(resolved);
        started = handle;
        return this.#hooks(context, handle);
      },
    });
    const handle = started!;
    this.#handles.set(snapshot.id, handle);
    if (!background) this.#applyCapWhenBackgrounded(snapshot.id, handle, cap);
    return { taskId: snapshot.id, snapshot, handle };
  }

  /** The handle serving a task, when the executor still knows it. */
  handleOf(taskId: string): ProcessHandle | undefined {
    const handle = this.#handles.get(taskId);
    return handle !== undefined && this.executor.get(handle.id) === handle ? handle : undefined;
  }

  /**
   * A UI's view of a task's output: at most 8192 bytes, non-consuming. Unknown and unauthorized ids throw
   * `TASK_NOT_FOUND`; undefined when the task's output is gone (the executor released it).
   */
  snapshot(taskId: string, caller?: Caller, limitBytes = OUTPUT_SNAPSHOT_BYTES): BashOutputView | undefined {
    const task = this.tasks.get(taskId, caller);
    if (task.kind !== 'bash') throw new TaskNotFoundError(taskId);
    const handle = this.handleOf(task.id);
    if (!handle) return undefined;
    return { taskId: task.id, ...handle.snapshot(limitBytes) };
  }

  /** Moves a running foreground command to the background (same process, same id). */
  promote(taskId: string, caller: Caller = this.#trusted): TaskSnapshot {
    return this.tasks.requestBackground(taskId, caller);
  }

  /** Stops listening to the task service. Running commands are left to the service and executor. */
  dispose(): void {
    this.#unsubscribe();
  }

  #hooks(context: TaskRunContext, handle: ProcessHandle): TaskHooks {
    const throttle = new DetailThrottle(this.#clock, this.#detailIntervalMs, () =>
      context.updateDetail({ outputBytes: handle.outputBytes }),
    );
    const stopListening = handle.onOutput(() => throttle.notify());
    // The output file is created with the first output (or when a path is about to be shown).
    void handle.outputFileReady.then((outputFile) => {
      if (outputFile !== undefined) context.updateDetail({ outputFile });
    });
    context.updateDetail({
      pid: handle.pid ?? null,
      pgid: handle.pid ?? null,
      outputFile: handle.outputFile ?? null,
      outputBytes: 0,
    });
    let reportLost!: (outcome: TaskOutcome) => void;
    const lost = new Promise<TaskOutcome>((resolve) => {
      reportLost = resolve;
    });
    const finished = handle.stopped.then((facts) => {
      throttle.stop();
      stopListening();
      return bashOutcome(facts);
    });
    return {
      cancel: (reason) => {
        if (this.executor.get(handle.id) !== handle) {
          // The executor no longer knows the process: nothing can stop it or report its end.
          reportLost({
            status: 'lost',
            error: `The executor no longer knows the process of task ${context.taskId}`,
            detail: { reason: 'lost' },
          });
          return;
        }
        handle.cancel(reason);
      },
      done: Promise.race([finished, lost]),
      readOutput: () => {
        const read = handle.read(this.outputLimitBytes);
        return withSkippedOutputMarker(read.text, read.skippedBytes, read.outputFile);
      },
    };
  }

  /** Foreground work follows its call's deadline; once backgrounded only the runtime cap applies. */
  #applyCapWhenBackgrounded(taskId: TaskId, handle: ProcessHandle, cap: number | undefined): void {
    this.tasks.waitForBackground(taskId, this.#trusted).then(
      (result) => {
        if (result === 'backgrounded') handle.setTimeout(cap);
      },
      () => {
        // The task was forgotten before it moved; nothing to apply.
      },
    );
  }

  #forget(taskId: string): void {
    const handle = this.#handles.get(taskId);
    if (!handle) return;
    this.#handles.delete(taskId);
    void this.executor.release(handle.id);
  }
}

export function createBashProducer(options: BashProducerOptions): BashProducer {
  return new BashProducer(options);
}

/** A positive integer of milliseconds a deadline can express (at most 2^31 - 1), or undefined. */
export function optionalDuration(field: string, value: number | undefined): number | undefined {
  if (value === undefined) return undefined;
  const duration = integerOption(field, value, 0, 1);
  if (duration > MAX_COMMAND_TIMEOUT_MS) throw new InvalidTimeoutError(field, value, MAX_COMMAND_TIMEOUT_MS);
  return duration;
}

function shorter(left: number | undefined, right: number | undefined): number | undefined {
  if (left === undefined) return right;
  if (right === undefined) return left;
  return Math.min(left, right);
}

function labelOf(description: string | undefined, command: string): string {
  const source = (description?.trim() || command.trim()).replace(/\s+/g, ' ');
  return source.length <= MAX_LABEL_CHARACTERS ? source : `${source.slice(0, MAX_LABEL_CHARACTERS - 1)}…`;
}
