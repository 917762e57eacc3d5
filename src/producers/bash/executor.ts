/**
 * The bash executor: the seam between Errand and the OS. `resolve` fills in a command's defaults,
 * `start` runs it in the background and returns its handle, `run` runs it in the foreground to the end.
 * The executor knows every handle it started until it is released; disposing it stops every command,
 * waits for them, and removes the private output directory.
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, isAbsolute, join, resolve as resolvePath } from 'node:path';
import { OutputDirectory, ProcessTags, resolveSandbox, type SandboxSetting } from '../../process/index.js';
import { InvalidArgumentError, InvalidTimeoutError } from '../../tasks/index.js';
import { ExecutorDisposedError, ProcessIdInUseError } from './errors.js';
import {
  type BashExecutorOptions,
  OUTPUT_SNAPSHOT_BYTES,
  PROCESS_TAG_VARIABLE,
  type ResolvedExecutorOptions,
  resolveExecutorOptions,
} from './executor-options.js';
import type { ExitFacts } from './exit-facts.js';
import { type OutputSnapshot, ProcessHandle, type ResolvedCommand } from './process-handle.js';

/** The longest deadline a timer can express. */
export const MAX_COMMAND_TIMEOUT_MS = 2_147_483_647;

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
  /** The sandbox this command runs in (see `BashExecutorOptions.sandbox`). Default: the executor's. */
  readonly sandbox?: SandboxSetting;
  /**
   * Where `workspace-write` allows writes: the session's working directory, whatever `cwd` the command
   * asked for. Relative paths resolve against the runtime's cwd. Default: the command's `cwd`.
   */
  readonly workspace?: string;
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

export class BashExecutor {
  readonly #options: ResolvedExecutorOptions;
  readonly #directory: OutputDirectory;
  readonly #handles = new Map<string, ProcessHandle>();
  readonly #live = new Set<ProcessHandle>();
  readonly #resolved = new WeakSet<ResolvedCommand>();
  readonly #shellPaths = new Map<string, string>();
  #sequence = 0;
  readonly #tags = new ProcessTags(PROCESS_TAG_VARIABLE);
  #disposal: Promise<void> | undefined;

  constructor(options: BashExecutorOptions = {}) {
    this.#options = resolveExecutorOptions(options);
    this.#directory = new OutputDirectory('errand-bash-', this.#options.outputDirectoryParent);
  }

  /** The effective options (defaults filled in). */
  get options(): ResolvedExecutorOptions {
    return this.#options;
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
    const { command, cwd, env, timeoutMs, id, workspace } = request;
    if (typeof command !== 'string' || command.trim() === '' || command.includes('\0')) {
      throw new InvalidArgumentError('command', 'a non-empty string without NUL characters', command);
    }
    if (cwd !== undefined && (typeof cwd !== 'string' || cwd === '' || cwd.includes('\0'))) {
      throw new InvalidArgumentError('cwd', 'a non-empty path without NUL characters', cwd);
    }
    if (
      timeoutMs !== undefined &&
      (typeof timeoutMs !== 'number' ||
        !Number.isSafeInteger(timeoutMs) ||
        timeoutMs < 1 ||
        timeoutMs > MAX_COMMAND_TIMEOUT_MS)
    ) {
      throw new InvalidTimeoutError('timeoutMs', timeoutMs, MAX_COMMAND_TIMEOUT_MS);
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
    const sandbox =
      request.sandbox === undefined ? this.#options.sandbox : resolveSandbox(request.sandbox, 'sandbox');
    const environment = copyEnvironment(env ?? process.env);
    const directory = resolvePath(cwd ?? process.cwd());
    const resolved: ResolvedCommand = Object.freeze({
      id: id ?? `process-${++this.#sequence}`,
      command,
      cwd: directory,
      env: environment,
      shell: this.#shellPath(environment.PATH),
      timeoutMs,
      sandbox,
      workspace: workspace === undefined ? directory : resolvePath(workspace),
    });
    this.#resolved.add(resolved);
    return resolved;
  }

  /**
   * Starts a command in the background. Validation errors throw; failures to start (a missing working
   * directory or shell) do not: the handle stops at once with reason `spawn_error`.
   */
  start(request: CommandRequest | ResolvedCommand): ProcessHandle {
    if (this.#disposal) throw new ExecutorDisposedError();
    const resolved = this.#resolved.has(request as ResolvedCommand)
      ? (request as ResolvedCommand)
      : this.resolve(request);
    if (this.#handles.has(resolved.id)) throw new ProcessIdInUseError(resolved.id);
    const tag = this.#options.tagEnvironment ? this.#tags.next() : undefined;
    const handle = new ProcessHandle(resolved, this.#options, this.#directory, tag);
    this.#handles.set(resolved.id, handle);
    this.#live.add(handle);
    void handle.stopped.then(() => this.#live.delete(handle));
    handle.start();
    return handle;
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

  get(id: string): ProcessHandle | undefined {
    return this.#handles.get(id);
  }

  /** Every known handle, oldest first. */
  list(): ProcessHandle[] {
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
    handle.cancel('released');
    await handle.stopped;
    if (handle.outputFile !== undefined && !this.#options.keepOutputFiles) {
      this.#directory.removeFile(handle.outputFile);
    }
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
    const live = [...this.#live];
    for (const handle of live) handle.cancel('executor disposal');
    await Promise.all(live.map((handle) => handle.stopped));
    this.#handles.clear();
    this.#options.processSource.close?.();
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
      found = shell;
      for (const directory of (pathVariable ?? '').split(delimiter)) {
        if (directory === '') continue;
        const candidate = join(directory, shell);
        try {
          accessSync(candidate, constants.X_OK);
          found = candidate;
          break;
        } catch {
          // Not here.
        }
      }
      if (this.#shellPaths.size > 64) this.#shellPaths.clear();
      this.#shellPaths.set(key, found);
    }
    return found;
  }
}

function copyEnvironment(
  env: Readonly<Record<string, string | undefined>>,
): Readonly<Record<string, string>> {
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
