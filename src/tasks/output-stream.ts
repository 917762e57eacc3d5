/**
 * Many readers of one task's output: the byte-stream port a producer exposes (`TaskOutputStream`), and
 * the non-consuming cursors a task service opens over it (`OutputCursor`). The model's consuming read
 * (`TaskService.read`) is a cursor of its own kept by the producer; observation cursors never move it, and
 * it never moves them.
 */
import type { TaskId } from './ids.js';
import type { TaskStatus } from './status.js';

/** A run of retained bytes a stream handed out. */
export interface TaskOutputChunk {
  /** Offset of `bytes[0]`: the offset asked for, or later when the bytes before it are no longer retained. */
  readonly from: number;
  readonly bytes: Uint8Array;
}

/**
 * A task's output as one byte stream that any number of readers observe without consuming it: the port
 * a producer exposes as `TaskHooks.output`. Offsets count bytes from the stream's first byte. The
 * producer retains the bytes from `retainedFrom` to `end` (the bash and pty producers: their output file,
 * from 0 up to its cap); whatever left the window before `retainedFrom` is reported to a cursor as
 * missed, never replayed. Once the task is terminal the stream is complete: `end` no longer moves.
 */
export interface TaskOutputStream {
  /** Offset just past the newest readable byte. Never decreases. */
  readonly end: number;
  /** Offset of the oldest byte still readable: 0 unless the producer drops old output. At most `end`. */
  readonly retainedFrom: number;
  /** Where the whole output can be read (an output file), named in the missed-bytes marker. */
  readonly location?: string | undefined;
  /**
   * At most `maxBytes` retained bytes from `offset` (`retainedFrom <= offset <= end`). Fewer only at the
   * end of what is readable; a chunk that starts later than `offset` says the bytes between were dropped
   * meanwhile. Never throws for a file that is gone: it answers no bytes.
   */
  read(offset: number, maxBytes: number): TaskOutputChunk | Promise<TaskOutputChunk>;
  /** Calls `listener` whenever `end` grows. Returns an unsubscribe. */
  onGrow(listener: () => void): () => void;
}

/**
 * What a cursor reads. `bytes`: the producer's byte stream (`TaskHooks.output`). `final`: a final-output
 * task, which has no byte stream — its cursors read nothing while it runs, then its result (the
 * outcome's `output`, else its `resultText`) as the whole stream once it has ended. `none`: a streaming
 * task whose producer exposes no byte stream — its cursors never read anything, and end with the task.
 */
export type OutputStreamKind = 'bytes' | 'final' | 'none';

export interface OpenCursorOptions {
  /**
   * Where the cursor starts: `start` (offset 0: a stream that dropped old output reports it as missed on
   * the first read), `end` (only what comes next, or the newest `tailBytes`), or an offset from 0 to the
   * stream's end. Default `start`.
   */
  readonly from?: 'start' | 'end' | number;
  /**
   * With `from: 'end'`: start this many bytes before the end instead — the newest output, never before the
   * oldest retained byte. Default 0.
   */
  readonly tailBytes?: number;
}

export interface CursorReadOptions {
  /**
   * The most bytes of output this read returns (at least 4, one character of any size). Default, and at
   * most: the service's `maxCursorReadBytes`.
   */
  readonly maxBytes?: number;
  /**
   * When nothing new has been written yet, wait up to this long for output or for the task's end
   * (0 to 2147483647 ms). Default 0: answer at once.
   */
  readonly waitMs?: number;
  /** Ends a wait early: the read answers with what is there. */
  readonly signal?: AbortSignal;
}

export interface OutputCursorRead {
  /**
   * The output from `from` to `next`, decoded as UTF-8 and never ending inside a character (an
   * unfinished one waits for the next read, unless the stream is complete). When bytes were missed, the
   * text starts with a truncation marker line counting them (`[... N bytes skipped; full output: … ...]`).
   */
  readonly text: string;
  /** Offset of the first byte of `text` after any marker line. */
  readonly from: number;
  /** The cursor's position after this read: `from` plus the bytes `text` decodes (without the marker). */
  readonly next: number;
  /** Bytes between the cursor's position and `from` that the stream no longer held. */
  readonly missedBytes: number;
  /** The stream's end when it was read. */
  readonly end: number;
  /** True once the task has ended and this cursor has read everything: nothing more will come. */
  readonly ended: boolean;
  readonly stream: OutputStreamKind;
  /** The task's status when it was read. */
  readonly status: TaskStatus;
}

/**
 * A non-consuming reader of one task's output, opened with `TaskService.openCursor` by a caller that may
 * see the task. It holds a position of its own: reads advance only this cursor. The service bounds how
 * many are open (per task and in all), closes a cursor left idle past its `cursorIdleMs`, and closes
 * every cursor of a task when the task is forgotten (retention, owner disposal), re-registered (resume),
 * or the service is disposed; a closed cursor's reads fail with `CURSOR_CLOSED`.
 */
export interface OutputCursor {
  readonly id: string;
  readonly taskId: TaskId;
  readonly stream: OutputStreamKind;
  /** The offset of the next byte this cursor reads. */
  readonly position: number;
  /** Reads from the position and advances it. Reads of one cursor are serialized. */
  read(options?: CursorReadOptions): Promise<OutputCursorRead>;
  /** Releases the cursor; idempotent. A read waiting meanwhile fails with `CURSOR_CLOSED`. */
  close(): void;
}
