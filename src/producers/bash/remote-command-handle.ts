/**
 * A command running elsewhere (on a worker, through a `RemoteCommandLink` such as the Redis provider's
 * dispatcher), as the bash producer sees any command: the same consuming reads, snapshots and renderings
 * over the same in-memory window (fed from the command's output stream as the link mirrors it), the same
 * exit facts, settled once. `pid` and the process facts stay undefined: the process is on another
 * machine, and nothing here may ever signal a local process of that pid.
 */
import type { Clock } from '../../tasks/clock.js';
import type { TaskOutputChunk, TaskOutputStream } from '../../tasks/index.js';
import type { BashFacts } from './bash-facts.js';
import type { CommandHandle, CommandProcessFacts, OutputSnapshot } from './command-handle.js';
import type { OutputRead } from './command-output.js';
import { OUTPUT_SNAPSHOT_BYTES } from './executor-options.js';
import type { ExitFacts } from './exit-facts.js';
import { OutputWindow } from './output-window.js';
import type { ResolvedCommand } from './process-handle.js';
import { Utf8ChunkAligner } from './utf8-boundary.js';

/** What a remote command needs of whatever carries it: reading a range of its output, and a cancel. */
export interface RemoteCommandLink {
  readOutputRange(handle: RemoteCommandHandle, offset: number, maxBytes: number): Promise<TaskOutputChunk>;
  cancelJob(handle: RemoteCommandHandle, reason: string): Promise<void>;
}

/** The mirror's bounds and the clock, as the link's options give them. */
export interface RemoteCommandSettings {
  /** The newest output bytes kept in memory (the executor's `maxBufferedBytes`). */
  readonly maxBufferedBytes: number;
  /** The most one consuming read returns (the executor's `maxReadBytes`). */
  readonly maxReadBytes: number;
  readonly clock: Clock;
}

export class RemoteCommandHandle implements CommandHandle {
  readonly id: string;
  readonly command: string;
  readonly cwd: string;
  readonly startedAt: number;
  readonly durable: boolean;
  readonly statusFile = undefined;
  readonly pid = undefined;
  readonly outputFile = undefined;
  readonly stopped: Promise<ExitFacts>;
  readonly spawned: Promise<boolean>;
  readonly outputFileReady: Promise<string | undefined> = Promise.resolve(undefined);
  /** Resolves once `detach()` let go of a durable command (this runtime exits; the command runs on). */
  readonly detached: Promise<void>;
  #resolveDetached!: () => void;
  #isDetached = false;
  readonly #dispatcher: RemoteCommandLink;
  readonly #options: RemoteCommandSettings;
  #window: OutputWindow;
  readonly #aligner = new Utf8ChunkAligner();
  readonly #outputListeners = new Set<(outputBytes: number) => void>();
  readonly #detailListeners = new Set<(patch: Partial<BashFacts>) => void>();
  readonly #growListeners = new Set<() => void>();
  #resolveStopped!: (facts: ExitFacts) => void;
  #exit: ExitFacts | undefined;
  #timeoutMs: number | undefined;
  #cancelRequested = false;
  #worker: string | undefined;
  #file: string | undefined;
  /** When the dispatcher last heard of this command (an event, or its record read). */
  heardAt: number;
  /** Offset past the newest byte mirrored from the stream. */
  mirrorEnd = 0;
  wantedEnd = 0;
  streamRetainedFrom = 0;
  following: Promise<void> | undefined;
  collecting = false;
  dispatched: Promise<boolean> = Promise.resolve(false);
  dispatchedOk = false;
  undispatched = true;

  constructor(
    dispatcher: RemoteCommandLink,
    id: string,
    resolved: ResolvedCommand,
    options: RemoteCommandSettings,
    settings: { durable: boolean; startedAt?: number; readOffset?: number },
  ) {
    this.#dispatcher = dispatcher;
    this.#options = options;
    this.id = id;
    this.command = resolved.command;
    this.cwd = resolved.cwd;
    this.durable = settings.durable;
    this.#timeoutMs = resolved.timeoutMs;
    this.startedAt = settings.startedAt ?? options.clock.now();
    this.heardAt = options.clock.now();
    this.#window = new OutputWindow(options.maxBufferedBytes);
    if (settings.readOffset !== undefined && settings.readOffset > 0) {
      // Re-attached: the model read up to here; the mirror continues from there.
      this.#window.continueAt(settings.readOffset, settings.readOffset);
      this.mirrorEnd = settings.readOffset;
      this.wantedEnd = settings.readOffset;
    }
    this.detached = new Promise((resolve) => {
      this.#resolveDetached = resolve;
    });
    this.stopped = new Promise((resolve) => {
      this.#resolveStopped = resolve;
    });
    let resolveSpawned!: (spawned: boolean) => void;
    this.spawned = new Promise((resolve) => {
      resolveSpawned = resolve;
    });
    queueMicrotask(() => {
      void this.dispatched.then((ok) => {
        this.dispatchedOk = ok;
        this.undispatched = false;
        resolveSpawned(ok);
      });
    });
  }

  /** The worker that took it, once known. */
  get worker(): string | undefined {
    return this.#worker;
  }

  get taskLabel(): string {
    return `remote command ${this.id}`;
  }

