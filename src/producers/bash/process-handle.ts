/**
 * One running command: a shell in its own session and process group, its merged output (bounded in
 * memory, complete in the output file), its deadline, and how it stopped. `stopped` settles once the
 * whole process tree is gone and the output file is closed; it never rejects.
 */
import type { Readable } from 'node:stream';
import {
  closedWithin,
  diagnoseSpawnFailure,
  drainedWithin,
  type EnvironmentTag,
  endingBegan,
  errnoOf,
  type LaunchedProcess,
  type LaunchRequest,
  type OutputDirectory,
  type Sandbox,
  statusFileBeside,
  type TerminationReport,
  TreeTerminator,
} from '../../process/index.js';
import type { TaskOutputStream } from '../../tasks/index.js';
import type { CommandHandle, CommandProcessFacts, OutputSnapshot } from './command-handle.js';
import { CommandLifecycle } from './command-lifecycle.js';
import { CommandOutput, type OutputRead } from './command-output.js';
import { OUTPUT_SNAPSHOT_BYTES, type ResolvedExecutorOptions } from './executor-options.js';
import type { ExitFacts, StopReason } from './exit-facts.js';

export type { OutputSnapshot } from './command-handle.js';
export type { OutputRead } from './command-output.js';

/** A command with every default filled in, ready to start. */
export interface ResolvedCommand {
  readonly id: string;
  readonly command: string;
  /** Absolute working directory. */
  readonly cwd: string;
  /** The complete environment the shell gets (the launcher adds the process tag, when tagging is on). */
  readonly env: Readonly<Record<string, string>>;
  /** The shell executable (a path when it was found in PATH). */
  readonly shell: string;
  /** Kill with reason `timed_out` this long after the start; undefined: no deadline. */
  readonly timeoutMs: number | undefined;
  /** Runs durably (see `DurableHandle`): output straight to its file, it outlives the runtime. */
  readonly durable: boolean;
  /** The sandbox the shell runs in; undefined: none. */
  readonly sandbox: Sandbox | undefined;
  /** Absolute path where `workspace-write` allows writes. */
  readonly workspace: string;
}

export class ProcessHandle implements CommandHandle {
  readonly id: string;
  readonly command: string;
  readonly cwd: string;
  readonly startedAt: number;
  readonly durable = false;
  readonly #options: ResolvedExecutorOptions;
  readonly #directory: OutputDirectory;
  /** Dropped once the shell is spawned: the environment is not kept for the handle's lifetime. */
  #resolved: ResolvedCommand | undefined;
  readonly #shell: string;
  /** The program actually launched: the shell, or bwrap around it. */
  #launched: string;
  readonly #tag: EnvironmentTag | undefined;
  #output: CommandOutput | undefined;
  #streams: Readable[] = [];
  #pid: number | undefined;
  /** A lower bound of the shell's start time, taken just before the spawn. */
  #startedAfter = 0;
  #facts_: CommandProcessFacts | undefined;
  #unwatch: (() => void) | undefined;
  /** Set from the leader's exit until the handle settles: it counts among the process's endings underway. */
  #endingSettled: (() => void) | undefined;
  #terminator: TreeTerminator | undefined;
  readonly #life: CommandLifecycle;
  #paused = false;
  #lastActivity = 0;
  #streamsClosed!: Promise<void>;
  /** Pipes not yet closed: none left means the wait for them is over before it starts. */
  #openStreams = 0;
  /** Resolves with true once the shell runs, false when it could not be started. */
  readonly spawned: Promise<boolean>;
  /** Resolves once the command and every process it left are gone and the output file is closed. */
  readonly stopped: Promise<ExitFacts>;
  /**
   * Resolves with the output file's path once it exists (the first output creates it), or undefined when
   * the command stopped without one.
   */
  readonly outputFileReady: Promise<string | undefined>;

  constructor(
    resolved: ResolvedCommand,
    options: ResolvedExecutorOptions,
    directory: OutputDirectory,
    tag: EnvironmentTag | undefined,
  ) {
    this.id = resolved.id;
    this.command = resolved.command;
    this.cwd = resolved.cwd;
    this.#resolved = resolved;
    this.#shell = resolved.shell;
    this.#launched = resolved.shell;
    this.#options = options;
    this.#directory = directory;
    this.#life = new CommandLifecycle(options.clock);
    this.startedAt = this.#life.startedAt;
    this.#tag = tag;
    this.spawned = this.#life.spawned;
    this.stopped = this.#life.stopped;
    this.outputFileReady = this.#life.outputFileReady;
  }

