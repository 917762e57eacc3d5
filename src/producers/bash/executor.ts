/**
 * The bash executor: the seam between Errand and the OS. `resolve` fills in a command's defaults,
 * `start` runs it in the background and returns its handle, `run` runs it in the foreground to the end.
 * The executor knows every handle it started until it is released; disposing it stops every command,
 * waits for them, and removes the private output directory.
 */
import { realpathSync, rmdirSync } from 'node:fs';
import { dirname, isAbsolute, resolve as resolvePath } from 'node:path';
import {
  findOnPath,
  type LimitFacts,
  limiterOf,
  OutputDirectory,
  ProcessTags,
  type ResourceLimiter,
  resolveSandbox,
  type SandboxSetting,
} from '../../process/index.js';
import {
  checkPathLength,
  InvalidArgumentError,
  InvalidTimeoutError,
  MAX_TIMER_DELAY_MS,
} from '../../tasks/index.js';
import type { CommandHandle } from './command-handle.js';
import { type DurableAttachment, DurableHandle } from './durable-handle.js';
import {
  CommandTooLargeError,
  DurableDirectoryInWorkspaceError,
  ExecutorDisposedError,
  ProcessIdInUseError,
} from './errors.js';
import {
  type BashExecutorOptions,
  OUTPUT_SNAPSHOT_BYTES,
  PROCESS_TAG_VARIABLE,
  type ResolvedExecutorOptions,
  resolveExecutorOptions,
} from './executor-options.js';
import type { ExitFacts } from './exit-facts.js';
import { LimitedHandle, limitedLauncher } from './limited-handle.js';
import { type OutputSnapshot, ProcessHandle, type ResolvedCommand } from './process-handle.js';

/** The longest deadline (`MAX_TIMER_DELAY_MS`, under the name it was published with). */
export const MAX_COMMAND_TIMEOUT_MS = MAX_TIMER_DELAY_MS;

export interface CommandRequest {
  readonly command: string;
  /** Working directory; relative paths resolve against the runtime's cwd. Default: the runtime's cwd. */
  readonly cwd?: string;
  /**
   * The complete environment of the shell: nothing else is merged in (except the process tag). Default:
   * `process.env` as it is when the command starts.
   */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Kill with reason `timed_out` after this many milliseconds. Default: no deadline. */
  readonly timeoutMs?: number;
  /** The handle's id. Default: a fresh `process-N`. */
  readonly id?: string;
  /**
   * Run durably: the command writes its output file directly, its exit status is written by a wrapper
   * that waits for it, and it keeps running when the runtime dies (no lifeline watches it); a later
   * runtime re-attaches to it (`attach`). Default false.
   */
  readonly durable?: boolean;
  /** The sandbox this command runs in (see `BashExecutorOptions.sandbox`). Default: the executor's. */
  readonly sandbox?: SandboxSetting;
  /**
   * Where `workspace-write` allows writes: the session's working directory, whatever `cwd` the command
   * asked for. Relative paths resolve against the runtime's cwd. Default: the command's `cwd`.
   */
  readonly workspace?: string;
  /**
   * The group whose commands share the `resourceLimits.session` total (the owning session's id). Default:
   * one group for every command without one.
   */
  readonly limitGroup?: string;
}

export interface ForegroundRunOptions {
  /** The most output the result carries (the newest bytes). Default 30000. */
  readonly outputLimitBytes?: number;
  /** Prefix of each stderr line in `output`. Default `[stderr] `. */
  readonly stderrPrefix?: string;
}

export interface ForegroundRunResult {
  readonly facts: ExitFacts;
  /** The newest output, stderr lines prefixed. */
  readonly output: string;
  /** Older output left out of `output`. */
  readonly skippedBytes: number;
}

export const DEFAULT_STDERR_PREFIX = '[stderr] ';

/**
 * The largest command the executor starts, in bytes of UTF-8: the kernel refuses a single argument
 * longer than 128 KiB (MAX_ARG_STRLEN, counting its terminating NUL) with E2BIG.
 */
export const MAX_COMMAND_BYTES = 131_071;

/** The name prefix of an executor's output directory (its durable commands' directory has its own). */
export const BASH_OUTPUT_PREFIX = 'errand-bash-';

function checkedPath(field: string, path: string): string {
  checkPathLength(field, path);
  return path;
}

