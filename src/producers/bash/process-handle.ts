/**
 * One running command: a shell in its own session and process group, its merged output (bounded in
 * memory, complete in the output file), its deadline, and how it stopped. `stopped` settles once the
 * whole process tree is gone and the output file is closed; it never rejects.
 */
import type { ChildProcess } from 'node:child_process';
import { statSync } from 'node:fs';
import type { Readable } from 'node:stream';
import type { CancelTimer } from './clock.js';
import {
  OUTPUT_SNAPSHOT_BYTES,
  PROCESS_TAG_VARIABLE,
  type ResolvedExecutorOptions,
} from './executor-options.js';
import type { ExitFacts, StopReason } from './exit-facts.js';
import type { OutputDirectory } from './output-directory.js';
import { OutputSpill } from './output-spill.js';
import { OutputWindow } from './output-window.js';
import { type TerminationReport, TreeTerminator } from './process-terminator.js';
import type { EnvironmentTag } from './process-tree.js';
import { completeUtf8Length, Utf8ChunkAligner } from './utf8-boundary.js';

/** A command with every default filled in, ready to start. */
export interface ResolvedCommand {
  readonly id: string;
  readonly command: string;
  /** Absolute working directory. */
  readonly cwd: string;
  /** The complete environment the shell gets (plus the process tag, when tagging is on). */
  readonly env: Readonly<Record<string, string>>;
  /** The shell executable (a path when it was found in PATH). */
  readonly shell: string;
  /** Kill with reason `timed_out` this long after the start; undefined: no deadline. */
  readonly timeoutMs: number | undefined;
}

/** A consuming read: the newest unread output, at most the read limit. */
export interface OutputRead {
  readonly text: string;
  /** Unread bytes that were passed over (they fell out of memory or exceeded the limit). */
  readonly skippedBytes: number;
  /** Total output bytes so far. */
  readonly outputBytes: number;
  readonly outputFile: string | null;
}

/** A non-consuming view for UIs: the newest output, at most 8192 bytes. */
export interface OutputSnapshot {
  readonly text: string;
  /** Bytes before `text` that the snapshot leaves out. */
  readonly skippedBytes: number;
  readonly outputBytes: number;
  readonly outputFile: string | null;
  readonly running: boolean;
}

type Source = 'stdout' | 'stderr';

export class ProcessHandle {
  readonly id: string;
  readonly command: string;
  readonly cwd: string;
  readonly startedAt: number;
  readonly #options: ResolvedExecutorOptions;
  readonly #directory: OutputDirectory;
  readonly #resolved: ResolvedCommand;
  readonly #window: OutputWindow;
  readonly #aligners = { stdout: new Utf8ChunkAligner(), stderr: new Utf8ChunkAligner() };
  readonly #outputListeners = new Set<(outputBytes: number) => void>();
  readonly #tag: EnvironmentTag | undefined;
  #outputFile: string | undefined;
  #spill: OutputSpill | undefined;
  #streams: Readable[] = [];
  #pid: number | undefined;
  #terminator: TreeTerminator | undefined;
  #reason: StopReason | undefined;
  #cancelMessage: string | undefined;
  #error: { message: string; code: string | null } | undefined;
  #exitCode: number | null = null;
  #signal: NodeJS.Signals | null = null;
  #leaderExited = false;
  #capped = false;
  #paused = false;
  #timeoutMs: number | undefined;
  #lastActivity = 0;
  #processRunning = false;
  #fileOpen = false;
  #cancelTimeout: CancelTimer | undefined;
  #facts: ExitFacts | undefined;
  #resolveStopped!: (facts: ExitFacts) => void;
  #resolveSpawned!: (spawned: boolean) => void;
  #streamsClosed!: Promise<void>;
  /** Resolves with true once the shell runs, false when it could not be started. */
  readonly spawned: Promise<boolean>;
  /** Resolves once the command and every process it left are gone and the output file is closed. */
  readonly stopped: Promise<ExitFacts>;

  constructor(
    resolved: ResolvedCommand,
    options: ResolvedExecutorOptions,
    directory: OutputDirectory,
    tag: string | undefined,
  ) {
    this.id = resolved.id;
    this.command = resolved.command;
    this.cwd = resolved.cwd;
    this.#resolved = resolved;
    this.#options = options;
    this.#directory = directory;
    this.#window = new OutputWindow(options.maxBufferedBytes);
    this.startedAt = options.clock.now();
    this.#tag = tag === undefined ? undefined : { name: PROCESS_TAG_VARIABLE, value: tag };
    this.spawned = new Promise((resolve) => {
      this.#resolveSpawned = resolve;
    });
    this.stopped = new Promise((resolve) => {
      this.#resolveStopped = resolve;
    });
  }

