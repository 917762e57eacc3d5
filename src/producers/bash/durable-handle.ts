/**
 * One durable command: it runs in the durable wrapper (`durable-wrapper.ts`), writes its output straight
 * to its output file and has its exit status written by the wrapper, so it keeps running — and its end is
 * still known — when the runtime dies. The runtime follows the output file (`FileFollower`) into the same
 * bounded in-memory window a piped command has, so reads, snapshots and notification tails work alike.
 *
 * A handle is either started here (the wrapper is this runtime's child: its exit is seen at once) or
 * re-attached to a command an earlier runtime started (`attach`): then the runtime polls the status file
 * and the root's start time to see it end. `detach()` lets go of a running command without stopping it
 * (a clean runtime exit); `stopped` never settles for a detached handle.
 */
import { closeSync, constants, openSync } from 'node:fs';
import type { Readable } from 'node:stream';
import {
  type EnvironmentTag,
  FileFollower,
  isDead,
  type LaunchedProcess,
  LIFELINE_TAG_VARIABLE,
  type OutputDirectory,
  readFileRange,
  readStatusFile,
  type TerminationReport,
  TreeTerminator,
} from '../../process/index.js';
import type { CancelTimer } from '../../tasks/clock.js';
import type { TaskOutputStream } from '../../tasks/index.js';
import type { CommandHandle, CommandProcessFacts, OutputSnapshot } from './command-handle.js';
import { CommandLifecycle } from './command-lifecycle.js';
import type { OutputRead } from './command-output.js';
import { durableLaunchRequest } from './durable-wrapper.js';
import { OUTPUT_SNAPSHOT_BYTES, type ResolvedExecutorOptions } from './executor-options.js';
import type { ExitFacts, StopReason } from './exit-facts.js';
import { OutputWindow } from './output-window.js';
import { type ResolvedCommand, statusFileOf } from './process-handle.js';

/** What re-attaching needs: the facts a task record kept about a durable command. */
export interface DurableAttachment {
  readonly id: string;
  readonly command: string;
  readonly cwd: string;
  /** When the command started (epoch ms): deadlines and durations count from it. */
  readonly startedAt: number;
  readonly pid: number;
  /** The root's exact start time in clock ticks after boot. */
  readonly startTime: number;
  readonly bootId?: string | undefined;
  readonly tag?: EnvironmentTag | undefined;
  readonly outputFile: string;
  readonly statusFile: string;
  /** Bytes the model had read. */
  readonly readOffset: number;
}

const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/** Why a re-attached command's end is not known when its status file never appeared. */
const STATUS_NOT_CAPTURED =
  'it ended while no runtime watched it, and its exit status was not captured (its wrapper was killed)';

type Origin =
  | { readonly kind: 'spawn'; readonly resolved: ResolvedCommand; readonly directory: OutputDirectory }
  | { readonly kind: 'attach'; readonly attachment: DurableAttachment };

export class DurableHandle implements CommandHandle {
  readonly id: string;
  readonly command: string;
  readonly cwd: string;
  readonly startedAt: number;
  readonly durable = true;
  readonly #options: ResolvedExecutorOptions;
  readonly #window: OutputWindow;
  readonly #listeners = new Set<(outputBytes: number) => void>();
  #origin: Origin | undefined;
  readonly #tag: EnvironmentTag | undefined;
  #follower: FileFollower | undefined;
  #outputFile: string | undefined;
  #statusFile: string | undefined;
  #pid: number | undefined;
  #processFacts: CommandProcessFacts | undefined;
  #startedAfter = 0;
  #attached = false;
  #terminator: TreeTerminator | undefined;
  readonly #life: CommandLifecycle;
  #cancelPoll: CancelTimer | undefined;
  #finishing = false;
  #detached = false;
  #resolveDetached!: () => void;
  readonly spawned: Promise<boolean>;
  readonly stopped: Promise<ExitFacts>;
  readonly outputFileReady: Promise<string | undefined>;
  /** Resolves once `detach()` let go of the command. */
  readonly detached: Promise<void>;

