/**
 * A command's output: stdout and stderr merged on character boundaries into one stream, the newest bytes
 * kept in memory (with which came from stderr), the whole stream written to the output file, and the
 * file's cap enforced. Readers get consuming deltas, snapshots that consume nothing, or a rendering with
 * stderr lines marked.
 *
 * The output file is created when the first byte arrives, or when someone is about to show its path
 * (`ensureFile`): a command without output leaves no file behind, and a path is never shown before the
 * file exists.
 */
import { type OutputDirectory, type OutputFileWriter, outputFileStream } from '../../process/index.js';
import type { TaskOutputStream } from '../../tasks/index.js';
import { OUTPUT_SNAPSHOT_BYTES } from './executor-options.js';
import { OutputWindow } from './output-window.js';
import { completeUtf8Length, Utf8ChunkAligner } from './utf8-boundary.js';

export type OutputSource = 'stdout' | 'stderr';

export interface CommandOutputLimits {
  readonly maxBufferedBytes: number;
  readonly maxReadBytes: number;
  readonly maxOutputFileBytes: number;
  readonly spillHighWaterMarkBytes: number;
}

/** What the output asks of the process that feeds it. */
export interface CommandOutputEvents {
  /** The disk fell behind: stop reading the pipes until `resumeInput`. */
  pauseInput(): void;
  resumeInput(): void;
  /** More output arrived than the file may hold; everything past the cap is dropped. */
  limitExceeded(): void;
  /** The output file exists now. */
  fileCreated(path: string): void;
  /** The output file could not be created (`whileOpening`) or written. */
  fileFailed(error: Error, whileOpening: boolean): void;
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

export class CommandOutput {
  readonly #limits: CommandOutputLimits;
  readonly #events: CommandOutputEvents;
  readonly #window: OutputWindow;
  readonly #file: OutputFileWriter;
  readonly #aligners = { stdout: new Utf8ChunkAligner(), stderr: new Utf8ChunkAligner() };
  readonly #listeners = new Set<(outputBytes: number) => void>();
  #paused = false;

  /** Picks the output file's path in `directory` (throws when the directory cannot be created). */
  constructor(directory: OutputDirectory, limits: CommandOutputLimits, events: CommandOutputEvents) {
    this.#limits = limits;
    this.#events = events;
    this.#window = new OutputWindow(limits.maxBufferedBytes);
    this.#file = directory.newFile({
      maxBytes: limits.maxOutputFileBytes,
      highWaterMarkBytes: limits.spillHighWaterMarkBytes,
      // The window holds what the file holds, so the cap never cuts a character in two.
      cutAt: completeUtf8Length,
      onOpen: () => events.fileCreated(this.#file.path),
      onError: (error, whileOpening) => {
        this.#resume();
        events.fileFailed(error, whileOpening);
      },
    });
  }

  /** Where the output file is (or will be, once output arrives). */
  get path(): string {
    return this.#file.path;
  }

  get totalBytes(): number {
    return this.#window.totalBytes;
  }

  /** Bytes consuming reads have returned or passed over. */
  get consumedBytes(): number {
    return this.#window.consumedBytes;
  }

  /** The path of the output file once it exists. */
  get file(): string | undefined {
    return this.#file.opened ? this.#file.path : undefined;
  }

  /** The whole stream as its output file holds it, for observation cursors (nothing consumed). */
  stream(): TaskOutputStream {
    return outputFileStream(this.#file);
  }

  /** Creates the output file now if it does not exist yet; resolves with whether it exists. */
  ensureFile(): Promise<boolean> {
    return this.#file.open();
  }

  /** A chunk from one of the pipes, cut anywhere. */
  push(source: OutputSource, chunk: Buffer): void {
    this.#aligners[source].push(chunk, (piece) => this.#accept(piece, source === 'stderr'));
  }

  /** The pipes are closed: gives up any bytes held back for an unfinished character. */
  flush(): void {
    for (const source of ['stdout', 'stderr'] as const) {
      this.#aligners[source].flush((piece) => this.#accept(piece, source === 'stderr'));
    }
  }

  /** Writes what is queued and closes the file (a command without output has none); never rejects. */
  close(): Promise<void> {
    return this.#file.close();
  }

  /** Keeps in memory only what a reader may still ask for, and stops notifying listeners. */
  finish(): void {
    const { maxReadBytes } = this.#limits;
    this.#window.shrink(Math.max(OUTPUT_SNAPSHOT_BYTES, Math.min(this.#window.unreadBytes, maxReadBytes)));
    this.#listeners.clear();
  }

  /** Consuming read of the newest unread output (at most `limitBytes`, capped by `maxReadBytes`). */
  read(limitBytes: number): OutputRead {
    const slice = this.#window.read(Math.min(limitBytes, this.#limits.maxReadBytes));
    return {
      text: slice.text,
      skippedBytes: slice.skippedBytes,
      outputBytes: this.#window.totalBytes,
      outputFile: this.file ?? null,
    };
  }

  /** Non-consuming view of the newest output, at most 8192 bytes. */
  tail(limitBytes: number): { text: string; skippedBytes: number } {
    const slice = this.#window.tail(Math.min(Math.max(0, limitBytes), OUTPUT_SNAPSHOT_BYTES));
    return { text: slice.text, skippedBytes: slice.skippedBytes };
  }

  /** The newest output with stderr lines prefixed; moves the consuming cursor to the end. */
  render(limitBytes: number, stderrPrefix: string): { text: string; skippedBytes: number } {
    const slice = this.#window.render(limitBytes, stderrPrefix);
    this.#window.consumeAll();
    return { text: slice.text, skippedBytes: slice.skippedBytes };
  }

  onOutput(listener: (outputBytes: number) => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  #accept(piece: Buffer, fromStderr: boolean): void {
    if (this.#file.full) return;
    const taken = this.#file.write(piece);
    if (taken > 0) {
      this.#window.append(taken === piece.length ? piece : piece.subarray(0, taken), fromStderr);
      if (this.#file.blocked) this.#pause();
      const total = this.#window.totalBytes;
      for (const listener of this.#listeners) listener(total);
    }
    if (this.#file.full) this.#events.limitExceeded();
  }

  #pause(): void {
    if (this.#paused) return;
    this.#paused = true;
    this.#events.pauseInput();
    this.#file.onDrain(() => this.#resume());
  }

  #resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    this.#events.resumeInput();
  }
}