  get pid(): number | undefined {
    return this.#pid;
  }

  /** Absolute path of the output file (created before the shell starts). */
  get outputFile(): string | undefined {
    return this.#outputFile;
  }

  get outputBytes(): number {
    return this.#window.totalBytes;
  }

  /** True until `stopped` settles. */
  get running(): boolean {
    return this.#facts === undefined;
  }

  /** The current deadline, in milliseconds after the start; undefined: none. */
  get timeoutMs(): number | undefined {
    return this.#timeoutMs;
  }

  get exit(): ExitFacts | undefined {
    return this.#facts;
  }

  /**
   * Starts the shell. Called once by the executor; failures become a `spawn_error` stop, never a throw.
   * The output file is created off the main thread while the shell starts; `spawned` waits for both.
   */
  start(): void {
    const options = this.#options;
    let path: string;
    try {
      path = this.#directory.newPath();
    } catch (error) {
      this.#failToStart('could not create the output directory', error);
      return;
    }
    this.#outputFile = path;
    const spill = new OutputSpill(path, options.spillHighWaterMarkBytes, (error) => this.#onFileError(error));
    this.#spill = spill;
    this.#directory.open(path, (error, fd) => {
      if (error) {
        spill.failToOpen(error);
        return;
      }
      spill.attach(fd);
      this.#fileOpen = true;
      this.#checkStarted();
    });
    let child: ChildProcess;
    try {
      const env = this.#tag
        ? { ...this.#resolved.env, [this.#tag.name]: this.#tag.value }
        : this.#resolved.env;
      child = options.spawn(this.#resolved.shell, ['-c', this.command], {
        cwd: this.cwd,
        env,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (error) {
      this.#failToStart(this.#diagnoseSpawnFailure(error), error);
      return;
    }
    child.on('error', (error) => this.#onChildError(error));
    this.#streams = [child.stdout, child.stderr].filter((stream): stream is Readable => stream !== null);
    for (const stream of this.#streams) {
      stream.on('error', (error) => {
        options.logger.warn('reading a command pipe failed', { id: this.id, error: error.message });
      });
    }
    let open = this.#streams.length;
    this.#streamsClosed = new Promise<void>((resolve) => {
      if (open === 0) resolve();
      for (const stream of this.#streams) {
        stream.once('close', () => {
          open -= 1;
          if (open === 0) resolve();
        });
      }
    });
    if (child.pid === undefined) return; // 'error' follows with the reason.
    this.#pid = child.pid;
    const root = options.processSource.read(child.pid);
    this.#terminator = new TreeTerminator({
      root: { pid: child.pid, startTime: root?.startTime ?? 0 },
      source: options.processSource,
      clock: options.clock,
      killGraceMs: options.killGraceMs,
      tag: this.#tag,
      rootAlive: () => !this.#leaderExited,
      newerPidsUntil: this.startedAt + 1000,
      logger: options.logger,
      ...(options.sendSignal ? { sendSignal: options.sendSignal } : {}),
    });
    child.stdout?.on('data', (chunk: Buffer) => this.#onData('stdout', chunk));
    child.stderr?.on('data', (chunk: Buffer) => this.#onData('stderr', chunk));
    child.once('spawn', () => {
      this.#processRunning = true;
      this.#checkStarted();
    });
    child.once('exit', (code, signal) => this.#onExit(code, signal));
    this.setTimeout(this.#resolved.timeoutMs);
  }

  /** Consuming read of the newest unread output (at most `limitBytes`, capped by `maxReadBytes`). */
  read(limitBytes = this.#options.maxReadBytes): OutputRead {
    const slice = this.#window.read(Math.min(limitBytes, this.#options.maxReadBytes));
    return {
      text: slice.text,
      skippedBytes: slice.skippedBytes,
      outputBytes: this.#window.totalBytes,
      outputFile: this.#outputFile ?? null,
    };
  }

  /** Non-consuming view of the newest output, at most 8192 bytes. */
  snapshot(limitBytes = OUTPUT_SNAPSHOT_BYTES): OutputSnapshot {
    const slice = this.#window.tail(Math.min(Math.max(0, limitBytes), OUTPUT_SNAPSHOT_BYTES));
    return {
      text: slice.text,
      skippedBytes: slice.skippedBytes,
      outputBytes: this.#window.totalBytes,
      outputFile: this.#outputFile ?? null,
      running: this.running,
    };
  }

  /**
   * The newest output (at most `limitBytes`) with each stderr line prefixed by `stderrPrefix`; moves the
   * consuming cursor to the end. Used for foreground results.
   */
  render(limitBytes: number, stderrPrefix: string): { text: string; skippedBytes: number } {
    const slice = this.#window.render(limitBytes, stderrPrefix);
    this.#window.consumeAll();
    return { text: slice.text, skippedBytes: slice.skippedBytes };
  }

  /** Calls `listener` with the total byte count each time output arrives. Returns an unsubscribe. */
  onOutput(listener: (outputBytes: number) => void): () => void {
    this.#outputListeners.add(listener);
    return () => {
      this.#outputListeners.delete(listener);
    };
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
    this.#cancelTimeout?.();
    this.#cancelTimeout = undefined;
    this.#timeoutMs = timeoutMs;
    if (timeoutMs === undefined || this.#leaderExited || this.#facts) return;
    const clock = this.#options.clock;
    const remaining = Math.max(0, this.startedAt + timeoutMs - clock.now());
    this.#cancelTimeout = clock.schedule(remaining, () => {
      this.#cancelTimeout = undefined;
      this.#requestStop('timed_out');
    });
  }

  #requestStop(reason: StopReason, message?: string): void {
    if (this.#facts) return;
    if (!this.#leaderExited) this.#reason ??= reason;
    if (message !== undefined) this.#cancelMessage ??= message;
    if (this.#terminator === undefined) return;
    void this.#terminator.terminate();
  }

  #onData(source: Source, chunk: Buffer): void {
    this.#lastActivity = this.#options.clock.now();
    this.#aligners[source].push(chunk, (piece) => this.#accept(piece, source === 'stderr'));
  }

  #accept(piece: Buffer, fromStderr: boolean): void {
    if (this.#capped) return;
    const room = this.#options.maxOutputFileBytes - this.#window.totalBytes;
    let bytes = piece;
    if (bytes.length > room) {
      bytes = bytes.subarray(0, completeUtf8Length(bytes, room));
      this.#capped = true;
    }
    if (bytes.length > 0) {
      this.#window.append(bytes, fromStderr);
      if (this.#spill && !this.#spill.write(bytes)) this.#pause();
      const total = this.#window.totalBytes;
      for (const listener of this.#outputListeners) listener(total);
    }
    if (this.#capped) this.#requestStop('output_limit');
  }

  #pause(): void {
    if (this.#paused) return;
    this.#paused = true;
    for (const stream of this.#streams) stream.pause();
    this.#spill?.onDrain(() => this.#resume());
  }

  #resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    this.#lastActivity = this.#options.clock.now();
    for (const stream of this.#streams) if (!stream.destroyed) stream.resume();
  }

  #onChildError(error: Error): void {
    if (this.#pid === undefined && !this.#facts) {
      for (const stream of this.#streams) stream.destroy();
      this.#failToStart(this.#diagnoseSpawnFailure(error), error);
      return;
    }
    this.#options.logger.warn('a command process reported an error', { id: this.id, error: error.message });
  }

  /** Names what was missing: the working directory or the shell (looked at only when a spawn failed). */
  #diagnoseSpawnFailure(error: unknown): string {
    const cwd = JSON.stringify(this.cwd);
    try {
      if (!statSync(this.cwd).isDirectory()) return `the working directory ${cwd} is not a directory`;
    } catch (problem) {
      return errnoOf(problem) === 'ENOENT'
        ? `the working directory ${cwd} does not exist`
        : `the working directory ${cwd} cannot be used`;
    }
    const shell = JSON.stringify(this.#resolved.shell);
    return errnoOf(error) === 'ENOENT' ? `the shell ${shell} was not found` : `could not start ${shell}`;
  }

  /** Both the process and its output file must be there before the command counts as started. */
  #checkStarted(): void {
    if (this.#processRunning && this.#fileOpen) this.#resolveSpawned(true);
  }

  #onFileError(error: Error): void {
    const options = this.#options;
    const opening = !this.#fileOpen;
    this.#error ??= {
      message: `${opening ? 'creating' : 'writing'} the output file failed: ${error.message}`,
      code: errnoOf(error),
    };
    this.#resume();
    if (opening) {
      // Output nobody could read must not run on: stop the command as a failed start.
      this.#resolveSpawned(false);
      if (!this.#leaderExited && !this.#facts) {
        this.#reason ??= 'spawn_error';
        if (this.#terminator) void this.#terminator.terminate();
      }
      return;
    }
    options.logger.warn('writing an output file failed; output is kept in memory only', {
      id: this.id,
      outputFile: this.#outputFile,
      error: error.message,
    });
  }

  #failToStart(message: string, error: unknown, code: string | null = errnoOf(error)): void {
    const detail = error instanceof Error ? error.message : String(error);
    this.#reason = 'spawn_error';
    this.#error = { message: `${message} (${detail})`, code };
    this.#resolveSpawned(false);
    const spill = this.#spill;
    void (spill ? spill.close() : Promise.resolve()).then(() => this.#settle(undefined));
  }

  #onExit(code: number | null, signal: NodeJS.Signals | null): void {
    this.#leaderExited = true;
    this.#exitCode = code;
    this.#signal = signal;
    this.#reason ??= 'completed';
    this.#cancelTimeout?.();
    this.#cancelTimeout = undefined;
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
    await this.#streamsClosedWithin(options.exitGraceMs);
    const terminator = this.#terminator;
    if (terminator && (options.killProcessGroupOnExit || terminator.terminating)) {
      report = await terminator.sweep();
      await this.#streamsDrained(options.killGraceMs);
    }
    for (const stream of this.#streams) stream.destroy();
    for (const source of ['stdout', 'stderr'] as const) {
      this.#aligners[source].flush((piece) => this.#accept(piece, source === 'stderr'));
    }
    await this.#spill?.close();
    this.#settle(report);
  }

  #streamsClosedWithin(milliseconds: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const cancel = this.#options.clock.schedule(milliseconds, resolve);
      void this.#streamsClosed.then(() => {
        cancel();
        resolve();
      });
    });
  }

  /**
   * Waits for the pipes to close while output keeps arriving (the pipe may still hold data, or the disk
   * may be draining it), giving up after `exitGraceMs` without output or `maxMs` in all.
   */
  #streamsDrained(maxMs: number): Promise<void> {
    const clock = this.#options.clock;
    const idleMs = this.#options.exitGraceMs;
    const deadline = clock.now() + maxMs;
    this.#lastActivity = Math.max(this.#lastActivity, clock.now());
    return new Promise<void>((resolve) => {
      let cancel: CancelTimer = () => {};
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        cancel();
        resolve();
      };
      const check = () => {
        const now = clock.now();
        const idleFor = now - this.#lastActivity;
        if (idleFor >= idleMs || now >= deadline) finish();
        else cancel = clock.schedule(Math.min(idleMs - idleFor, deadline - now), check);
      };
      void this.#streamsClosed.then(finish);
      check();
    });
  }

  #settle(report: TerminationReport | undefined): void {
    if (this.#facts) return;
    const options = this.#options;
    const reason = this.#reason ?? 'completed';
    const endedAt = options.clock.now();
    this.#window.shrink(
      Math.max(OUTPUT_SNAPSHOT_BYTES, Math.min(this.#window.unreadBytes, options.maxReadBytes)),
    );
    this.#outputListeners.clear();
    this.#facts = Object.freeze({
      reason,
      exitCode: this.#exitCode,
      signal: this.#signal,
      pid: this.#pid ?? null,
      outputBytes: this.#window.totalBytes,
      outputFile: this.#outputFile ?? null,
      escalated: report?.escalated ?? false,
      signalledProcesses: report?.signalled ?? 0,
      survivors: Object.freeze([...(report?.survivors ?? [])]),
      startedAt: this.startedAt,
      endedAt,
      error: this.#error?.message ?? null,
      errorCode: this.#error?.code ?? null,
      cancelMessage: this.#cancelMessage ?? null,
      timeoutMs: reason === 'timed_out' ? (this.#timeoutMs ?? null) : null,
      outputLimitBytes: reason === 'output_limit' ? options.maxOutputFileBytes : null,
    });
    this.#resolveStopped(this.#facts);
  }
}

function errnoOf(error: unknown): string | null {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' ? code : null;
}
