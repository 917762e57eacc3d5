/**
 * Reads a file that something else appends to (a durable command writes its output file directly),
 * incrementally: each `read()` returns what was appended since the last one, up to `maxBytes` in all and
 * at most `maxChunkBytes` per call, so one call never holds the event loop for long. The file is opened
 * once (never through a link) and read at its own offsets; a file that is gone or unreadable reads as
 * nothing new.
 *
 * A file only ever grows. One that shrank below what was read (truncated), or whose path now names
 * another file (replaced), lost bytes: the reader is told with a skipped-bytes marker line in the stream
 * (`[... N bytes skipped; full output: <file> (truncated or replaced: read again from its start) ...]`,
 * N the bytes known to be lost) and reading starts again at the start of what the path names now.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync } from 'node:fs';
import { formatTruncationMarker } from '../../text/index.js';

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
  /** The largest size seen of the file open now. */
  #largestSize = 0;
  /** Whether the last byte handed out ended a line (a marker then needs no line break before it). */
  #atLineStart = true;
  #discontinuities = 0;

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
      const { size } = fstatSync(fd);
      this.#largestSize = Math.max(this.#largestSize, size);
      return size;
    } catch {
      return undefined;
    }
  }

  /** How many times the file was found truncated or replaced. */
  get discontinuities(): number {
    return this.#discontinuities;
  }

  /**
   * What was appended since the last read (empty when nothing was), at most `maxChunkBytes`; after a
   * truncation or replacement, the marker line that says so (what follows comes from the file's start).
   */
  read(): Buffer {
    const marker = this.#checkContinuity();
    if (marker !== undefined) return marker;
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
    if (filled > 0) this.#atLineStart = buffer[filled - 1] === 0x0a;
    return filled === length ? buffer : buffer.subarray(0, filled);
  }

  /** The marker when the file shrank below the read position or the path names another file now. */
  #checkContinuity(): Buffer | undefined {
    const fd = this.#open();
    if (fd === undefined) return undefined;
    let opened: { ino: number; dev: number; size: number };
    try {
      opened = fstatSync(fd);
    } catch {
      return undefined;
    }
    let replaced = false;
    try {
      const named = lstatSync(this.path);
      replaced = named.ino !== opened.ino || named.dev !== opened.dev;
    } catch {
      // Removed: the open file is still the one being written.
    }
    if (!replaced && opened.size >= this.#position) return undefined;
    // Bytes known to have been there and never read; what was written after the last look is unknown.
    const lost = Math.max(0, Math.max(this.#largestSize, replaced ? opened.size : 0) - this.#position);
    if (replaced) {
      this.#closeDescriptor();
      this.#open();
    }
    this.#position = 0;
    this.#largestSize = 0;
    this.#discontinuities += 1;
    const line = formatTruncationMarker({
      skippedBytes: lost,
      outputFile: `${this.path} (${replaced ? 'replaced' : 'truncated'}: read again from its start)`,
    });
    const text = `${this.#atLineStart ? '' : '\n'}${line}\n`;
    this.#atLineStart = true;
    return Buffer.from(text, 'utf8');
  }

  /** True once the file holds at least `maxBytes` (what the cap allows was written). */
  reachedCap(): boolean {
    return (this.size() ?? 0) >= this.#maxBytes;
  }

  close(): void {
    this.#closed = true;
    this.#closeDescriptor();
  }

  #closeDescriptor(): void {
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
