/**
 * Reads a file that something else appends to (a durable command writes its output file directly),
 * incrementally: each `read()` returns what was appended since the last one, up to `maxBytes` in all and
 * at most `maxChunkBytes` per call, so one call never holds the event loop for long. The file is opened
 * once (never through a link) and read at its own offsets; a file that is gone or unreadable reads as
 * nothing new.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

export interface FileFollowerOptions {
  /** Where reading starts (bytes already accounted for elsewhere). Default 0. */
  readonly from?: number;
  /** Nothing past this offset is ever read (the output cap). */
  readonly maxBytes: number;
  /** The most one `read()` returns. Default 4 MiB. */
  readonly maxChunkBytes?: number;
}

const DEFAULT_CHUNK_BYTES = 4 * 1024 * 1024;

export class FileFollower {
  readonly path: string;
  readonly #maxBytes: number;
  readonly #maxChunkBytes: number;
  #position: number;
  #fd: number | undefined;
  #closed = false;

  constructor(path: string, options: FileFollowerOptions) {
    this.path = path;
    this.#position = options.from ?? 0;
    this.#maxBytes = options.maxBytes;
    this.#maxChunkBytes = options.maxChunkBytes ?? DEFAULT_CHUNK_BYTES;
  }

  /** The offset the next read starts at. */
  get position(): number {
    return this.#position;
  }

  /** The file's size now, or undefined when it cannot be read. */
  size(): number | undefined {
    const fd = this.#open();
    if (fd === undefined) return undefined;
    try {
      return fstatSync(fd).size;
    } catch {
      return undefined;
    }
  }

  /** What was appended since the last read (empty when nothing was), at most `maxChunkBytes`. */
  read(): Buffer {
    const size = this.size();
    if (size === undefined) return Buffer.alloc(0);
    const end = Math.min(size, this.#maxBytes);
    const length = Math.min(end - this.#position, this.#maxChunkBytes);
    if (length <= 0) return Buffer.alloc(0);
    const buffer = Buffer.allocUnsafe(length);
    let filled = 0;
    try {
      while (filled < length) {
        const count = readSync(this.#fd!, buffer, filled, length - filled, this.#position + filled);
        if (count === 0) break;
        filled += count;
      }
    } catch {
      // Read what could be read; the rest is tried again next time.
    }
    this.#position += filled;
    return filled === length ? buffer : buffer.subarray(0, filled);
  }

  /** True once the file holds at least `maxBytes` (what the cap allows was written). */
  reachedCap(): boolean {
    return (this.size() ?? 0) >= this.#maxBytes;
  }

  close(): void {
    this.#closed = true;
    if (this.#fd === undefined) return;
    try {
      closeSync(this.#fd);
    } catch {
      // Already closed.
    }
    this.#fd = undefined;
  }

  #open(): number | undefined {
    if (this.#closed) return undefined;
    if (this.#fd === undefined) {
      try {
        this.#fd = openSync(this.path, constants.O_RDONLY | constants.O_NOFOLLOW);
      } catch {
        return undefined;
      }
    }
    return this.#fd;
  }
}