  get pid(): number | undefined {
    return this.#pid;
  }

  get tag(): EnvironmentTag | undefined {
    return this.#tag;
  }

  get bootId(): string | undefined {
    return this.#options.processSource.bootId?.();
  }

  /** Absolute path of the output file, once it exists (see `ensureOutputFile`). */
  get outputFile(): string | undefined {
    return this.#output?.file;
  }

  /**
   * Creates the output file now if the command has printed nothing yet, so its path can be shown
   * (a path is never shown before the file exists). Resolves with the path, or undefined when the
   * file cannot be created or the command stopped without output.
   */
  async ensureOutputFile(): Promise<string | undefined> {
    const created = (await this.#output?.ensureFile()) ?? false;
    return created ? this.#output?.file : undefined;
  }

  get outputBytes(): number {
    return this.#output?.totalBytes ?? 0;
  }

  get readOffset(): number {
    return this.#output?.consumedBytes ?? 0;
  }

  /**
   * Where it is recorded that the tree was stopped because its runtime was gone (by the lifeline, or by
   * a later runtime's start); nothing writes it while this runtime watches the command. Known from the
   * start, before the spawn is answered.
   */
  get statusFile(): string | undefined {
    return statusFileOf(this.#output?.path);
  }

  processFacts(): CommandProcessFacts | undefined {
    const pid = this.#pid;
    if (pid === undefined) return undefined;
    if (this.#facts_ === undefined) {
      const source = this.#options.processSource;
      // Read once: the start time never changes for a pid's lifetime, and the root is ours until reaped.
      const entry = this.#life.leaderExited ? undefined : source.read(pid);
      this.#facts_ = Object.freeze({
        pid,
        startTime: entry !== undefined && entry.startTime >= this.#startedAfter ? entry.startTime : undefined,
        bootId: source.bootId?.(),
        tag: this.#tag,
      });
    }
    return this.#facts_;
  }

  /** True until `stopped` settles. */
  get running(): boolean {
    return this.#life.facts === undefined;
  }

  /** The current deadline, in milliseconds after the start; undefined: none. */
  get timeoutMs(): number | undefined {
    return this.#life.timeoutMs;
  }

  get exit(): ExitFacts | undefined {
    return this.#life.facts;
  }

