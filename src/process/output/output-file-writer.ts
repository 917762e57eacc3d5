/**
 * The one writer of output files: a process's output stream, capped, written to its file with
 * backpressure. Chunks are queued and written with one `writev` at a time, so reading the process and
 * writing the disk overlap. Once `highWaterMarkBytes` wait for the disk the writer is `blocked` (the
 * caller pauses its source) until `onDrain` listeners run, when the queue fell back to a quarter of that:
 * memory stays bounded by the mark plus one chunk, however slow the disk is.
 *
 * The file is created exclusively on the first byte written, or by `open()` when its path is about to be
 * shown: a path is never shown before the file exists, and a silent process leaves no file. Output that
 * arrives while the file is still opening waits in the queue. Past `maxBytes` the rest of the stream is
 * dropped and `full` turns true, so the caller can stop the process.
 *
 * With `reopenFile` the writer holds the file's descriptor only while it writes: once everything queued
 * is on the disk the descriptor is closed, and the next write opens the file again (appending, never
 * creating it, never through a link). Thousands of live processes then hold no descriptor for their
 * files, only for their pipes; a stream that keeps coming keeps its descriptor, as its chunks queue up
 * behind the write in flight.
 */
import { closeSync, writev } from 'node:fs';

/** Creates the file at `path` exclusively, open for writing. */
export type OpenOutputFile = (
  path: string,
  callback: (error: NodeJS.ErrnoException | null, fd: number) => void,
) => void;

export interface OutputFileWriterOptions {
  /** The file's cap, in bytes: what goes past it is dropped (reaching it exactly drops nothing). */
  readonly maxBytes: number;
  /** Bytes waiting for the disk at which the writer is `blocked`; it drains at a quarter of this. */
  readonly highWaterMarkBytes: number;
  /**
   * Where a chunk may be cut at the cap: the length of its longest prefix of at most `limit` bytes that
   * may stand alone (for example, one that ends on a character boundary). Default: anywhere.
   */
  readonly cutAt?: (chunk: Uint8Array, limit: number) => number;
  /** The file exists now. */
  readonly onOpen?: () => void;
  /** The file could not be created (`whileOpening`) or written; nothing more is written after it. */
  readonly onError?: (error: Error, whileOpening: boolean) => void;
  /**
   * Opens the file, once created, again for writing at its end. With it the descriptor is held only while
   * a write is queued or in flight; without it, until `close()`.
   */
  readonly reopenFile?: OpenOutputFile;
}

type FileState = 'none' | 'opening' | 'open' | 'failed';

/** The most bytes one `writev` call carries; more stays queued for the next call. */
const MAX_BATCH_BYTES = 8 * 1024 * 1024;
/** Stay well under IOV_MAX (1024 on Linux). */
const MAX_BATCH_CHUNKS = 512;

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Already closed; nothing is lost by ignoring it.
  }
}

export class OutputFileWriter {
  readonly path: string;
  readonly #openFile: OpenOutputFile;
  readonly #maxBytes: number;
  readonly #highWaterMark: number;
  readonly #lowWaterMark: number;
  readonly #cutAt: ((chunk: Uint8Array, limit: number) => number) | undefined;
  readonly #onOpen: (() => void) | undefined;
  readonly #onError: ((error: Error, whileOpening: boolean) => void) | undefined;
  readonly #reopenFile: OpenOutputFile | undefined;
  #state: FileState = 'none';
  /** The file's descriptor while it is held: from its creation (or a reopening) until the queue is written. */
  #fd: number | undefined;
  #reopening = false;
  #openWaiters: Array<(opened: boolean) => void> = [];
  #bytes = 0;
  /** Bytes the file holds: written to it by completed writes. */
  #writtenBytes = 0;
  #full = false;
  #queue: Uint8Array[] = [];
  #queuedBytes = 0;
  #writing = false;
  #blocked = false;
  #drainListeners: Array<() => void> = [];
  #flushListeners: Array<() => void> = [];
  readonly #progressListeners = new Set<() => void>();
  readonly #growListeners = new Set<() => void>();
  #error: Error | undefined;
  #closed: Promise<void> | undefined;