export class BashExecutor {
  readonly #options: ResolvedExecutorOptions;
  readonly #directory: OutputDirectory;
  /** Output and status files of durable commands: never removed with the executor (they outlive it). */
  readonly #durableDirectory: OutputDirectory;
  readonly #handles = new Map<string, CommandHandle>();
  readonly #live = new Set<CommandHandle>();
  readonly #resolved = new WeakSet<ResolvedCommand>();
  readonly #shellPaths = new Map<string, string>();
  #sequence = 0;
  readonly #tags = new ProcessTags(PROCESS_TAG_VARIABLE);
  /** The resource limiter (its mechanism detected once, here) and whether this executor made it. */
  readonly #limits: { readonly limiter: ResourceLimiter; readonly owned: boolean } | undefined;
  readonly #limitGroups = new WeakMap<ResolvedCommand, string>();
  #disposal: Promise<void> | undefined;

  constructor(options: BashExecutorOptions = {}) {
    this.#options = resolveExecutorOptions(options);
    this.#limits = limiterOf(this.#options.resourceLimits, {
      clock: this.#options.clock,
      logger: this.#options.logger,
    });
    this.#directory = new OutputDirectory(BASH_OUTPUT_PREFIX, this.#options.outputDirectoryParent);
    this.#durableDirectory = new OutputDirectory('errand-durable-', this.#options.outputDirectoryParent);
  }

  /** The effective options (defaults filled in). */
  get options(): ResolvedExecutorOptions {
    return this.#options;
  }

  /** The limiter of this executor's commands; undefined when nothing is limited. */
  get resourceLimiter(): ResourceLimiter | undefined {
    return this.#limits?.limiter;
  }

  /** The resource limits commands run under and their mechanism (`detail.limits`); undefined: none. */
  get limitFacts(): LimitFacts | undefined {
    return this.#limits?.limiter.facts;
  }

  /** The private directory holding output files, once the first one was created. */
  get outputDirectory(): string | undefined {
    return this.#directory.path;
  }

  /** Validates a request and fills in its defaults. Throws `INVALID_ARGUMENT` / `INVALID_TIMEOUT`. */
  resolve(request: CommandRequest): ResolvedCommand {
    if (typeof request !== 'object' || request === null) {
      throw new InvalidArgumentError('request', 'an object', request);
    }
    const { command, cwd, env, timeoutMs, id, durable, workspace, limitGroup } = request;
    if (typeof command !== 'string' || command.trim() === '' || command.includes('\0')) {
      throw new InvalidArgumentError('command', 'a non-empty string without NUL characters', command);
    }
    const commandBytes = Buffer.byteLength(command, 'utf8');
    if (commandBytes > MAX_COMMAND_BYTES) {
      throw new CommandTooLargeError('command', commandBytes, MAX_COMMAND_BYTES);
    }
    if (durable !== undefined && typeof durable !== 'boolean') {
      throw new InvalidArgumentError('durable', 'a boolean', durable);
    }
    if (cwd !== undefined && (typeof cwd !== 'string' || cwd === '' || cwd.includes('\0'))) {
      throw new InvalidArgumentError('cwd', 'a non-empty path without NUL characters', cwd);
    }
    if (
      timeoutMs !== undefined &&
      (typeof timeoutMs !== 'number' ||
        !Number.isSafeInteger(timeoutMs) ||
        timeoutMs < 1 ||
        timeoutMs > MAX_TIMER_DELAY_MS)
    ) {
      throw new InvalidTimeoutError('timeoutMs', timeoutMs, MAX_TIMER_DELAY_MS);
    }
    if (id !== undefined && (typeof id !== 'string' || id === '')) {
      throw new InvalidArgumentError('id', 'a non-empty string', id);
    }
    if (
      workspace !== undefined &&
      (typeof workspace !== 'string' || workspace === '' || workspace.includes('\0'))
    ) {
      throw new InvalidArgumentError('workspace', 'a non-empty path without NUL characters', workspace);
    }
    if (limitGroup !== undefined && typeof limitGroup !== 'string') {
      throw new InvalidArgumentError('limitGroup', 'a string', limitGroup);
    }
    const sandbox =
      request.sandbox === undefined ? this.#options.sandbox : resolveSandbox(request.sandbox, 'sandbox');
    if (cwd !== undefined) checkPathLength('cwd', cwd);
    if (workspace !== undefined) checkPathLength('workspace', workspace);
    const environment = copyEnvironment(env ?? process.env);
    const directory = resolvePath(cwd ?? process.cwd());
    checkPathLength('cwd', directory);
    if (durable === true && sandbox?.profile === 'workspace-write') {
      this.#checkDurableDirectory(workspace === undefined ? directory : resolvePath(workspace));
    }
    const resolved: ResolvedCommand = Object.freeze({
      id: id ?? `process-${++this.#sequence}`,
      command,
      cwd: directory,
      env: environment,
      shell: this.#shellPath(environment.PATH),
      timeoutMs,
      durable: durable === true,
      sandbox,
      workspace: workspace === undefined ? directory : checkedPath('workspace', resolvePath(workspace)),
    });
    this.#resolved.add(resolved);
    if (limitGroup !== undefined) this.#limitGroups.set(resolved, limitGroup);
    return resolved;
  }

  /** Refuses a durable directory the confined command could write (inside its writable workspace). */
  #checkDurableDirectory(workspace: string): void {
    const directory = this.#durableDirectory.path ?? this.#options.outputDirectoryParent;
    const real = (path: string) => {
      try {
        return realpathSync(path);
      } catch {
        return resolvePath(path);
      }
    };
    const inside = real(directory);
    const writable = real(workspace);
    if (inside === writable || inside.startsWith(writable.endsWith('/') ? writable : `${writable}/`)) {
      throw new DurableDirectoryInWorkspaceError(directory, workspace);
    }
  }

  /**
   * Starts a command in the background. Validation errors throw; failures to start (a missing working
   * directory or shell) do not: the handle stops at once with reason `spawn_error`.
   */
  start(request: CommandRequest | ResolvedCommand): CommandHandle {
    if (this.#disposal) throw new ExecutorDisposedError();
    const resolved = this.#resolved.has(request as ResolvedCommand)
      ? (request as ResolvedCommand)
      : this.resolve(request);
    if (this.#handles.has(resolved.id)) throw new ProcessIdInUseError(resolved.id);
    const tag = this.#options.tagEnvironment ? this.#tags.next() : undefined;
    const limiter = this.#limits?.limiter;
    if (limiter !== undefined && !resolved.durable) return this.#startLimited(resolved, limiter, tag);
    const handle = resolved.durable
      ? new DurableHandle({ kind: 'spawn', resolved, directory: this.#durableDirectory }, this.#options, tag)
      : new ProcessHandle(resolved, this.#options, this.#directory, tag);
    this.#track(handle);
    handle.start();
    return handle;
  }

  /** A command under the resource limits: its group made at the launch, removed before `stopped` settles. */
  #startLimited(
    resolved: ResolvedCommand,
    limiter: ResourceLimiter,
    tag: ReturnType<ProcessTags['next']> | undefined,
  ): CommandHandle {
    const limits = limiter.open(this.#limitGroups.get(resolved));
    const options = { ...this.#options, launcher: limitedLauncher(this.#options.launcher, limits) };
    const inner = new ProcessHandle(resolved, options, this.#directory, tag);
    const handle = new LimitedHandle(inner, limits);
    this.#track(handle);
    inner.start();
    return handle;
  }

  /**
   * Re-attaches to a durable command an earlier runtime started (its task record's facts): the handle
   * follows its output file from the model's cursor and sees it end through its status file. Throws
   * `PROCESS_ID_IN_USE` for an id this executor already knows.
   */
  attach(attachment: DurableAttachment): CommandHandle {
    if (this.#disposal) throw new ExecutorDisposedError();
    if (this.#handles.has(attachment.id)) throw new ProcessIdInUseError(attachment.id);
    const handle = new DurableHandle({ kind: 'attach', attachment }, this.#options, undefined);
    this.#track(handle);
    handle.start();
    return handle;
  }

  #track(handle: CommandHandle): void {
    this.#handles.set(handle.id, handle);
    this.#live.add(handle);
    const done = () => this.#live.delete(handle);
    void handle.stopped.then(done);
    if (handle instanceof DurableHandle) void handle.detached.then(done);
  }

  /** Runs a command to its end; the handle is released (and its output file deleted) afterwards. */
  async run(request: CommandRequest, options: ForegroundRunOptions = {}): Promise<ForegroundRunResult> {
    const limit = options.outputLimitBytes ?? 30_000;
    if (!Number.isSafeInteger(limit) || limit < 1) {
      throw new InvalidArgumentError('outputLimitBytes', 'a positive integer', limit);
    }
    const handle = this.start(request);
    const facts = await handle.stopped;
    const rendered = handle.render(limit, options.stderrPrefix ?? DEFAULT_STDERR_PREFIX);
    await this.release(handle.id);
    return { facts, output: rendered.text, skippedBytes: rendered.skippedBytes };
  }

  /** Whether the executor knows a handle with this id (running, or stopped and not yet released). */
  has(id: string): boolean {
    return this.#handles.has(id);
  }

  get(id: string): CommandHandle | undefined {
    return this.#handles.get(id);
  }

  /** Every known handle, oldest first. */
  list(): CommandHandle[] {
    return [...this.#handles.values()];
  }

  /** A non-consuming view of a known handle's newest output (at most 8192 bytes). */
  peek(id: string, limitBytes = OUTPUT_SNAPSHOT_BYTES): OutputSnapshot | undefined {
    return this.#handles.get(id)?.snapshot(limitBytes);
  }

  /**
   * Forgets a handle: cancels it if it still runs, waits for it to stop, deletes its output file.
   * Call it when nobody can read the output any more (the owning task was forgotten).
   */
  async release(id: string): Promise<void> {
    const handle = this.#handles.get(id);
    if (!handle) return;
    this.#handles.delete(id);
    // A detached durable command runs on, and a later runtime reads its files.
    if (handle instanceof DurableHandle && handle.isDetached) return;
    handle.cancel('released');
    await handle.stopped;
    if (this.#options.keepOutputFiles) return;
    for (const file of [handle.outputFile, handle.statusFile]) {
      if (file !== undefined) this.#directory.removeFile(file);
    }
    // A re-attached command's files sit in an earlier runtime's durable directory: it goes once empty.
    if (handle.durable && handle.outputFile !== undefined) removeIfEmpty(dirname(handle.outputFile));
  }

  /**
   * Lets go of every durable command without stopping it (a clean exit of the runtime: they run on, and
   * a later runtime re-attaches to them).
   */
  detachDurable(): void {
    for (const handle of this.#live) if (handle instanceof DurableHandle) handle.detach();
  }

  /**
   * Stops every command, waits until each process tree is gone, then removes the output directory
   * (unless `keepOutputFiles`). Idempotent; `start` fails afterwards.
   */
  dispose(): Promise<void> {
    this.#disposal ??= this.#disposeNow();
    return this.#disposal;
  }

  async #disposeNow(): Promise<void> {
    // Durable commands outlive the executor: let go of them; stop the rest.
    this.detachDurable();
    const live = [...this.#live].filter((handle) => !(handle instanceof DurableHandle && handle.isDetached));
    for (const handle of live) handle.cancel('executor disposal');
    await Promise.all(live.map((handle) => handle.stopped));
    this.#handles.clear();
    if (this.#limits?.owned) this.#limits.limiter.dispose();
    this.#options.processSource.close?.();
    const durablePath = this.#durableDirectory.path;
    if (durablePath !== undefined) removeIfEmpty(durablePath);
    try {
      this.#directory.dispose(this.#options.keepOutputFiles);
    } catch (error) {
      this.#options.logger.warn('removing the output directory failed', {
        directory: this.#directory.path,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }

  /** Finds a bare shell name in PATH once per PATH value; spawning an absolute path skips the search. */
  #shellPath(pathVariable: string | undefined): string {
    const shell = this.#options.shell;
    if (shell.includes('/')) return isAbsolute(shell) ? shell : resolvePath(shell);
    const key = `${shell}\0${pathVariable ?? ''}`;
    let found = this.#shellPaths.get(key);
    if (found === undefined) {
      found = findOnPath(shell, pathVariable ?? '', { absoluteOnly: true }) ?? shell;
      if (this.#shellPaths.size > 64) this.#shellPaths.clear();
      this.#shellPaths.set(key, found);
    }
    return found;
  }
}

function copyEnvironment(
  env: Readonly<Record<string, string | undefined>>,
): Readonly<Record<string, string>> {
  // Node keeps only what a process environment can hold in process.env (it drops a name with `=` or an
  // empty one, and ends a value at NUL): its copy needs no checks. Each read of it is a call into the
  // runtime; listing the names once and reading each is cheaper than a spread.
  if (env === process.env) {
    const copy: Record<string, string> = {};
    for (const name of Object.keys(env)) copy[name] = env[name] as string;
    return Object.freeze(copy);
  }
  if (typeof env !== 'object' || env === null) throw new InvalidArgumentError('env', 'an object', env);
  const copy: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (
      typeof value !== 'string' ||
      value.includes('\0') ||
      name === '' ||
      name.includes('=') ||
      name.includes('\0')
    ) {
      throw new InvalidArgumentError(`env.${name}`, 'a string without NUL characters', value);
    }
    copy[name] = value;
  }
  return Object.freeze(copy);
}

/** Removes a directory if it is empty; anything else (not empty, gone) leaves it. */
function removeIfEmpty(path: string): void {
  try {
    rmdirSync(path);
  } catch {
    // Not empty, or already gone.
  }
}
