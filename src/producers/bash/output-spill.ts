/**
 * Writes a command's whole output stream to its output file. `write` reports backpressure so the
 * caller can pause the child's pipes when the disk is slower than the command: memory stays bounded
 * by `highWaterMark` plus one chunk instead of growing with the output.
 */
import { createWriteStream, type WriteStream } from 'node:fs';

export class OutputSpill {
  readonly path: string;
  readonly #stream: WriteStream;
  #drainListeners: Array<() => void> = [];
  #error: Error | undefined;
  #closed: Promise<void> | undefined;
  #writtenBytes = 0;

  constructor(path: string, fd: number, highWaterMark: number, onError: (error: Error) => void) {
    this.path = path;
    this.#stream = createWriteStream(path, { fd, highWaterMark, autoClose: true });
    this.#stream.on('drain', () => this.#drained());
    this.#stream.on('error', (error) => {
      this.#error ??= error;
      onError(error);
      // Nobody waits for a drain that cannot come.
      this.#drained();
    });
  }

  /** The first write error, after which nothing more is written. */
  get error(): Error | undefined {
    return this.#error;
  }

  /** Bytes handed to the file (the file holds them once `close()` resolved). */
  get writtenBytes(): number {
    return this.#writtenBytes;
  }

  /** Queues `bytes`; false means "pause the producer until `onDrain`". */
  write(bytes: Uint8Array): boolean {
    if (this.#error !== undefined || this.#closed !== undefined) return true;
    this.#writtenBytes += bytes.length;
    return this.#stream.write(bytes);
  }

  /** Runs `listener` once the queue drained (or the file failed). */
  onDrain(listener: () => void): void {
    this.#drainListeners.push(listener);
  }

  /** Flushes and closes the file; never rejects. */
  close(): Promise<void> {
    this.#closed ??= new Promise<void>((resolve) => {
      const stream = this.#stream;
      if (stream.closed || stream.destroyed) {
        resolve();
        return;
      }
      stream.once('close', () => resolve());
      if (this.#error !== undefined) stream.destroy();
      else stream.end();
    });
    return this.#closed;
  }

  #drained(): void {
    const listeners = this.#drainListeners;
    this.#drainListeners = [];
    for (const listener of listeners) listener();
  }
}