  constructor(path: string, openFile: OpenOutputFile, options: OutputFileWriterOptions) {
    this.path = path;
    this.#openFile = openFile;
    this.#maxBytes = options.maxBytes;
    this.#highWaterMark = options.highWaterMarkBytes;
    this.#lowWaterMark = Math.floor(options.highWaterMarkBytes / 4);
    this.#cutAt = options.cutAt;
    this.#onOpen = options.onOpen;
    this.#onError = options.onError;
    this.#reopenFile = options.reopenFile;
  }

  /** Whether the writer holds a descriptor of the file now. */
  get holdsDescriptor(): boolean {
    return this.#fd !== undefined;
  }

  /** Whether the file exists (it was created and has not failed to open). */
  get opened(): boolean {
    return this.#state === 'open';
  }

  /**
   * Bytes of the stream the file took, at most `maxBytes`. A write error does not stop the count (the
   * file then holds fewer; `error` says why), so the cap keeps bounding the stream.
   */
  get bytes(): number {
    return this.#bytes;
  }

  /**
   * Bytes the file holds: what completed writes put there, in order from its start. Readers of the file
   * read up to here; it stops growing at the first error.
   */
  get writtenBytes(): number {
    return this.#writtenBytes;
  }

  /** True once output went past the cap (and was dropped). */
  get full(): boolean {
    return this.#full;
  }

  /** Bytes waiting for the disk. */
  get queuedBytes(): number {
    return this.#queuedBytes;
  }

  /** True from the write that queued `highWaterMarkBytes` until the queue drained to a quarter. */
  get blocked(): boolean {
    return this.#blocked;
  }

  /** The first open or write error, after which nothing more is written. */
  get error(): Error | undefined {
    return this.#error;
  }