  /** Starts the shell. Called once by the executor; failures become a `spawn_error` stop, never a throw. */
  start(): void {
    const options = this.#options;
    try {
      this.#output = new CommandOutput(this.#directory, options, {
        pauseInput: () => this.#pause(),
        resumeInput: () => this.#resume(),
        limitExceeded: () => this.#requestStop('output_limit'),
        fileCreated: (file) => this.#life.outputFileIs(file),
        fileFailed: (error, whileOpening) => this.#onFileError(error, whileOpening),
      });
    } catch (error) {
      this.#failToStart('could not create the output directory', error);
      return;
    }
    const resolved = this.#resolved!;
    // A lower bound of the shell's start time, from the clock: reading /proc/<pid>/stat right after the
    // spawn would wait for the new process to finish exec.
    const startedAfter = options.processSource.clockTicks();
    this.#startedAfter = startedAfter;
    this.#resolved = undefined;
    const lifeline = options.lifeline;
    const tag = this.#tag;
    let child: LaunchedProcess;
    const command: LaunchRequest = {
      file: this.#shell,
      args: ['-c', this.command],
      cwd: this.cwd,
      // Every process of the tree carries the lifeline's tag, so the sidecar finds even untold ones; and
      // its own tag, which the launcher would add otherwise (one copy of the environment, not two).
      env:
        lifeline === undefined && tag === undefined
          ? resolved.env
          : {
              ...resolved.env,
              ...(lifeline === undefined ? {} : { [lifeline.tag.name]: lifeline.tag.value }),
              ...(tag === undefined ? {} : { [tag.name]: tag.value }),
            },
      tag,
    };
    // A pure rewrite of the request, so any launcher starts it the same way.
    const request = resolved.sandbox?.confine(command, resolved.workspace) ?? command;
    this.#launched = request.file;
    try {
      child = options.launcher.launch(request);
    } catch (error) {
      this.#failToStart(diagnoseSpawnFailure(this.cwd, request.file, error), error);
      return;
    }
    child.on('error', (error) => this.#onChildError(error));
    this.#streams = [child.stdout, child.stderr].filter((stream): stream is Readable => stream !== null);
    for (const stream of this.#streams) {
      stream.on('error', (error) => {
        options.logger.warn('reading a command pipe failed', { id: this.id, error: error.message });
      });
    }
    this.#openStreams = this.#streams.length;
    this.#streamsClosed = new Promise<void>((resolve) => {
      if (this.#openStreams === 0) resolve();
      for (const stream of this.#streams) {
        stream.once('close', () => {
          this.#openStreams -= 1;
          if (this.#openStreams === 0) resolve();
        });
      }
    });
    // Launches are synchronous: without a pid now, 'error' follows with the reason.
    this.#begin(child, startedAfter);
    child.once('spawn', () => this.#life.spawnedAs(true));
    this.setTimeout(resolved.timeoutMs);
  }

  /** Once the pid is known: the lifeline, the terminator, the pipes' readers and the exit. */
  #begin(child: LaunchedProcess, startedAfter: number): void {
    const options = this.#options;
    const lifeline = options.lifeline;
    if (child.pid === undefined || this.#life.facts) return;
    this.#pid = child.pid;
    // Told asynchronously (the lifeline batches its writes): nothing here waits for the sidecar, and the
    // lifeline's tag in the environment covers a runtime killed before the write.
    this.#unwatch = lifeline?.watch({
      pid: child.pid,
      startTime: startedAfter,
      tag: this.#tag,
      statusFile: statusFileOf(this.#output?.path),
    });
    this.#terminator = new TreeTerminator({
      root: { pid: child.pid, startTime: startedAfter },
      source: options.processSource,
      clock: options.clock,
      killGraceMs: options.killGraceMs,
      tag: this.#tag,
      rootAlive: () => !this.#life.leaderExited,
      newerPidsUntil: this.startedAt + 1000,
      logger: options.logger,
      ...(options.sendSignal ? { sendSignal: options.sendSignal } : {}),
    });
    child.stdout?.on('data', (chunk: Buffer) => this.#onData('stdout', chunk, child.stdout!));
    child.stderr?.on('data', (chunk: Buffer) => this.#onData('stderr', chunk, child.stderr!));
    child.once('exit', (code, signal) => this.#onExit(code, signal));
    // A stop requested before the pid was known (a cancel, a deadline of 0) is carried out now.
    if (this.#life.reason !== undefined) void this.#terminator.terminate();
  }

  /** Consuming read of the newest unread output (at most `limitBytes`, capped by `maxReadBytes`). */
  read(limitBytes = this.#options.maxReadBytes): OutputRead {
    return this.#output?.read(limitBytes) ?? { text: '', skippedBytes: 0, outputBytes: 0, outputFile: null };
  }

  /**
   * The merged stream as the output file holds it, for any number of non-consuming readers; undefined
   * when the output could not be set up (the command never started).
   */
  outputStream(): TaskOutputStream | undefined {
    return this.#output?.stream();
  }

  /** Non-consuming view of the newest output, at most 8192 bytes. */
  snapshot(limitBytes = OUTPUT_SNAPSHOT_BYTES): OutputSnapshot {
    const tail = this.#output?.tail(limitBytes) ?? { text: '', skippedBytes: 0 };
    return {
      ...tail,
      outputBytes: this.outputBytes,
      outputFile: this.outputFile ?? null,
      running: this.running,
    };
  }

  /**
   * The newest output (at most `limitBytes`) with each stderr line prefixed by `stderrPrefix`; moves the
   * consuming cursor to the end. Used for foreground results.
   */
  render(limitBytes: number, stderrPrefix: string): { text: string; skippedBytes: number } {
    return this.#output?.render(limitBytes, stderrPrefix) ?? { text: '', skippedBytes: 0 };
  }

  /** Calls `listener` with the total byte count each time output arrives. Returns an unsubscribe. */
  onOutput(listener: (outputBytes: number) => void): () => void {
    return this.#output?.onOutput(listener) ?? (() => {});
  }

  /** Requests termination of the whole tree. Synchronous and idempotent; `stopped` settles after. */
  cancel(message?: string): void {
    this.#requestStop('cancelled', message);
  }

  /**
   * Sets the deadline to `timeoutMs` after the start (undefined removes it). A deadline already past
   * expires at once; past the deadline the command is killed with reason `timed_out`.
   */
  setTimeout(timeoutMs: number | undefined): void {
    this.#life.setDeadline(timeoutMs, () => this.#requestStop('timed_out'));
  }

  #requestStop(reason: StopReason, message?: string): void {
    if (!this.#life.requestStop(reason, message) || this.#terminator === undefined) return;
    void this.#terminator.terminate();
  }

  #onData(source: 'stdout' | 'stderr', chunk: Buffer, stream: Readable): void {
    this.#lastActivity = this.#options.clock.now();
    this.#output?.push(source, chunk);
    // Node resumes a child's pipes once it exits; a pause for the disk holds until the disk caught up.
    if (this.#paused) stream.pause();
  }

  #pause(): void {
    if (this.#paused) return;
    this.#paused = true;
    for (const stream of this.#streams) stream.pause();
  }

  #resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    this.#lastActivity = this.#options.clock.now();
    for (const stream of this.#streams) if (!stream.destroyed) stream.resume();
  }

  #onChildError(error: Error): void {
    if (this.#pid === undefined && !this.#life.facts) {
      for (const stream of this.#streams) stream.destroy();
      this.#failToStart(diagnoseSpawnFailure(this.cwd, this.#launched, error), error);
      return;
    }
    this.#options.logger.warn('a command process reported an error', { id: this.id, error: error.message });
  }

  #onFileError(error: Error, opening: boolean): void {
    this.#life.noteError(
      `${opening ? 'creating' : 'writing'} the output file failed: ${error.message}`,
      errnoOf(error),
    );
    this.#options.logger.warn('the output file failed; output is kept in memory only', {
      id: this.id,
      path: this.#output?.path,
      error: error.message,
    });
  }

  #failToStart(message: string, error: unknown): void {
    this.#life.failedToStart(message, error);
    const output = this.#output;
    void (output ? output.close() : Promise.resolve()).then(() => this.#settle(undefined));
  }

  #onExit(code: number | null, signal: NodeJS.Signals | null): void {
    this.#endingSettled ??= endingBegan();
    this.#life.leaderEnded(code, signal);
    // The entry read while it ran (its process facts, a census) no longer describes the pid.
    if (this.#pid !== undefined) this.#options.processSource.forget?.(this.#pid);
    this.#finish().catch((error: unknown) => {
      this.#options.logger.warn('finishing a command failed', { id: this.id, error: String(error) });
      this.#settle(undefined);
    });
  }

  /**
   * After the shell exited: give its pipes a short grace, stop whatever it left behind (or was already
   * being stopped), then destroy the pipes. A grandchild holding a pipe never keeps the command open.
   */
  async #finish(): Promise<void> {
    const options = this.#options;
    let report: TerminationReport | undefined;
    // Usually the pipes closed before the exit was heard: no grace timer then.
    if (this.#openStreams > 0) await closedWithin(this.#streamsClosed, options.clock, options.exitGraceMs);
    const terminator = this.#terminator;
    const sweep = terminator !== undefined && (options.killProcessGroupOnExit || terminator.terminating);
    if (sweep) report = await terminator.sweep();
    // After a sweep the pipes may still hold output; without one they are read on only while output
    // waits for the disk (the pipes are paused then, and what they hold is still the command's).
    if ((sweep || this.#paused) && this.#openStreams > 0) {
      await drainedWithin(
        this.#streamsClosed,
        options.clock,
        () => this.#lastActivity,
        options.exitGraceMs,
        sweep ? options.killGraceMs : options.exitGraceMs,
        () => this.#paused,
      );
    }
    for (const stream of this.#streams) stream.destroy();
    this.#output?.flush();
    await this.#output?.close();
    this.#settle(report);
  }

  #settle(report: TerminationReport | undefined): void {
    if (this.#life.facts) return;
    this.#output?.finish();
    // A finished handle may be kept for reading a long time: hold on to nothing but its output.
    this.#streams = [];
    this.#terminator = undefined;
    this.#unwatch?.();
    this.#endingSettled?.();
    this.#life.settle(report, {
      pid: this.#pid ?? null,
      outputBytes: this.outputBytes,
      outputFile: this.outputFile ?? null,
      outputLimitBytes: this.#options.maxOutputFileBytes,
    });
  }
}

/** The exit-status file beside an output file, once its path is known. */
export function statusFileOf(outputPath: string | undefined): string | undefined {
  return outputPath === undefined ? undefined : statusFileBeside(outputPath);
}