  constructor(origin: Origin, options: ResolvedExecutorOptions, tag: EnvironmentTag | undefined) {
    this.#origin = origin;
    this.#options = options;
    this.#window = new OutputWindow(options.maxBufferedBytes);
    if (origin.kind === 'spawn') {
      this.id = origin.resolved.id;
      this.command = origin.resolved.command;
      this.cwd = origin.resolved.cwd;
      this.#life = new CommandLifecycle(options.clock);
      this.#tag = tag;
    } else {
      const attachment = origin.attachment;
      this.id = attachment.id;
      this.command = attachment.command;
      this.cwd = attachment.cwd;
      this.#life = new CommandLifecycle(options.clock, attachment.startedAt);
      this.#tag = attachment.tag;
    }
    this.startedAt = this.#life.startedAt;
    this.spawned = this.#life.spawned;
    this.stopped = this.#life.stopped;
    this.outputFileReady = this.#life.outputFileReady;
    this.detached = new Promise((resolve) => {
      this.#resolveDetached = resolve;
    });
  }

  get pid(): number | undefined {
    return this.#pid;
  }

  get tag(): EnvironmentTag | undefined {
    return this.#tag;
  }

  get bootId(): string | undefined {
    return this.#processFacts?.bootId ?? this.#options.processSource.bootId?.();
  }

  get outputFile(): string | undefined {
    return this.#outputFile;
  }

  get statusFile(): string | undefined {
    return this.#statusFile;
  }

  get outputBytes(): number {
    return this.#window.totalBytes;
  }

  get readOffset(): number {
    return this.#window.consumedBytes;
  }

  get running(): boolean {
    return this.#life.facts === undefined && !this.#detached;
  }

  get timeoutMs(): number | undefined {
    return this.#life.timeoutMs;
  }

  get exit(): ExitFacts | undefined {
    return this.#life.facts;
  }

  /** True once `detach()` let go of the command. */
  get isDetached(): boolean {
    return this.#detached;
  }

