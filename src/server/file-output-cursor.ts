/**
 * A reader of an output file written by another process: the store-backed dashboard's observation cursor.
 * It reads the file from its own position, pages it like the task service's cursors (`readOutputPage`:
 * never half a character), and waits for more by watching the file's size every `pollMs`; it knows the
 * work has ended from the store (`isComplete`), since no event crosses processes. The same cursor reads
 * a remote job's Redis stream (`openStreamOutputCursor`), refreshing the stream's end before each look.
 */
import { statSync } from 'node:fs';
import { readFileRange } from '../process/index.js';
import { readOutputPage } from '../registry/index.js';
import {
  CursorClosedError,
  type CursorReadOptions,
  InvalidArgumentError,
  type OpenCursorOptions,
  type OutputCursor,
  type OutputCursorRead,
  type TaskId,
  type TaskOutputStream,
  type TaskStatus,
} from '../tasks/index.js';

export interface FileOutputCursorParts {
  readonly id: string;
  readonly taskId: TaskId;
  readonly path: string;
  /** The work's status now, as the store records it (a dead holder's work reads `lost`). */
  readonly status: () => TaskStatus;
  readonly pollMs: number;
  readonly maxReadBytes: number;
  /** The clock, in epoch milliseconds (a wait's deadline). */
  readonly now: () => number;
}

function fileSize(path: string): number {
  try {
    const stats = statSync(path);
    return stats.isFile() ? stats.size : 0;
  } catch {
    return 0;
  }
}

function isLive(status: TaskStatus): boolean {
  return status === 'running' || status === 'stopping';
}

/** The file as a stream: from 0 to its size now (no growth events: readers poll). */
function fileStream(path: string): TaskOutputStream {
  return {
    get end() {
      return fileSize(path);
    },
    retainedFrom: 0,
    location: path,
    read: async (offset, maxBytes) => ({ from: offset, bytes: await readFileRange(path, offset, maxBytes) }),
    onGrow: () => () => {},
  };
}

/** A stream read from elsewhere: `end` is as of the last `refresh()`. */
export interface RefreshableStream extends TaskOutputStream {
  refresh?(): Promise<void>;
}

export function openFileOutputCursor(parts: FileOutputCursorParts, options: OpenCursorOptions): OutputCursor {
  return openStreamOutputCursor(parts, fileStream(parts.path), options);
}

/** A cursor over any stream another process writes (a remote job's Redis stream), polled like a file. */
export function openStreamOutputCursor(
  parts: Omit<FileOutputCursorParts, 'path'>,
  stream: RefreshableStream,
  options: OpenCursorOptions,
): OutputCursor {
  const end = stream.end;
  const from = options.from ?? 'start';
  let position: number;
  if (from === 'start') position = 0;
  else if (from === 'end') position = Math.max(0, end - (options.tailBytes ?? 0));
  else if (typeof from === 'number' && Number.isSafeInteger(from) && from >= 0 && from <= end)
    position = from;
  else throw new InvalidArgumentError('from', `"start", "end" or an offset from 0 to ${end}`, from);
  if (options.tailBytes !== undefined && from !== 'end') {
    throw new InvalidArgumentError('tailBytes', 'given only with `from: "end"`', options.tailBytes);
  }
  return new FileOutputCursor(parts, stream, position, position > 0);
}

class FileOutputCursor implements OutputCursor {
  readonly id: string;
  readonly taskId: TaskId;
  readonly stream = 'bytes' as const;
  readonly #parts: Omit<FileOutputCursorParts, 'path'>;
  readonly #file: RefreshableStream;
  #position: number;
  #alignStart: boolean;
  #closed = false;
  #chain: Promise<unknown> = Promise.resolve();

  constructor(
    parts: Omit<FileOutputCursorParts, 'path'>,
    file: RefreshableStream,
    position: number,
    alignStart: boolean,
  ) {
    this.id = parts.id;
    this.taskId = parts.taskId;
    this.#parts = parts;
    this.#file = file;
    this.#position = position;
    this.#alignStart = alignStart;
  }

  get position(): number {
    return this.#position;
  }

  read(options: CursorReadOptions = {}): Promise<OutputCursorRead> {
    const maxBytes = options.maxBytes ?? this.#parts.maxReadBytes;
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 4 || maxBytes > this.#parts.maxReadBytes) {
      return Promise.reject(
        new InvalidArgumentError('maxBytes', `an integer from 4 to ${this.#parts.maxReadBytes}`, maxBytes),
      );
    }
    const result = this.#chain.then(() => this.#readNow(maxBytes, options.waitMs ?? 0, options.signal));
    this.#chain = result.catch(() => {});
    return result;
  }

  close(): void {
    this.#closed = true;
  }

  async #readNow(
    maxBytes: number,
    waitMs: number,
    signal: AbortSignal | undefined,
  ): Promise<OutputCursorRead> {
    let read = await this.#page(maxBytes);
    if (read.next === this.#position && !read.ended && waitMs > 0) {
      const deadline = this.#parts.now() + waitMs;
      const seen = read.end;
      while (!this.#closed && !signal?.aborted && this.#file.end === seen && isLive(this.#parts.status())) {
        const left = deadline - this.#parts.now();
        if (left <= 0) break;
        await pause(Math.min(this.#parts.pollMs, left), signal);
        await this.#file.refresh?.();
      }
      read = await this.#page(maxBytes);
    }
    if (read.next > this.#position) this.#alignStart = false;
    this.#position = read.next;
    return read;
  }

  async #page(maxBytes: number): Promise<OutputCursorRead> {
    if (this.#closed) throw new CursorClosedError(this.id, this.taskId, 'closed');
    await this.#file.refresh?.();
    const status = this.#parts.status();
    const complete = !isLive(status);
    const page = await readOutputPage(this.#file, {
      position: this.#position,
      maxBytes,
      complete,
      alignStart: this.#alignStart,
    });
    return { ...page, ended: complete && page.next >= page.end, stream: 'bytes', status };
  }
}

function pause(milliseconds: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, milliseconds);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
