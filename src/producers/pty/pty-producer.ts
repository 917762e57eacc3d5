/**
 * The pty producer: starts programs in pseudo-terminals as `pty` tasks of a TaskService, and gives their
 * owners input, resize and the screen. Every access is authorized through the task service
 * (`tasks.get(id, caller)`), so another session's task looks exactly like a missing one.
 */
import { resolve as resolvePath } from 'node:path';
import {
  DetailThrottle,
  limiterOf,
  OutputDirectory,
  type OutputFileWriter,
  outputFileStream,
  type ResourceLimiter,
  resolveSandbox,
  type SandboxSetting,
} from '../../process/index.js';
import {
  type Caller,
  checkPathLength,
  createTrustedCaller,
  InvalidArgumentError,
  isTerminalStatus,
  type Owner,
  type TaskHooks,
  type TaskId,
  TaskNotFoundError,
  TaskNotRunningError,
  type TaskRunContext,
  type TaskService,
  type TaskSnapshot,
  type TaskStatus,
} from '../../tasks/index.js';
import { shortenText, toSingleLine } from '../../text/index.js';
import { PtyProducerDisposedError } from './errors.js';
import { isPtyKeyName, type PtyKeyName } from './keys.js';
import {
  MIN_COLS,
  MIN_ROWS,
  type PtyProducerOptions,
  ptyProducerOptions,
  type ResolvedPtyProducerOptions,
  validateEnvironment,
} from './options.js';
import type { PtyFacts } from './pty-facts.js';
import { outcomeOf } from './pty-outcome.js';
import { createPtyOutputFile, type PtyProcess, spawnPtyProcess } from './pty-process.js';
import { loadPtyRuntime } from './pty-runtime.js';
import type { ScreenView } from './terminal-screen.js';

export const PTY_TASK_KIND = 'pty';

export interface PtyStartRequest {
  /** A command line for the configured shell. Absent: an interactive shell. */
  readonly command?: string;
  /** A short human description; the task's label when given. */
  readonly description?: string;
  /** Working directory; relative paths resolve against the process's. Default: the process's. */
  readonly cwd?: string;
  /** The session's environment, over the producer's (and the inherited process environment). */
  readonly env?: Readonly<Record<string, string>>;
  readonly cols?: number;
  readonly rows?: number;
  /** The session that owns the task. */
  readonly owner?: Owner;
  /** The tool call that started it (`<tool-use-id>` in notifications). */
  readonly toolUseId?: string;
  /** Runtime cap for this task; past it the program is stopped (`timed_out`). Default: the producer's. */
  readonly timeoutMs?: number;
  /** The sandbox the program runs in (a profile, `{ profile, network }` or a `Sandbox`). Default: the producer's. */
  readonly sandbox?: SandboxSetting;
  /** Where `workspace-write` allows writes (the session's directory). Default: `cwd`. */
  readonly workspace?: string;
  /**
   * Registered as background work. Default true; a foreground program (its tool call waits for it) is
   * registered too and can be moved to the background (`tasks.requestBackground`).
   */
  readonly background?: boolean;
}

export interface PtyStarted {
  readonly taskId: TaskId;
  readonly snapshot: TaskSnapshot<PtyFacts>;
  readonly pid: number | undefined;
  readonly outputFile: string;
}

/** What a UI shows: the task's current (or final) screen, at most `maxScreenBytes` of text. */
export interface PtyScreenSnapshot extends ScreenView {
  readonly taskId: TaskId;
  readonly status: TaskStatus;
}

export interface PtyInput {
  /** Literal text, typed first. Control characters are sent as they are. */
  readonly text?: string;
  /** Named keys, pressed after the text, in order. */
  readonly keys?: readonly PtyKeyName[];
}

export interface PtyProducer {
  readonly options: ResolvedPtyProducerOptions;
  /** The task service its programs are registered with. */
  readonly tasks: TaskService;
  /** Starts a program; rejects with `PTY_UNAVAILABLE` when node-pty cannot be loaded (nothing registered). */
  start(request: PtyStartRequest): Promise<PtyStarted>;
  /** The running program of a task the caller may see, for input and waiting. */
  process(taskId: string, caller: Caller): PtyProcess;
  write(taskId: string, input: PtyInput, caller: Caller): void;
  resize(taskId: string, cols: number, rows: number, caller: Caller): void;
  /** Non-consuming screen snapshot for UIs (also of a finished task, while it is retained). */
  screen(taskId: string, caller: Caller): PtyScreenSnapshot;
  /** Stops every running program, waits for them, and removes the output directory (unless kept). */
  dispose(): Promise<void>;
}

interface Entry {
  readonly process: PtyProcess;
  readonly context: TaskRunContext<PtyFacts>;
}