  processFacts(): CommandProcessFacts | undefined {
    const pid = this.#pid;
    if (pid === undefined) return undefined;
    if (this.#processFacts === undefined) {
      const source = this.#options.processSource;
      const entry = this.#life.leaderExited ? undefined : source.read(pid);
      this.#processFacts = Object.freeze({
        pid,
        startTime: entry !== undefined && entry.startTime >= this.#startedAfter ? entry.startTime : undefined,
        bootId: source.bootId?.(),
        tag: this.#tag,
      });
    }
    return this.#processFacts;
  }

  async ensureOutputFile(): Promise<string | undefined> {
    return this.#outputFile;
  }

  /** Starts the wrapper, or re-attaches to the command an earlier runtime started. Called once. */
  start(): void {
    const origin = this.#origin!;
    this.#origin = undefined;
    if (origin.kind === 'spawn') this.#spawn(origin.resolved, origin.directory);
    else this.#attach(origin.attachment);
  }

  read(limitBytes = this.#options.maxReadBytes): OutputRead {
    this.#pull();
    const slice = this.#window.read(Math.min(limitBytes, this.#options.maxReadBytes));
    return {
      text: slice.text,
      skippedBytes: slice.skippedBytes,
      outputBytes: this.#window.totalBytes,
      outputFile: this.#outputFile ?? null,
    };
  }

  snapshot(limitBytes = OUTPUT_SNAPSHOT_BYTES): OutputSnapshot {
    this.#pull();
    const slice = this.#window.tail(Math.min(Math.max(0, limitBytes), OUTPUT_SNAPSHOT_BYTES));
    return {
      text: slice.text,
      skippedBytes: slice.skippedBytes,
      outputBytes: this.outputBytes,
      outputFile: this.#outputFile ?? null,
      running: this.running,
    };
  }

  render(limitBytes: number, stderrPrefix: string): { text: string; skippedBytes: number } {
    this.#pull();
    const slice = this.#window.render(limitBytes, stderrPrefix);
    this.#window.consumeAll();
    return { text: slice.text, skippedBytes: slice.skippedBytes };
  }

  /** The output file as the command writes it; `end` is what this handle has seen of it so far. */
  outputStream(): TaskOutputStream | undefined {
    const path = this.#outputFile;
    if (path === undefined) return undefined;
    const handle = this;
    return {
      get end() {
        return handle.#seenBytes();
      },
      retainedFrom: 0,
      location: path,
      read: async (offset, maxBytes) => {
        const limit = Math.max(0, Math.min(maxBytes, this.#seenBytes() - offset));
        return { from: offset, bytes: await readFileRange(path, offset, limit) };
      },
      onGrow: (listener) => this.onOutput(() => listener()),
    };
  }

  /** Bytes of the output file read so far (its whole length, not what the model's cursor passed). */
  #seenBytes(): number {
    this.#pull();
    return this.#follower?.position ?? 0;
  }

  onOutput(listener: (outputBytes: number) => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  cancel(message?: string): void {
    this.#requestStop('cancelled', message);
  }

  setTimeout(timeoutMs: number | undefined): void {
    this.#life.setDeadline(timeoutMs, () => this.#requestStop('timed_out'), !this.#detached);
  }

  /**
   * Lets go of the command without stopping it (the runtime exits cleanly; the command runs on and a
   * later runtime re-attaches to it). Idempotent; nothing once the command has ended.
   */
  detach(): void {
    if (this.#life.facts || this.#detached || this.#finishing) return;
    this.#detached = true;
    this.#cancelPoll?.();
    this.#life.clearDeadline();
    this.#follower?.close();
    this.#listeners.clear();
    this.#resolveDetached();
  }

  // ------------------------------------------------------------------ starting

  #spawn(resolved: ResolvedCommand, directory: OutputDirectory): void {
    const options = this.#options;
    let outputFile: string;
    try {
      outputFile = directory.newPath();
      // Created here, exclusively and private; the wrapper only appends to it.
      closeSync(openSync(outputFile, CREATE_FLAGS, 0o600));
    } catch (error) {
      this.#failToStart('could not create the output file', error);
      return;
    }
    this.#outputFile = outputFile;
    this.#statusFile = statusFileOf(outputFile);
    this.#follower = new FileFollower(outputFile, { maxBytes: options.maxOutputFileBytes });
    this.#life.outputFileIs(outputFile);
    // A durable tree carries no lifeline tag, inherited or not: the lifeline leaves it alone.
    const env: Record<string, string> = { ...resolved.env };
    delete env[LIFELINE_TAG_VARIABLE];
    this.#startedAfter = options.processSource.clockTicks();
    let child: LaunchedProcess;
    try {
      child = options.launcher.launch(
        durableLaunchRequest({
          shell: resolved.shell,
          command: resolved.command,
          cwd: resolved.cwd,
          env,
          tag: this.#tag,
          outputFile,
          statusFile: this.#statusFile!,
          sandbox: resolved.sandbox,
          workspace: resolved.workspace,
        }),
      );
    } catch (error) {
      this.#failToStart('could not start the durable wrapper', error);
      return;
    }
    child.on('error', (error) => {
      if (this.#pid === undefined && !this.#life.facts)
        this.#failToStart('could not start the durable wrapper', error);
    });
    // The wrapper sends its own output to the file; its pipes only close.
    for (const stream of [child.stdout, child.stderr]) drain(stream);
    const begin = (pid: number) => {
      this.#pid = pid;
      this.#terminator = this.#newTerminator(
        { pid, startTime: this.#startedAfter },
        () => !this.#life.leaderExited,
        this.startedAt + 1000,
      );
      child.once('exit', (code, signal) => this.#rootEnded(code, signal));
      this.#schedulePoll();
    };
    // Launches are synchronous: without a pid now, 'error' follows with the reason.
    if (child.pid !== undefined) {
      begin(child.pid);
      child.once('spawn', () => this.#life.spawnedAs(true));
    }
    this.setTimeout(resolved.timeoutMs);
  }

  #attach(attachment: DurableAttachment): void {
    this.#attached = true;
    this.#pid = attachment.pid;
    this.#outputFile = attachment.outputFile;
    this.#statusFile = attachment.statusFile;
    this.#processFacts = Object.freeze({
      pid: attachment.pid,
      startTime: attachment.startTime,
      bootId: attachment.bootId,
      tag: attachment.tag,
    });
    const maxBytes = this.#options.maxOutputFileBytes;
    const probe = new FileFollower(attachment.outputFile, { maxBytes });
    const size = Math.min(probe.size() ?? 0, maxBytes);
    probe.close();
    // Memory holds the newest bytes; what the model has not read and memory cannot hold counts as skipped.
    const from = Math.max(Math.min(attachment.readOffset, size), size - this.#options.maxBufferedBytes);
    this.#window.continueAt(from, attachment.readOffset);
    this.#follower = new FileFollower(attachment.outputFile, { from, maxBytes });
    const source = this.#options.processSource;
    const root = { pid: attachment.pid, startTime: attachment.startTime };
    this.#terminator = this.#newTerminator(
      root,
      () => source.read(root.pid)?.startTime === root.startTime,
      0,
    );
    this.#life.outputFileIs(attachment.outputFile);
    this.#life.spawnedAs(true);
    this.#pull();
    this.#poll();
  }

  #newTerminator(
    root: { pid: number; startTime: number },
    rootAlive: () => boolean,
    newerPidsUntil: number,
  ): TreeTerminator {
    const options = this.#options;
    return new TreeTerminator({
      root,
      source: options.processSource,
      clock: options.clock,
      killGraceMs: options.killGraceMs,
      tag: this.#tag,
      rootAlive,
      newerPidsUntil,
      logger: options.logger,
      ...(options.sendSignal ? { sendSignal: options.sendSignal } : {}),
    });
  }

  #failToStart(message: string, error: unknown): void {
    this.#life.failedToStart(message, error);
    this.#settle(undefined);
  }

  // ------------------------------------------------------------------ running

  #schedulePoll(): void {
    if (this.#life.facts || this.#detached || this.#finishing) return;
    this.#cancelPoll = this.#options.clock.schedule(this.#options.durablePollMs, () => this.#poll());
  }

  #poll(): void {
    if (this.#life.facts || this.#detached || this.#finishing) return;
    this.#pull();
    // A re-attached root is no child of ours: it ended when its status is written or its pid is not it.
    if (this.#attached && !this.#life.leaderExited && this.#rootGone()) {
      this.#rootEnded();
      return;
    }
    this.#schedulePoll();
  }

  #rootGone(): boolean {
    if (this.#statusFile !== undefined && readStatusFile(this.#statusFile) !== undefined) return true;
    const facts = this.#processFacts!;
    const entry = this.#options.processSource.read(facts.pid);
    return entry === undefined || entry.startTime !== facts.startTime || isDead(entry);
  }

  /** Reads what the command appended to its file into memory; stops it at the output cap. */
  #pull(): void {
    const follower = this.#follower;
    if (follower === undefined || this.#detached) return;
    let grew = false;
    for (let chunk = follower.read(); chunk.length > 0; chunk = follower.read()) {
      this.#window.append(chunk, false);
      grew = true;
      if (chunk.length < 64 * 1024) break;
    }
    if (grew) for (const listener of [...this.#listeners]) listener(this.#window.totalBytes);
    if (follower.reachedCap()) this.#requestStop('output_limit');
  }

  #requestStop(reason: StopReason, message?: string): void {
    if (this.#detached || !this.#life.requestStop(reason, message)) return;
    void this.#terminator?.terminate();
  }

  /** The wrapper ended (its code or signal when it was our child; a re-attached root's are not known). */
  #rootEnded(code?: number | null, signal?: NodeJS.Signals | null): void {
    if (this.#life.leaderExited) return;
    this.#life.leaderEnded(code, signal);
    this.#cancelPoll?.();
    if (this.#detached) return;
    this.#finishing = true;
    this.#finish().catch((error: unknown) => {
      this.#options.logger.warn('finishing a durable command failed', { id: this.id, error: String(error) });
      this.#settle(undefined);
    });
  }

  /** After the wrapper ended: stop what it left behind, read the rest of the file, read the status. */
  async #finish(): Promise<void> {
    const terminator = this.#terminator;
    let report: TerminationReport | undefined;
    if (terminator !== undefined && (this.#options.killProcessGroupOnExit || terminator.terminating)) {
      report = await terminator.sweep();
    }
    this.#finishing = false;
    this.#pull();
    this.#follower?.close();
    const recorded = this.#statusFile === undefined ? undefined : readStatusFile(this.#statusFile);
    if (recorded?.kind === 'exited') this.#life.recordedExit(recorded.exitCode);
    this.#settle(report);
  }

  #settle(report: TerminationReport | undefined): void {
    if (this.#life.facts) return;
    const options = this.#options;
    const unknown = this.#life.endUnknown;
    this.#terminator = undefined;
    this.#listeners.clear();
    this.#window.shrink(
      Math.max(OUTPUT_SNAPSHOT_BYTES, Math.min(this.#window.unreadBytes, options.maxReadBytes)),
    );
    this.#life.settle(report, {
      pid: this.#pid ?? null,
      outputBytes: this.outputBytes,
      outputFile: this.#outputFile ?? null,
      outputLimitBytes: options.maxOutputFileBytes,
      lost: unknown ? STATUS_NOT_CAPTURED : null,
    });
  }
}

function drain(stream: Readable | null): void {
  if (stream === null) return;
  stream.on('error', () => {});
  stream.resume();
}
