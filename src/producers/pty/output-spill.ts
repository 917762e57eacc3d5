/**
 * The raw output of a pty program, spilled to its private file with a size cap. Writes are queued on a
 * stream; `pendingBytes` lets the producer pause the terminal instead of buffering without bound.
 */
import type { WriteStream } from 'node:fs';
import type { Logger } from '../../tasks/index.js';
import type { OutputFile } from './output-directory.js';

export class OutputSpill {
  readonly path: string;
  readonly #stream: WriteStream;
  readonly #maxBytes: number;
  readonly #logger: Logger;
  #bytes = 0;
  #pending = 0;
  readonly #listeners = new Set<() => void>();
  #closed: Promise<void> | undefined;
  #error: string | undefined;
  #exceeded = false;

  constructor(file: OutputFile, maxBytes: number, logger: Logger) {
    this.path = file.path;
    this.#maxBytes = maxBytes;
    this.#logger = logger;
    this.#stream = file.handle.createWriteStream({ highWaterMark: 256 * 1024 });
    this.#stream.on('error', (error: Error) => {
      if (this.#error !== undefined) return;
      this.#error = error.message;
      this.#logger.warn('pty output file write failed; the output file is incomplete', {
        outputFile: this.path,
        error: error.message,
      });
    });
  }

  /** Bytes written (or queued) to the file. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Queued bytes not yet on disk. */
  get pendingBytes(): number {
    return this.#pending;
  }

  /** The first write error, if one happened. */
  get error(): string | undefined {
    return this.#error;
  }

  /**
   * Appends a chunk; what goes past the cap is dropped. Returns false once output went past the cap
   * (reaching it exactly drops nothing), so the caller can stop the program.
   */
  append(chunk: Uint8Array): boolean {
    if (this.#closed !== undefined || this.#error !== undefined) return !this.#exceeded;
    const room = this.#maxBytes - this.#bytes;
    if (chunk.byteLength > room) this.#exceeded = true;
    const part = chunk.byteLength <= room ? chunk : chunk.subarray(0, room);
    if (part.byteLength > 0) {
      this.#bytes += part.byteLength;
      this.#pending += part.byteLength;
      this.#stream.write(part, () => {
        this.#pending -= part.byteLength;
        for (const listener of [...this.#listeners]) listener();
      });
    }
    return !this.#exceeded;
  }

  /** Calls `listener` after each queued write completes. Returns an unsubscribe. */
  onProgress(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** Flushes and closes the file. Never rejects. Idempotent. */
  close(): Promise<void> {
    this.#closed ??= new Promise<void>((resolve) => {
      if (this.#stream.closed || this.#stream.destroyed) {
        resolve();
        return;
      }
      this.#stream.once('close', () => {
        this.#listeners.clear();
        resolve();
      });
      this.#stream.end();
    });
    return this.#closed;
  }
}