/** The name prefix of a pty producer's output directory. */
export const PTY_OUTPUT_PREFIX = 'errand-pty-';

export function createPtyProducer(options: PtyProducerOptions): PtyProducer {
  const { tasks, ...settings } = ptyProducerOptions.resolve(options);
  return new LocalPtyProducer(tasks, settings);
}

class LocalPtyProducer implements PtyProducer {
  readonly options: ResolvedPtyProducerOptions;
  readonly #tasks: TaskService;
  readonly #directory: OutputDirectory;
  readonly #entries = new Map<TaskId, Entry>();
  /** Finished tasks, oldest first, kept so their final screen stays readable. */
  readonly #finished: TaskId[] = [];
  readonly #starting = new Set<Promise<void>>();
  /** The output file of every task not yet forgotten by the task service. */
  readonly #outputFiles = new Map<TaskId, string>();
  readonly #unsubscribe: () => void;
  #disposed = false;
  /** The resource limiter (its mechanism detected once, here) and whether this producer made it. */
  readonly #limits: { readonly limiter: ResourceLimiter; readonly owned: boolean } | undefined;

  get tasks(): TaskService {
    return this.#tasks;
  }

  constructor(tasks: TaskService, options: ResolvedPtyProducerOptions) {
    this.#tasks = tasks;
    this.options = options;
    this.#directory = new OutputDirectory(PTY_OUTPUT_PREFIX, options.outputRoot);
    this.#limits = limiterOf(options.resourceLimits, { clock: options.clock, logger: options.logger });
    // When the service forgets a finished task, its screen and its output file go too.
    this.#unsubscribe = tasks.onTasksChanged(
      (change) => {
        if (change.reason === 'removed' && change.task.kind === PTY_TASK_KIND) this.#forget(change.task.id);
      },
      { caller: createTrustedCaller('pty-producer') },
    );
  }

  start(request: PtyStartRequest): Promise<PtyStarted> {
    const starting = this.#start(request);
    // Disposal waits for starts in flight, so no program can start behind its back.
    const tracked = starting.then(
      () => undefined,
      () => undefined,
    );
    this.#starting.add(tracked);
    void tracked.then(() => this.#starting.delete(tracked));
    return starting;
  }

  async #start(request: PtyStartRequest): Promise<PtyStarted> {
    const validated = this.#validate(request);
    const sandbox =
      request.sandbox === undefined ? this.options.sandbox : resolveSandbox(request.sandbox, 'sandbox');
    if (this.#disposed) throw new PtyProducerDisposedError();
    const runtime = await loadPtyRuntime(this.options.loadPty);
    if (this.#disposed) throw new PtyProducerDisposedError();
    const file = await createPtyOutputFile(this.#directory, this.options);
    const cwd = resolvePath(request.cwd ?? process.cwd());
    const command = request.command;
    const label = shortenText(
      toSingleLine(request.description ?? command ?? 'interactive shell'),
      this.options.maxLabelChars,
    );
    const detail: PtyFacts = {
      command: command ?? [this.options.shell, ...this.options.interactiveShellArgs].join(' '),
      ...(request.description === undefined ? {} : { description: request.description }),
      ...(request.toolUseId === undefined ? {} : { toolUseId: request.toolUseId }),
      cwd,
      cols: validated.cols,
      rows: validated.rows,
      outputFile: file.path,
      ...(sandbox === undefined ? {} : { sandbox: { ...sandbox.facts } }),
      ...(this.#limits === undefined ? {} : { limits: this.#limits.limiter.facts }),
    };
    let started: PtyProcess | undefined;
    let snapshot: TaskSnapshot<PtyFacts>;
    try {
      snapshot = await this.#tasks.start<PtyFacts>({
        kind: PTY_TASK_KIND,
        label,
        ...(request.background === false ? { background: false } : {}),
        ...(request.owner === undefined ? {} : { owner: request.owner }),
        ...(this.options.outputLimitBytes === undefined
          ? {}
          : { outputLimitBytes: this.options.outputLimitBytes }),
        detail,
        run: (context) => {
          if (this.#disposed) throw new PtyProducerDisposedError();
          const pty = spawnPtyProcess({
            runtime,
            settings: this.options,
            ...(command === undefined ? {} : { command }),
            cwd,
            env: this.#environment(request.env),
            cols: validated.cols,
            rows: validated.rows,
            outputFile: file,
            ...(validated.timeoutMs === undefined ? {} : { timeoutMs: validated.timeoutMs }),
            ...(sandbox === undefined ? {} : { sandbox, workspace: resolvePath(request.workspace ?? cwd) }),
            ...(this.#limits === undefined
              ? {}
              : { limits: this.#limits.limiter.open(request.owner?.sessionId) }),
          });
          started = pty;
          if (pty.pid !== undefined) context.updateDetail({ pid: pty.pid, pgid: pty.pid, durable: false });
          const facts = pty.processFacts();
          if (facts !== undefined) {
            // What recognises the program's tree after the fact (a restart that finds it still running).
            context.updateDetail({
              processStartTime: facts.startTime,
              bootId: facts.bootId ?? null,
              processTag: facts.tag,
              statusFile: facts.statusFile ?? null,
            });
          }
          return this.#register(context, pty, file);
        },
      });
    } catch (error) {
      if (started === undefined) await this.#discard(file);
      throw error;
    }
    return { taskId: snapshot.id, snapshot, pid: started?.pid, outputFile: file.path };
  }

  process(taskId: string, caller: Caller): PtyProcess {
    return this.#access(taskId, caller).entry.process;
  }

  write(taskId: string, input: PtyInput, caller: Caller): void {
    const text = input.text ?? '';
    const keys = input.keys ?? [];
    if (typeof text !== 'string') throw new InvalidArgumentError('input', 'a string', text, { taskId });
    if (!Array.isArray(keys) || !keys.every(isPtyKeyName)) {
      throw new InvalidArgumentError('keys', 'an array of key names (see PTY_KEY_NAMES)', keys, { taskId });
    }
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes > this.options.maxInputBytes) {
      throw new InvalidArgumentError('input', `at most ${this.options.maxInputBytes} bytes of UTF-8`, text, {
        taskId,
      });
    }
    this.#running(taskId, caller).process.writeInput(text, keys);
  }

  resize(taskId: string, cols: number, rows: number, caller: Caller): void {
    this.#validateSize(cols, rows, { taskId });
    const entry = this.#running(taskId, caller);
    entry.process.resize(cols, rows);
    entry.context.updateDetail({ cols, rows });
  }

  screen(taskId: string, caller: Caller): PtyScreenSnapshot {
    const { snapshot, entry } = this.#access(taskId, caller);
    return { ...entry.process.screen(), taskId: snapshot.id, status: snapshot.status };
  }

  async dispose(): Promise<void> {
    this.#disposed = true;
    this.#unsubscribe();
    await Promise.all([...this.#starting]);
    const stopping = [...this.#entries.values()].map((entry) => {
      entry.process.cancel('cancelled');
      return entry.process.stopped;
    });
    await Promise.all(stopping);
    if (this.#limits?.owned) this.#limits.limiter.dispose();
    // Nothing is left to take a census of: release what the process table source holds open.
    this.options.processSource.close?.();
    this.#directory.dispose(this.options.keepOutputFiles);
  }

  // ------------------------------------------------------------------ internals

  #validate(request: PtyStartRequest): { cols: number; rows: number; timeoutMs: number | undefined } {
    if (typeof request !== 'object' || request === null) {
      throw new InvalidArgumentError('request', 'an object', request);
    }
    const { command, description, cwd, toolUseId } = request;
    const { maxCommandBytes } = this.options;
    if (
      command !== undefined &&
      (typeof command !== 'string' ||
        command.trim() === '' ||
        Buffer.byteLength(command, 'utf8') > maxCommandBytes ||
        command.includes('\0'))
    ) {
      throw new InvalidArgumentError(
        'command',
        `a non-empty string of at most maxCommandBytes (${maxCommandBytes}) UTF-8 bytes without NUL`,
        command,
      );
    }
    if (description !== undefined && (typeof description !== 'string' || description.trim() === '')) {
      throw new InvalidArgumentError('description', 'a non-empty string', description);
    }
    if (cwd !== undefined && (typeof cwd !== 'string' || cwd === '' || cwd.includes('\0'))) {
      throw new InvalidArgumentError('cwd', 'a non-empty path without NUL', cwd);
    }
    if (cwd !== undefined) checkPathLength('cwd', resolvePath(cwd));
    if (request.workspace !== undefined && typeof request.workspace === 'string') {
      checkPathLength('workspace', resolvePath(request.workspace));
    }
    if (toolUseId !== undefined && typeof toolUseId !== 'string') {
      throw new InvalidArgumentError('toolUseId', 'a string', toolUseId);
    }
    const workspace = request.workspace;
    if (
      workspace !== undefined &&
      (typeof workspace !== 'string' || workspace === '' || workspace.includes('\0'))
    ) {
      throw new InvalidArgumentError('workspace', 'a non-empty path without NUL', workspace);
    }
    validateEnvironment('env', request.env);
    const cols = request.cols ?? this.options.defaultCols;
    const rows = request.rows ?? this.options.defaultRows;
    this.#validateSize(cols, rows);
    const timeoutMs = request.timeoutMs ?? this.options.runtimeCapMs;
    if (timeoutMs !== undefined && (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1)) {
      throw new InvalidArgumentError('timeoutMs', 'a positive integer of milliseconds', timeoutMs);
    }
    return { cols, rows, timeoutMs };
  }

  #validateSize(cols: unknown, rows: unknown, context: { taskId?: string } = {}): void {
    const { maxCols, maxRows } = this.options;
    if (typeof cols !== 'number' || !Number.isInteger(cols) || cols < MIN_COLS || cols > maxCols) {
      throw new InvalidArgumentError('cols', `an integer from ${MIN_COLS} to ${maxCols}`, cols, context);
    }
    if (typeof rows !== 'number' || !Number.isInteger(rows) || rows < MIN_ROWS || rows > maxRows) {
      throw new InvalidArgumentError('rows', `an integer from ${MIN_ROWS} to ${maxRows}`, rows, context);
    }
  }

  #environment(session: Readonly<Record<string, string>> | undefined): Record<string, string> {
    const env: Record<string, string> = {};
    if (this.options.inheritProcessEnv) {
      for (const [name, value] of Object.entries(process.env)) if (value !== undefined) env[name] = value;
      // The pty reports the real size; stale values from the host's terminal would mislead programs.
      delete env.COLUMNS;
      delete env.LINES;
    }
    Object.assign(env, this.options.env, session);
    return env;
  }

  #register(context: TaskRunContext<PtyFacts>, pty: PtyProcess, file: OutputFileWriter): TaskHooks<PtyFacts> {
    this.#entries.set(context.taskId, { process: pty, context });
    this.#outputFiles.set(context.taskId, pty.outputFile);
    // Viewers see the output grow; the final count goes out with the outcome.
    let published = pty.outputBytes;
    const throttle = new DetailThrottle(this.options.clock, this.options.detailIntervalMs, () => {
      published = pty.outputBytes;
      context.updateDetail({ outputBytes: published });
    });
    const unsubscribe = pty.onChange(() => {
      if (pty.outputBytes !== published) throttle.notify();
    });
    let cancelMessage: string | undefined;
    const done = pty.stopped.then((exit) => {
      throttle.stop();
      unsubscribe();
      this.#retire(context.taskId);
      const outcome = outcomeOf(exit);
      // The caller's reason (a task_kill reason) is kept beside the raw stop facts.
      return cancelMessage === undefined
        ? outcome
        : { ...outcome, detail: { ...outcome.detail, cancelMessage } };
    });
    return {
      cancel: (reason?: string) => {
        cancelMessage ??= reason;
        pty.cancel('cancelled');
      },
      done,
      readOutput: () => pty.readDelta(),
      // Observers read the raw terminal output as the file holds it; the model reads the rendered screen.
      output: outputFileStream(file),
    };
  }

  #retire(taskId: TaskId): void {
    this.#finished.push(taskId);
    while (this.#finished.length > this.options.retainFinishedScreens) {
      const oldest = this.#finished.shift();
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
  }

  #forget(taskId: TaskId): void {
    const entry = this.#entries.get(taskId);
    // A live task is never forgotten; the check keeps a misbehaving provider from orphaning a program.
    if (entry?.process.running) return;
    this.#entries.delete(taskId);
    const index = this.#finished.indexOf(taskId);
    if (index >= 0) this.#finished.splice(index, 1);
    const outputFile = this.#outputFiles.get(taskId);
    this.#outputFiles.delete(taskId);
    if (outputFile !== undefined && !this.options.keepOutputFiles) this.#directory.removeFile(outputFile);
  }

  #access(taskId: string, caller: Caller): { snapshot: TaskSnapshot; entry: Entry } {
    const snapshot = this.#tasks.get(taskId, caller);
    if (snapshot.kind !== PTY_TASK_KIND) {
      throw new InvalidArgumentError('task_id', 'the id of a pty task', taskId, { kind: snapshot.kind });
    }
    const entry = this.#entries.get(snapshot.id);
    if (entry === undefined) throw new TaskNotFoundError(taskId);
    return { snapshot, entry };
  }

  /** Removes the output file of a program that never started. */
  async #discard(file: OutputFileWriter): Promise<void> {
    await file.close();
    this.#directory.removeFile(file.path);
  }

  #running(taskId: string, caller: Caller): Entry {
    const { snapshot, entry } = this.#access(taskId, caller);
    if (snapshot.status !== 'running' || !entry.process.running) {
      throw new TaskNotRunningError(
        snapshot.id,
        isTerminalStatus(snapshot.status) ? snapshot.status : 'stopping',
      );
    }
    return entry;
  }
}
