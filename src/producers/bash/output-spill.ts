/**
 * Writes a command's whole output stream to its output file, with backpressure. Chunks are queued and
 * written with one `writev` at a time, so reading the pipe and writing the disk overlap.
 * `write` returns false once `highWaterMark` bytes wait for the disk: the caller pauses the command's
 * pipes, and `onDrain` listeners run when the queue fell back to a quarter of that. Memory stays bounded
 * by the high-water mark plus one chunk, however slow the disk is. The file may still be opening when
 * the first chunks arrive; they wait in the queue until `attach` hands over the descriptor.
 */
import { closeSync, writev } from 'node:fs';

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Already closed; nothing is lost by ignoring it.
  }
}

/** The most bytes one `writev` call carries; more stays queued for the next call. */
const MAX_BATCH_BYTES = 8 * 1024 * 1024;
/** Stay well under IOV_MAX (1024 on Linux). */
const MAX_BATCH_CHUNKS = 512;

export class OutputSpill {
  readonly path: string;
  #fd: number | undefined;
  readonly #highWaterMark: number;
  readonly #lowWaterMark: number;
  readonly #onError: (error: Error) => void;
  #queue: Buffer[] = [];
  #queuedBytes = 0;
  #writing = false;
  #blocked = false;
  #drainListeners: Array<() => void> = [];
  #flushListeners: Array<() => void> = [];
  #error: Error | undefined;
  #closed: Promise<void> | undefined;
  #writtenBytes = 0;

  constructor(path: string, highWaterMark: number, onError: (error: Error) => void) {
    this.path = path;
    this.#highWaterMark = highWaterMark;
    this.#lowWaterMark = Math.floor(highWaterMark / 4);
    this.#onError = onError;
  }

  /** The file is open: queued output starts going to it. */
  attach(fd: number): void {
    if (this.#fd !== undefined || this.#error !== undefined) {
      closeQuietly(fd);
      return;
    }
    this.#fd = fd;
    this.#pump();
    if (!this.#writing) this.#flushed();
  }

  /** The file could not be opened: nothing will be written. */
  failToOpen(error: Error): void {
    this.#fail(error);
  }

  /** The first open or write error, after which nothing more is written. */
  get error(): Error | undefined {
    return this.#error;
  }

  /** Bytes handed to the spill (all of them are in the file once `close()` resolved, barring an error). */
  get writtenBytes(): number {
    return this.#writtenBytes;
  }

  /** Bytes waiting for the disk. */
  get queuedBytes(): number {
    return this.#queuedBytes;
  }

  /**
   * Queues `bytes` (kept by reference: the caller must not reuse the buffer). False means "pause the
   * producer until `onDrain`".
   */
  write(bytes: Buffer): boolean {
    if (this.#error !== undefined || this.#closed !== undefined) return true;
    this.#writtenBytes += bytes.length;
    this.#queue.push(bytes);
    this.#queuedBytes += bytes.length;
    this.#pump();
    if (this.#queuedBytes < this.#highWaterMark) return true;
    this.#blocked = true;
    return false;
  }

  /** Runs `listener` once after a `write` returned false, when the queue is low again (or the file failed). */
  onDrain(listener: () => void): void {
    if (!this.#blocked) {
      listener();
      return;
    }
    this.#drainListeners.push(listener);
  }

  /** Writes what is queued and closes the file (once it is open); never rejects. */
  close(): Promise<void> {
    this.#closed ??= new Promise<void>((resolve) => {
      const finish = () => {
        if (this.#fd !== undefined) closeQuietly(this.#fd);
        resolve();
      };
      const settled = this.#fd !== undefined || this.#error !== undefined;
      if (settled && !this.#writing && this.#queue.length === 0) finish();
      else this.#flushListeners.push(finish);
    });
    return this.#closed;
  }

  #pump(): void {
    if (this.#writing || this.#queue.length === 0 || this.#error !== undefined || this.#fd === undefined)
      return;
    let count = 0;
    let bytes = 0;
    while (count < this.#queue.length && count < MAX_BATCH_CHUNKS && bytes < MAX_BATCH_BYTES) {
      bytes += this.#queue[count]!.length;
      count += 1;
    }
    const batch = this.#queue.length === count ? this.#queue : this.#queue.slice(0, count);
    this.#queue = this.#queue.length === count ? [] : this.#queue.slice(count);
    this.#writing = true;
    this.#write(batch, bytes);
  }

  #write(batch: Buffer[], bytes: number): void {
    // One write in flight at a time, at the file's own offset (so a FIFO works too).
    writev(this.#fd!, batch, null, (error, written) => {
      if (error) {
        this.#fail(error);
        return;
      }
      this.#queuedBytes -= written;
      if (written < bytes) {
        // A short write: write the rest.
        this.#write(remainderOf(batch, written), bytes - written);
        return;
      }
      this.#writing = false;
      if (this.#blocked && this.#queuedBytes <= this.#lowWaterMark) this.#unblock();
      if (this.#queue.length > 0) this.#pump();
      else this.#flushed();
    });
  }

  #fail(error: Error): void {
    this.#error ??= error;
    this.#writing = false;
    this.#queue = [];
    this.#queuedBytes = 0;
    this.#onError(error);
    this.#unblock();
    this.#flushed();
  }

  #unblock(): void {
    this.#blocked = false;
    const listeners = this.#drainListeners;
    this.#drainListeners = [];
    for (const listener of listeners) listener();
  }

  #flushed(): void {
    const listeners = this.#flushListeners;
    this.#flushListeners = [];
    for (const listener of listeners) listener();
  }
}

function remainderOf(batch: Buffer[], written: number): Buffer[] {
  let skip = written;
  let index = 0;
  while (index < batch.length && skip >= batch[index]!.length) {
    skip -= batch[index]!.length;
    index += 1;
  }
  const rest = batch.slice(index);
  if (rest.length > 0 && skip > 0) rest[0] = rest[0]!.subarray(skip);
  return rest;
}
