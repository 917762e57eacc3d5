/**
 * The bash producer: registers commands with the task service (kind `bash`) and adapts process handles
 * to task hooks. The command is spawned inside `run()`, so a registration that fails its preflight
 * (no controller, an admission limit) never starts a process. Progress (pid, output bytes) is published
 * through `updateDetail`, throttled; output files are deleted when the task service forgets the task.
 */

import { DetailThrottle, formatEnvironmentTag, type SandboxSetting } from '../../process/index.js';
import { type Clock, MAX_TIMER_DELAY_MS, systemClock } from '../../tasks/clock.js';
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
import {
  type DefaultedRule,
  defineOptions,
  type OptionRule,
  type OptionsInput,
  option,
} from '../../tasks/options.js';
import type { BashFacts } from './bash-facts.js';
import { bashOutcome } from './bash-outcome.js';
import type { CommandHandle, OutputSnapshot } from './command-handle.js';
import { type DurableAttachment, DurableHandle } from './durable-handle.js';
import type { BashExecutor } from './executor.js';
import { OUTPUT_SNAPSHOT_BYTES } from './executor-options.js';
import type { ResolvedCommand } from './process-handle.js';
import { withSkippedOutputMarker } from './skipped-output-marker.js';

/** The runtime cap Errand applies to background bash owned by a subagent: one hour. */
export const SUBAGENT_BACKGROUND_RUNTIME_CAP_MS = 3_600_000;

const MAX_LABEL_CHARACTERS = 200;
/** The characters of a command a task's detail keeps. */
export const MAX_COMMAND_DETAIL_CHARACTERS = 4096;

/**
 * Where background commands run when they do not run here: a dispatcher to workers (the Redis provider's
 * remote commands). Its handles are `CommandHandle`s like the executor's, so the task hooks are the same.
 */
export interface RemoteCommands {
  /** Dispatches `resolved` as task `taskId`'s command; synchronous, like `BashExecutor.start`. */
  start(resolved: ResolvedCommand, taskId: TaskId, options?: RemoteStartOptions): CommandHandle;
  /** Re-attaches a durable command an earlier runtime dispatched; synchronous, like `BashExecutor.attach`. */
  attach(attachment: RemoteAttachment): CommandHandle;
  /** The handle of a dispatched command it still knows. */
  get(id: string): CommandHandle | undefined;
  /** Forgets a command (its task was forgotten) and what it keeps of it. */
  release(id: string): unknown;
}

export interface RemoteStartOptions {
  /** The command runs on when this runtime dies, to be re-attached on resume. Default false. */
  readonly durable?: boolean;
}

/** What a task record keeps of a durable remote command, to re-attach it (`RemoteCommands.attach`). */
export interface RemoteAttachment {
  /** The job's key in Redis (the task's `remoteJob` detail). */
  readonly job: string;
  readonly command: string;
  readonly cwd: string;
  readonly startedAt: number;
  /** The model's read cursor: output is mirrored, and read on, from here. */
  readonly readOffset: number;
  /** The worker that ran it, when the record names one. */
  readonly worker?: string | undefined;
}

/** A handle a runtime can let go of without stopping its command (a durable one, at a clean exit). */
interface DetachableHandle extends CommandHandle {
  readonly detached: Promise<void>;
  detach(): void;
}

function isDetachable(handle: CommandHandle): handle is DetachableHandle {
  return handle.durable && typeof (handle as Partial<DetachableHandle>).detach === 'function';
}