  /**
   * Creates the file now if nothing created it yet; resolves with whether it exists. After `close()` a
   * file that was never created stays uncreated.
   */
  open(): Promise<boolean> {
    if (this.#state === 'open') return Promise.resolve(true);
    if (this.#state === 'failed' || (this.#state === 'none' && this.#closed !== undefined)) {
      return Promise.resolve(false);
    }
    const opened = new Promise<boolean>((resolve) => this.#openWaiters.push(resolve));
    this.#startOpening();
    return opened;
  }

  /**
   * Takes as much of `chunk` as the cap leaves room for and queues it for the disk (kept by reference:
   * the caller must not reuse the buffer). Returns how many bytes it took: fewer than given once the cap
   * is reached (`full`), none after `close()`.
   */
  write(chunk: Uint8Array): number {
    if (this.#full || this.#closed !== undefined) return 0;
    const room = this.#maxBytes - this.#bytes;
    let part = chunk;
    if (part.length > room) {
      part = part.subarray(0, this.#cutAt ? this.#cutAt(part, room) : room);
      this.#full = true;
    }
    if (part.length === 0) return 0;
    this.#bytes += part.length;
    if (this.#state === 'none') this.#startOpening();
    if (this.#error !== undefined) return part.length;
    this.#queue.push(part);
    this.#queuedBytes += part.length;
    this.#pump();
    if (this.#queuedBytes >= this.#highWaterMark) this.#blocked = true;
    return part.length;
  }

  /** Runs `listener` once the writer is no longer `blocked` (at once when it is not). */
  onDrain(listener: () => void): void {
    if (!this.#blocked) {
      listener();
      return;
    }
    this.#drainListeners.push(listener);
  }

  /** Calls `listener` after each completed write to the disk. Returns an unsubscribe. */
  onProgress(listener: () => void): () => void {
    this.#progressListeners.add(listener);
    return () => {
      this.#progressListeners.delete(listener);
    };
  }

  /** Calls `listener` each time `writtenBytes` grows (kept until `close()` finished). Returns an unsubscribe. */
  onGrow(listener: () => void): () => void {
    this.#growListeners.add(listener);
    return () => {
      this.#growListeners.delete(listener);
    };
  }

  /** Writes what is queued and closes the file (a writer that never created one has none); never rejects. */
  close(): Promise<void> {
    this.#closed ??= new Promise<void>((resolve) => {
      if (this.#state === 'none') {
        this.#settleOpen(false);
        resolve();
        return;
      }
      const finish = () => {
        this.#release();
        this.#progressListeners.clear();
        this.#growListeners.clear();
        resolve();
      };
      const settled = this.#state !== 'opening' && !this.#reopening;
      if (settled && !this.#writing && this.#queue.length === 0) finish();
      else this.#flushListeners.push(finish);
    });
    return this.#closed;
  }

  #startOpening(): void {
    if (this.#state !== 'none') return;
    this.#state = 'opening';
    this.#openFile(this.path, (error, fd) => {
      if (error) {
        this.#state = 'failed';
        this.#fail(error, true);
        this.#settleOpen(false);
        return;
      }
      this.#state = 'open';
      this.#attach(fd);
      this.#onOpen?.();
      this.#settleOpen(true);
    });
  }

  #attach(fd: number): void {
    if (this.#error !== undefined) {
      closeQuietly(fd);
      return;
    }
    this.#fd = fd;
    this.#pump();
    if (!this.#writing) this.#flushed();
  }

  #settleOpen(opened: boolean): void {
    const waiters = this.#openWaiters;
    this.#openWaiters = [];
    for (const waiter of waiters) waiter(opened);
  }

  #pump(): void {
    if (this.#writing || this.#queue.length === 0 || this.#error !== undefined) return;
    if (this.#fd === undefined) {
      if (this.#state === 'open') this.#reopen();
      return;
    }
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

  #write(batch: Uint8Array[], bytes: number): void {
    // One write in flight at a time, at the file's own offset (so a FIFO works too).
    writev(this.#fd!, batch, null, (error, written) => {
      if (error) {
        this.#fail(error, false);
        return;
      }
      this.#queuedBytes -= written;
      if (written > 0) {
        this.#writtenBytes += written;
        if (this.#growListeners.size > 0) for (const listener of [...this.#growListeners]) listener();
      }
      if (written < bytes) {
        // A short write: write the rest.
        this.#write(remainderOf(batch, written), bytes - written);
        return;
      }
      this.#writing = false;
      if (this.#blocked && this.#queuedBytes <= this.#lowWaterMark) this.#unblock();
      if (this.#progressListeners.size > 0) for (const listener of [...this.#progressListeners]) listener();
      if (this.#queue.length > 0) this.#pump();
      else this.#flushed();
    });
  }

  /** Opens the created file again for the queue (its descriptor was let go once the last write was done). */
  #reopen(): void {
    if (this.#reopening || this.#reopenFile === undefined) return;
    this.#reopening = true;
    this.#reopenFile(this.path, (error, fd) => {
      this.#reopening = false;
      if (error) {
        this.#fail(error, false);
        return;
      }
      this.#attach(fd);
    });
  }

  /** Closes the descriptor the writer holds, if any. */
  #release(): void {
    if (this.#fd === undefined) return;
    closeQuietly(this.#fd);
    this.#fd = undefined;
  }

  #fail(error: Error, whileOpening: boolean): void {
    this.#error ??= error;
    this.#writing = false;
    this.#queue = [];
    this.#queuedBytes = 0;
    this.#onError?.(error, whileOpening);
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
    // Everything queued is on the disk: the descriptor goes until the next write, where it can be reopened.
    if (this.#reopenFile !== undefined && !this.#writing && this.#queue.length === 0) this.#release();
    const listeners = this.#flushListeners;
    this.#flushListeners = [];
    for (const listener of listeners) listener();
  }
}

function remainderOf(batch: Uint8Array[], written: number): Uint8Array[] {
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
