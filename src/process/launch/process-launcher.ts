/**
 * The spawn seam: how a producer starts a process whose output it reads through pipes. A launch puts the
 * process in its own session and process group (so its pid names the whole group), adds the tree's tag
 * to its environment, gives it `/dev/null` as stdin and pipes for stdout and stderr. The default launcher
 * spawns from this process onto real pipes where Errand's native helper is built (`stdio-pipes.ts`: a
 * command can open `/dev/stdout` and `/dev/stderr`), without a fork where it can (`native-spawn.ts`: a
 * fork's cost grows with this process's memory), else with `child_process.spawn`. These are the only
 * two ways a command starts, and both spawn from this process: no start ever waits on another process.
 * A confining wrapper (`Sandbox.confine`) rewrites the request instead of launching it.
 */
import type { ChildProcess, SpawnOptions } from 'node:child_process';
import { spawn as nodeSpawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import type { EnvironmentTag } from '../trees/process-tree.js';
import { nativeSpawnAvailable, spawnNative } from './native-spawn.js';
import { closeDescriptors, createStdioPipes, readEndStream, spawnOntoPipes } from './stdio-pipes.js';

/** What to start. The same request feeds every launcher (and a pseudo-terminal's spawn). */
export interface LaunchRequest {
  /** The program: an absolute path, or a name the launcher looks up in PATH. */
  readonly file: string;
  readonly args: readonly string[];
  /** Absolute working directory. */
  readonly cwd: string;
  /** The complete environment; nothing else is merged in but the tag. */
  readonly env: Readonly<Record<string, string>>;
  /** Put into the environment, so processes that leave the group are still found (see `scanTree`). */
  readonly tag?: EnvironmentTag | undefined;
}

/**
 * A launched process, as much of a `ChildProcess` as the producers use. `exit` means the process was
 * reaped: until then its pid (and so its group id) cannot name anything else.
 */
export interface LaunchedProcess {
  /** Undefined when the launch failed at once; `error` follows with the reason. */
  readonly pid?: number | undefined;
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
  on(event: 'error', listener: (error: Error) => void): this;
  once(event: 'spawn', listener: () => void): this;
  once(event: 'exit', listener: (code: number | null, signal: NodeJS.Signals | null) => void): this;
}

export interface ProcessLauncher {
  /**
   * Starts `request` in its own session and process group, synchronously: the pid is known when it
   * returns (or `error` follows on the next tick). May throw for a request it cannot even try (the caller
   * reports it as a failure to start); an operating system failure arrives as `error`.
   */
  launch(request: LaunchRequest): LaunchedProcess;
}

/** Starts a process the way `child_process.spawn` does; injectable to count or fail spawns in tests. */
export type Spawner = (file: string, args: readonly string[], options: SpawnOptions) => ChildProcess;

/** The environment a launch gives the process: the request's, plus the tag (unless it holds it already). */
export function launchEnvironment(request: LaunchRequest): Readonly<Record<string, string>> {
  const tag = request.tag;
  return tag === undefined || request.env[tag.name] === tag.value
    ? request.env
    : { ...request.env, [tag.name]: tag.value };
}

/**
 * The default launcher: spawns from this process, detached, its stdout and stderr real pipes (socket
 * pairs without the native helper, see `stdio-pipes.ts`). Without `spawn` it spawns without a fork where
 * the helper can (`native-spawn.ts`), else with `child_process.spawn`; a given `spawn` is always used.
 */
export function createSpawnLauncher(spawn?: Spawner): ProcessLauncher {
  return {
    launch: (request) => {
      if (spawn === undefined) {
        const launched = launchWithoutFork(request);
        if (launched !== undefined) return launched;
      }
      const { child, stdout, stderr, madeHere } = spawnOntoPipes(
        spawn ?? (nodeSpawn as Spawner),
        request.file,
        request.args,
        {
          cwd: request.cwd,
          env: launchEnvironment(request),
          detached: true,
        },
      );
      return madeHere ? new PipedProcess(child, stdout, stderr) : child;
    },
  };
}

type ExitListener = (code: number | null, signal: NodeJS.Signals | null) => void;

/** A child spawned onto pipes of ours: its events are the child's, its streams the pipes' read ends. */
class PipedProcess implements LaunchedProcess {
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
  readonly #child: ChildProcess;

  constructor(child: ChildProcess, stdout: Readable | null, stderr: Readable | null) {
    this.#child = child;
    this.stdout = stdout;
    this.stderr = stderr;
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  on(event: 'error', listener: (error: Error) => void): this {
    this.#child.on(event, listener);
    return this;
  }

  once(event: 'spawn', listener: () => void): this;
  once(event: 'exit', listener: (code: number | null, signal: NodeJS.Signals | null) => void): this;
  once(event: 'spawn' | 'exit', listener: (() => void) | ExitListener): this {
    if (event === 'spawn') this.#child.once('spawn', listener as () => void);
    else this.#child.once('exit', listener as ExitListener);
    return this;
  }
}

/**
 * `request` spawned without a fork onto pipes of ours, or undefined (nothing made, nothing spawned) when
 * it cannot be spawned that way: the helper is not there, or the file is not found on the PATH here.
 */
function launchWithoutFork(request: LaunchRequest): LaunchedProcess | undefined {
  if (!nativeSpawnAvailable()) return undefined;
  const pipes = createStdioPipes();
  if (pipes === undefined) return undefined;
  const { stdout: out, stderr: err } = pipes;
  const launched = new UnforkedProcess();
  let pid: number | undefined;
  try {
    pid = spawnNative(
      { ...request, env: launchEnvironment(request), stdout: out.write, stderr: err.write },
      (code, signal) => launched.exited(code, signal),
    );
  } catch (error) {
    // The spawn closed the write ends.
    closeDescriptors(out.read, err.read);
    launched.failed(error as Error);
    return launched;
  }
  if (pid === undefined) {
    closeDescriptors(out.write, err.write, out.read, err.read);
    return undefined;
  }
  launched.started(pid, readEndStream(out.read), readEndStream(err.read));
  return launched;
}

/**
 * A process spawned by `spawnNative`, with a ChildProcess's events: `spawn` (or `error` when it could not
 * run) on the next tick, as Node emits them, and `exit` once it was reaped.
 */
class UnforkedProcess extends EventEmitter implements LaunchedProcess {
  pid: number | undefined;
  stdout: Readable | null = null;
  stderr: Readable | null = null;

  started(pid: number, stdout: Readable, stderr: Readable): void {
    this.pid = pid;
    this.stdout = stdout;
    this.stderr = stderr;
    process.nextTick(() => this.emit('spawn'));
  }

  failed(error: Error): void {
    process.nextTick(() => this.emit('error', error));
  }

  exited(code: number | null, signal: NodeJS.Signals | null): void {
    this.emit('exit', code, signal);
  }
}