/** The options of `createBashProducer`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
export const bashProducerOptions = defineOptions('createBashProducer', {
  tasks: option.required(option.shaped<TaskService>('a TaskService', ['start'])),
  executor: option.required(option.shaped<BashExecutor>('a BashExecutor', ['start'])),
  /**
   * The presentation budget of a task's model-facing text (projected into snapshots as
   * `outputLimitBytes`), and the most one `read` returns before the skipped-output marker. Default 30000.
   */
  outputLimitBytes: option.integer({ min: 1, default: 30_000 }),
  /** The shortest time between two output-progress updates of a task's detail. Default 250 ms. */
  detailIntervalMs: option.integer({ min: 0, default: 250 }),
  /** Throttles detail updates. Default: the system clock. */
  clock: option.clock({ default: systemClock }),
  /**
   * Runs background commands (durable ones too) elsewhere: the Redis provider's workers. Foreground
   * commands always run here. Default: none, every command runs here.
   */
  remote: option.shaped<RemoteCommands>('a RemoteCommands ({ start, attach, get, release })', [
    'start',
    'attach',
    'get',
    'release',
  ]),
});

/** Options of `createBashProducer`. */
export type BashProducerOptions = OptionsInput<typeof bashProducerOptions.rules>;

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
  /**
   * Run it durably (background work only): its output goes straight to its file, its exit status is
   * captured by a wrapper, and it keeps running when the runtime dies, to be re-attached on resume
   * (`adopt`). Default false.
   */
  readonly durable?: boolean;
}

/** A durable command an earlier runtime started, as its task record tells it (for `adopt`). */
export interface AdoptedBashTask {
  readonly taskId: string;
  readonly owner: Owner;
  readonly label: string;
  /** The record's detail (command, description, working directory, tool-use id, ...). */
  readonly detail: BashFacts;
  /** A local durable command's files and process, or a remote one's job (`remote`). */
  readonly attachment: DurableAttachment | ({ readonly remote: true } & RemoteAttachment);
  /** The stored task span's traceparent: the re-attached task continues that trace. Default: none. */
  readonly traceparent?: string | undefined;
}

export interface StartedBashTask {
  readonly taskId: TaskId;
  /** The snapshot right after registration (pid and output file in its detail). */
  readonly snapshot: TaskSnapshot<BashFacts>;
  readonly handle: CommandHandle;
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
  readonly #remote: RemoteCommands | undefined;
  readonly #trusted = createTrustedCaller('bash-producer');
  /** Task id → the handle serving it. */
  readonly #handles = new Map<string, CommandHandle>();
  readonly #unsubscribe: Disposer;