  get outputBytes(): number {
    return this.#window.totalBytes;
  }

  get readOffset(): number {
    return this.#window.consumedBytes;
  }

  get running(): boolean {
    return this.#exit === undefined && !this.#isDetached;
  }

  get timeoutMs(): number | undefined {
    return this.#timeoutMs;
  }

  get exit(): ExitFacts | undefined {
    return this.#exit;
  }

  /** The stream's end as far as this runtime has mirrored it. */
  get streamEnd(): number {
    return this.mirrorEnd;
  }

  /** It runs on a worker: nothing here recognises its tree. */
  readonly tag = undefined;
  readonly bootId = undefined;

  processFacts(): CommandProcessFacts | undefined {
    return undefined;
  }

  async ensureOutputFile(): Promise<string | undefined> {
    return undefined;
  }

  read(limitBytes = this.#options.maxReadBytes): OutputRead {
    const slice = this.#window.read(Math.min(limitBytes, this.#options.maxReadBytes));
    return {
      text: slice.text,
      skippedBytes: slice.skippedBytes,
      outputBytes: this.outputBytes,
      outputFile: null,
    };
  }

  outputStream(): TaskOutputStream {
    const handle = this;
    return {
      get end() {
        return handle.mirrorEnd;
      },
      get retainedFrom() {
        return Math.min(handle.streamRetainedFrom, handle.mirrorEnd);
      },
      get location() {
        return handle.#worker === undefined ? undefined : `worker ${handle.#worker}`;
      },
      read: (offset, maxBytes) => this.#dispatcher.readOutputRange(this, offset, maxBytes),
      onGrow: (listener) => {
        this.#growListeners.add(listener);
        return () => this.#growListeners.delete(listener);
      },
    };
  }

  snapshot(limitBytes = OUTPUT_SNAPSHOT_BYTES): OutputSnapshot {
    const tail = this.#window.tail(Math.min(limitBytes, OUTPUT_SNAPSHOT_BYTES));
    return {
      text: tail.text,
      skippedBytes: tail.skippedBytes,
      outputBytes: this.outputBytes,
      outputFile: null,
      running: this.running,
    };
  }

  render(limitBytes: number, stderrPrefix: string): { text: string; skippedBytes: number } {
    const rendered = this.#window.render(limitBytes, stderrPrefix);
    return { text: rendered.text, skippedBytes: rendered.skippedBytes };
  }

  onOutput(listener: (outputBytes: number) => void): () => void {
    this.#outputListeners.add(listener);
    return () => this.#outputListeners.delete(listener);
  }

  onDetail(listener: (patch: Partial<BashFacts>) => void): () => void {
    this.#detailListeners.add(listener);
    // The job key is what a resumed runtime re-attaches a durable command by.
    listener({ remoteJob: this.id, ...(this.#worker === undefined ? {} : { worker: this.#worker }) });
    return () => this.#detailListeners.delete(listener);
  }

  /** Lets go of a durable command without stopping it (this runtime exits); its worker runs it on. */
  detach(): void {
    if (!this.durable || this.#exit !== undefined || this.#isDetached) return;
    this.#isDetached = true;
    this.#resolveDetached();
  }

  cancel(message?: string): void {
    if (this.#cancelRequested || this.#exit !== undefined || this.#isDetached) return;
    this.#cancelRequested = true;
    void this.#dispatcher.cancelJob(this, message ?? 'cancelled');
  }

  /** The worker enforces the deadline it was dispatched with; a later change is kept only as a fact. */
  setTimeout(timeoutMs: number | undefined): void {
    this.#timeoutMs = timeoutMs;
  }

  // ---------------------------------------------------------------- fed by the dispatcher

  markStarted(worker: string, file: string | undefined): void {
    if (this.#worker === worker && (file === undefined || file === this.#file)) return;
    this.#worker = worker;
    if (file) this.#file = file;
    const patch: Partial<BashFacts> = { worker, ...(file ? { workerOutputFile: file } : {}) };
    for (const listener of this.#detailListeners) listener(patch);
  }

  mirror(start: number, bytes: Buffer): void {
    if (this.#exit !== undefined || this.#isDetached) return;
    let piece = bytes;
    if (start + piece.length <= this.mirrorEnd) return;
    if (start < this.mirrorEnd) piece = piece.subarray(this.mirrorEnd - start);
    else if (start > this.mirrorEnd) {
      // The stream dropped bytes this runtime never mirrored: continue after the gap, reporting it skipped.
      const cursor = this.#window.consumedBytes;
      this.#aligner.flush((rest: Buffer) => this.#window.append(rest, false));
      this.#window = new OutputWindow(this.#options.maxBufferedBytes);
      this.#window.continueAt(start, cursor);
    }
    this.mirrorEnd = start + bytes.length;
    this.#aligner.push(piece, (aligned) => this.#window.append(aligned, false));
    for (const listener of this.#outputListeners) listener(this.outputBytes);
    for (const listener of this.#growListeners) listener();
  }

  settle(facts: ExitFacts): void {
    if (this.#exit !== undefined || this.#isDetached) return;
    this.#aligner.flush((rest: Buffer) => this.#window.append(rest, false));
    this.#exit = facts;
    for (const listener of this.#growListeners) listener();
    this.#resolveStopped(facts);
  }
}