  constructor(options: BashProducerOptions) {
    const resolved = bashProducerOptions.resolve(options);
    this.tasks = resolved.tasks;
    this.executor = resolved.executor;
    this.outputLimitBytes = resolved.outputLimitBytes;
    this.#detailIntervalMs = resolved.detailIntervalMs;
    this.#clock = resolved.clock;
    this.#remote = resolved.remote;
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
    if (request.durable !== undefined && typeof request.durable !== 'boolean') {
      throw new InvalidArgumentError('durable', 'a boolean', request.durable);
    }
    if (request.durable === true && !background) {
      throw new InvalidArgumentError(
        'durable',
        'false for foreground work (a durable command writes its file directly; start it in the background)',
        request.durable,
      );
    }
    const cap = optionalDuration('backgroundRuntimeCapMs', request.backgroundRuntimeCapMs);
    const timeoutMs = optionalDuration('timeoutMs', request.timeoutMs);
    const resolved = this.executor.resolve({
      command: request.command,
      ...(request.cwd === undefined ? {} : { cwd: request.cwd }),
      ...(request.env === undefined ? {} : { env: request.env }),
      ...(request.durable === true ? { durable: true } : {}),
      ...(request.sandbox === undefined ? {} : { sandbox: request.sandbox }),
      ...(request.workspace === undefined ? {} : { workspace: request.workspace }),
      // A session's commands share the limiter's session total.
      ...(request.owner === undefined ? {} : { limitGroup: request.owner.sessionId }),
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
    let started: CommandHandle | undefined;
    const remote = background ? this.#remote : undefined;
    const durable = request.durable === true;
    const limits = remote || durable ? undefined : this.executor.limitFacts;
    const snapshot = await this.tasks.start<BashFacts>({
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
        // Limits apply to the commands that run here and do not outlive the runtime.
        ...(limits === undefined ? {} : { limits }),
      },
      run: (context) => {
        const handle = remote
          ? remote.start(resolved, context.taskId, { durable })
          : this.executor.start(resolved);
        started = handle;
        return this.#hooks(context, handle);
      },
    });
    const handle = started!;
    this.#handles.set(snapshot.id, handle);
    if (!background) this.#applyCapWhenBackgrounded(snapshot.id, handle, cap);
    return { taskId: snapshot.id, snapshot, handle };
  }

  /**
   * Re-registers a durable command an earlier runtime started, under its id and for `owner` (a resumed
   * session): the executor re-attaches to it (`BashExecutor.attach`), reads continue from the model's
   * cursor, and its end — now, if it ended while no runtime watched — settles the task and is notified
   * as any other. Throws what the registration throws.
   */
  async adopt(task: AdoptedBashTask): Promise<StartedBashTask> {
    let started: CommandHandle | undefined;
    const snapshot = await this.tasks.start<BashFacts>({
      kind: 'bash',
      label: task.label,
      owner: task.owner,
      outputLimitBytes: this.outputLimitBytes,
      background: true,
      resumeId: task.taskId as TaskId,
      detail: { ...task.detail, adopted: true },
      ...(task.traceparent === undefined ? {} : { traceparent: task.traceparent }),
      run: (context) => {
        const attachment = task.attachment;
        let handle: CommandHandle;
        if ('remote' in attachment) {
          if (this.#remote === undefined) {
            throw new InvalidArgumentError(
              'attachment',
              'a local durable command (this runtime has no remote commands: configure `redis`)',
              attachment.job,
            );
          }
          handle = this.#remote.attach(attachment);
        } else {
          handle = this.executor.attach(attachment);
        }
        started = handle;
        return this.#hooks(context, handle);
      },
    });
    const handle = started!;
    this.#handles.set(snapshot.id, handle);
    return { taskId: snapshot.id, snapshot, handle };
  }

  /** Whether commands can run on workers here (durable remote commands can be re-attached). */
  get runsRemoteCommands(): boolean {
    return this.#remote !== undefined;
  }

  /** The handle serving a task, when the executor still knows it. */
  handleOf(taskId: string): CommandHandle | undefined {
    const handle = this.#handles.get(taskId);
    return handle !== undefined && this.#knows(handle) ? handle : undefined;
  }

  /** Whether the executor (or the remote dispatcher) that started `handle` still knows it. */
  #knows(handle: CommandHandle): boolean {
    return this.executor.get(handle.id) === handle || this.#remote?.get(handle.id) === handle;
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

  #hooks(context: TaskRunContext<BashFacts>, handle: CommandHandle): TaskHooks<BashFacts> {
    const throttle = new DetailThrottle(this.#clock, this.#detailIntervalMs, () =>
      context.updateDetail({ outputBytes: handle.outputBytes }),
    );
    const stopListening = handle.onOutput(() => throttle.notify());
    // A remote command's facts (its worker) arrive from elsewhere.
    const stopFacts = handle.onDetail?.((patch) => context.updateDetail(patch));
    // The output file is created with the first output (or when a path is about to be shown).
    void handle.outputFileReady.then((outputFile) => {
      if (outputFile !== undefined) context.updateDetail({ outputFile });
    });
    context.updateDetail({
      pid: handle.pid ?? null,
      pgid: handle.pid ?? null,
      outputFile: handle.outputFile ?? null,
      outputBytes: handle.outputBytes,
      durable: handle.durable,
      // Written by the durable wrapper, or by the lifeline if it had to stop the tree.
      statusFile: handle.statusFile ?? null,
      // What recognises the tree before its spawn is answered: a restart in between finds it by its tag.
      ...(handle.tag === undefined
        ? {}
        : { processTag: formatEnvironmentTag(handle.tag), bootId: handle.bootId ?? null }),
      ...(handle.durable ? { readOffset: handle.readOffset } : {}),
    });
    // What recognises the process after the fact, read once it runs and after the start's own I/O (a
    // /proc read right after a fork costs a noticeable part of the spawn).
    void handle.spawned.then((spawned) => {
      if (!spawned) return;
      setImmediate(() => {
        const facts = handle.processFacts();
        if (facts === undefined || !handle.running) return;
        context.updateDetail({
          // A launcher that spawns elsewhere (the spawner sidecar) knows the pid only once it runs.
          pid: handle.pid ?? null,
          pgid: handle.pid ?? null,
          processStartTime: facts.startTime ?? null,
          bootId: facts.bootId ?? null,
          processTag: facts.tag === undefined ? null : formatEnvironmentTag(facts.tag),
        });
      });
    });
    let reportLost!: (outcome: TaskOutcome<BashFacts>) => void;
    const lost = new Promise<TaskOutcome<BashFacts>>((resolve) => {
      reportLost = resolve;
    });
    const finished = handle.stopped.then((facts) => {
      throttle.stop();
      stopListening();
      stopFacts?.();
      return bashOutcome(facts);
    });
    const detached =
      handle instanceof DurableHandle || isDetachable(handle)
        ? (handle as DetachableHandle).detached.then(
            (): TaskOutcome<BashFacts> => ({
              status: 'lost',
              error: `The runtime let go of durable task ${context.taskId} at its exit; the command keeps running and is re-attached when its session is resumed`,
              detail: { detached: true },
            }),
          )
        : new Promise<TaskOutcome<BashFacts>>(() => {});
    let publishedOffset = handle.readOffset;
    const output = handle.outputStream();
    return {
      ...(output === undefined ? {} : { output }),
      ...(handle instanceof DurableHandle || isDetachable(handle)
        ? {
            // A teardown (a clean runtime exit) lets go of a durable command instead of stopping it.
            detach: () => {
              throttle.stop();
              stopListening();
              (handle as DetachableHandle).detach();
            },
          }
        : {}),
      cancel: (reason) => {
        if (!this.#knows(handle)) {
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
      done: Promise.race([finished, lost, detached]),
      readOutput: () => {
        const read = handle.read(this.outputLimitBytes);
        // A durable command's cursor is persisted, so a resumed session reads on where the model stopped.
        if (handle.durable && handle.readOffset !== publishedOffset) {
          publishedOffset = handle.readOffset;
          context.updateDetail({ readOffset: publishedOffset });
        }
        return withSkippedOutputMarker(read.text, read.skippedBytes, read.outputFile);
      },
    };
  }

  /** Foreground work follows its call's deadline; once backgrounded only the runtime cap applies. */
  #applyCapWhenBackgrounded(taskId: TaskId, handle: CommandHandle, cap: number | undefined): void {
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
    if (this.#remote?.get(handle.id) === handle) void this.#remote.release(handle.id);
    else void this.executor.release(handle.id);
  }
}

export function createBashProducer(options: BashProducerOptions): BashProducer {
  return new BashProducer(options);
}

/** A positive integer of milliseconds a deadline can express (at most 2^31 - 1), or undefined. */
function isDuration(value: unknown, path: string): boolean {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) return false;
  if (value > MAX_TIMER_DELAY_MS) throw new InvalidTimeoutError(path, value, MAX_TIMER_DELAY_MS);
  return true;
}

/**
 * A deadline or a wait, as an option or a request field: a positive integer of milliseconds; one longer
 * than a timer can wait fails with `INVALID_TIMEOUT`, as a task's own timeout does.
 */
export function durationRule(): OptionRule<number, number | undefined>;
export function durationRule(settings: { readonly default: number }): DefaultedRule<number, number>;
export function durationRule(settings: { readonly default?: number } = {}): OptionRule<number, unknown> {
  return option.custom<number>('a positive integer', isDuration, settings);
}

const requestDuration = durationRule();

/** A request's duration (`durationRule`), or undefined when absent. */
export function optionalDuration(field: string, value: number | undefined): number | undefined {
  return value === undefined ? undefined : requestDuration.resolve(value, field, 'start');
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
