/**
 * The in-process provider's observation cursors: any number of readers of one task's output, each at its
 * own position, none of them consuming anything. The table bounds them (per task and in all), expires
 * the idle ones lazily (checked when a cursor is used and whenever one is opened, so an idle cursor costs
 * no timer), and closes a task's cursors when the service says so (forgotten, resumed, disposed).
 */
import {
  CursorClosedError,
  type CursorCloseReason,
  CursorLimitError,
  type CursorReadOptions,
  InvalidArgumentError,
  MAX_TIMER_DELAY_MS,
  type OpenCursorOptions,
  type OutputCursor,
  type OutputCursorRead,
  type OutputStreamKind,
  type TaskId,
  type TaskOutputStream,
  type TaskStatus,
} from '../tasks/index.js';
import { rejectUnknownOptions } from '../tasks/option-keys.js';
import { readOutputPage } from './output-page.js';

/** What a cursor reads from: one registration (attempt) of a task. */
export interface CursorSubject {
  readonly taskId: TaskId;
  readonly kind: OutputStreamKind;
  /** The stream now: the producer's, the final result's once settled, or undefined (nothing to read). */
  stream(): TaskOutputStream | undefined;
  status(): TaskStatus;
  /** Calls `listener` once the task settles. Returns an unsubscribe. */
  onSettle(listener: () => void): () => void;
}

export interface CursorLimits {
  readonly maxCursorsPerTask: number;
  readonly maxCursors: number;
  readonly cursorIdleMs: number;
  readonly maxCursorReadBytes: number;
  readonly now: () => number;
}

// The keys of a request's options (checked on every call; a typo is an error, not a silent default).
const OPEN_CURSOR_OPTION_KEYS = ['from', 'tailBytes'] as const satisfies readonly (keyof OpenCursorOptions)[];
const CURSOR_READ_OPTION_KEYS = [
  'maxBytes',
  'waitMs',
  'signal',
] as const satisfies readonly (keyof CursorReadOptions)[];

const MAX_WAIT_MS = MAX_TIMER_DELAY_MS;
/** The fewest bytes a read may ask for: one character of any size, so every read can move forward. */
const MIN_READ_BYTES = 4;

function isLive(status: TaskStatus): boolean {
  return status === 'running' || status === 'stopping';
}

function nonNegativeInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

export class CursorTable {
  readonly #limits: CursorLimits;
  /** Open cursors by task id. */
  readonly #byTask = new Map<string, Set<LocalCursor>>();
  #count = 0;
  #nextId = 1;

  constructor(limits: CursorLimits) {
    this.#limits = limits;
  }

  /** Open cursors, idle ones not yet swept included. */
  get size(): number {
    return this.#count;
  }

  /** Validates the options, then opens a cursor on `subject` (which the caller was authorized to see). */
  open(subject: CursorSubject, options: OpenCursorOptions = {}): OutputCursor {
    const start = resolveStart(subject, options);
    this.#sweep();
    const open = this.#byTask.get(subject.taskId);
    const limits = this.#limits;
    if ((open?.size ?? 0) >= limits.maxCursorsPerTask) {
      throw new CursorLimitError(
        subject.taskId,
        `task ${subject.taskId}`,
        limits.maxCursorsPerTask,
        'maxCursorsPerTask',
      );
    }
    if (this.#count >= limits.maxCursors) {
      throw new CursorLimitError(subject.taskId, 'the task service', limits.maxCursors, 'maxCursors');
    }
    const cursor = new LocalCursor(`cursor-${this.#nextId++}`, subject, start, this, limits);
    if (open === undefined) this.#byTask.set(subject.taskId, new Set([cursor]));
    else open.add(cursor);
    this.#count += 1;
    return cursor;
  }

  /** Closes every cursor of `taskId` (it was forgotten or re-registered). */
  closeTask(taskId: string, reason: CursorCloseReason): void {
    const open = this.#byTask.get(taskId);
    if (open === undefined) return;
    for (const cursor of [...open]) cursor.closeWith(reason);
  }

  closeAll(reason: CursorCloseReason): void {
    for (const taskId of [...this.#byTask.keys()]) this.closeTask(taskId, reason);
  }

  /** Called by a cursor as it closes. */
  forget(cursor: LocalCursor): void {
    const open = this.#byTask.get(cursor.taskId);
    if (open?.delete(cursor) !== true) return;
    this.#count -= 1;
    if (open.size === 0) this.#byTask.delete(cursor.taskId);
  }

  /** Closes the cursors nobody used for `cursorIdleMs`, so their slots count no more. */
  #sweep(): void {
    const now = this.#limits.now();
    for (const open of [...this.#byTask.values()]) {
      for (const cursor of [...open]) cursor.expireIfIdle(now);
    }
  }
}

interface Start {
  readonly position: number;
  readonly alignStart: boolean;
}

function resolveStart(subject: CursorSubject, options: OpenCursorOptions): Start {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options', 'an object', options, { taskId: subject.taskId });
  }
  rejectUnknownOptions(options, OPEN_CURSOR_OPTION_KEYS, { where: 'openCursor' });
  const from = options.from ?? 'start';
  const tailBytes = options.tailBytes;
  if (tailBytes !== undefined) {
    if (!nonNegativeInteger(tailBytes)) {
      throw new InvalidArgumentError('tailBytes', 'a non-negative integer', tailBytes, {
        taskId: subject.taskId,
      });
    }
    if (from !== 'end') {
      throw new InvalidArgumentError('tailBytes', 'given only with `from: "end"`', tailBytes, {
        taskId: subject.taskId,
      });
    }
  }
  const stream = subject.stream();
  const end = stream?.end ?? 0;
  if (from === 'start') return { position: 0, alignStart: false };
  if (from === 'end') {
    const back = tailBytes ?? 0;
    return {
      position: Math.max(stream?.retainedFrom ?? 0, end - back),
      alignStart: back > 0,
    };
  }
  if (!nonNegativeInteger(from) || from > end) {
    throw new InvalidArgumentError('from', `"start", "end" or an offset from 0 to ${end}`, from, {
      taskId: subject.taskId,
    });
  }
  return { position: from, alignStart: from > 0 };
}

class LocalCursor implements OutputCursor {
  readonly id: string;
  readonly #subject: CursorSubject;
  readonly #table: CursorTable;
  readonly #limits: CursorLimits;
  #position: number;
  #alignStart: boolean;
  #lastUsed: number;
  #busy = 0;
  #closed: CursorCloseReason | undefined;
  #chain: Promise<unknown> | undefined;
  /** Wakes a waiting read (the cursor closed). */
  #wake: (() => void) | undefined;

  constructor(id: string, subject: CursorSubject, start: Start, table: CursorTable, limits: CursorLimits) {
    this.id = id;
    this.#subject = subject;
    this.#table = table;
    this.#limits = limits;
    this.#position = start.position;
    this.#alignStart = start.alignStart;
    this.#lastUsed = limits.now();
  }

  get taskId(): TaskId {
    return this.#subject.taskId;
  }

  get stream(): OutputStreamKind {
    return this.#subject.kind;
  }

  get position(): number {
    return this.#position;
  }

  read(options: CursorReadOptions = {}): Promise<OutputCursorRead> {
    let request: { maxBytes: number; waitMs: number; signal: AbortSignal | undefined };
    try {
      request = this.#validate(options);
      this.#ensureOpen();
    } catch (error) {
      return Promise.reject(error);
    }
    // Counted busy from the call on: a read queued behind another never lets the cursor expire.
    this.#busy += 1;
    const run = () => this.#readNow(request);
    const result = (this.#chain ? this.#chain.then(run, run) : run()).finally(() => {
      this.#busy -= 1;
      this.#lastUsed = this.#limits.now();
    });
    this.#chain = result;
    return result;
  }

  close(): void {
    this.closeWith('closed');
  }

  closeWith(reason: CursorCloseReason): void {
    if (this.#closed !== undefined) return;
    this.#closed = reason;
    this.#table.forget(this);
    this.#wake?.();
  }

  expireIfIdle(now: number): void {
    if (this.#closed === undefined && this.#busy === 0 && now - this.#lastUsed >= this.#limits.cursorIdleMs) {
      this.closeWith('expired');
    }
  }

  #ensureOpen(): void {
    this.expireIfIdle(this.#limits.now());
    if (this.#closed !== undefined) throw new CursorClosedError(this.id, this.taskId, this.#closed);
  }

  #validate(options: CursorReadOptions): {
    maxBytes: number;
    waitMs: number;
    signal: AbortSignal | undefined;
  } {
    if (typeof options !== 'object' || options === null) {
      throw new InvalidArgumentError('options', 'an object', options, { taskId: this.taskId });
    }
    rejectUnknownOptions(options, CURSOR_READ_OPTION_KEYS, { where: 'OutputCursor.read' });
    const most = this.#limits.maxCursorReadBytes;
    const maxBytes = options.maxBytes ?? most;
    if (!nonNegativeInteger(maxBytes) || maxBytes < MIN_READ_BYTES || maxBytes > most) {
      throw new InvalidArgumentError(
        'maxBytes',
        `an integer from ${MIN_READ_BYTES} to ${most} (\`maxCursorReadBytes\`)`,
        maxBytes,
        { taskId: this.taskId },
      );
    }
    const waitMs = options.waitMs ?? 0;
    if (!nonNegativeInteger(waitMs) || waitMs > MAX_WAIT_MS) {
      throw new InvalidArgumentError('waitMs', `an integer from 0 to ${MAX_WAIT_MS}`, waitMs, {
        taskId: this.taskId,
      });
    }
    const signal = options.signal;
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      throw new InvalidArgumentError('signal', 'an AbortSignal', signal, { taskId: this.taskId });
    }
    return { maxBytes, waitMs, signal };
  }

  async #readNow(request: {
    maxBytes: number;
    waitMs: number;
    signal: AbortSignal | undefined;
  }): Promise<OutputCursorRead> {
    this.#ensureOpen();
    let result = await this.#page(request.maxBytes);
    this.#ensureOpen();
    const nothingNew = result.next === this.#position && result.missedBytes === 0;
    if (nothingNew && request.waitMs > 0 && isLive(this.#subject.status()) && !request.signal?.aborted) {
      await this.#waitForChange(request.waitMs, request.signal, result.end);
      this.#ensureOpen();
      result = await this.#page(request.maxBytes);
    }
    this.#ensureOpen();
    if (result.next > this.#position || result.missedBytes > 0) this.#alignStart = false;
    this.#position = result.next;
    return result;
  }

  async #page(maxBytes: number): Promise<OutputCursorRead> {
    const subject = this.#subject;
    // Read the status first: a task that is terminal now has a complete stream.
    const status = subject.status();
    const complete = !isLive(status);
    const stream = subject.stream();
    const page = await readOutputPage(stream, {
      position: this.#position,
      maxBytes,
      complete,
      alignStart: this.#alignStart,
    });
    return {
      ...page,
      ended: complete && page.next >= (stream?.end ?? 0),
      stream: subject.kind,
      status,
    };
  }

  /**
   * Resolves on new output, the task's end, the cursor's close, the signal, or after `waitMs`. `seenEnd`
   * is the end the page saw: output (or an end) that came while the page was being read wakes it at once.
   */
  #waitForChange(waitMs: number, signal: AbortSignal | undefined, seenEnd: number): Promise<void> {
    const stream = this.#subject.stream();
    return new Promise<void>((resolve) => {
      const cleanups: Array<() => void> = [];
      const finish = () => {
        for (const cleanup of cleanups) cleanup();
        this.#wake = undefined;
        resolve();
      };
      const timer = setTimeout(finish, waitMs);
      cleanups.push(() => clearTimeout(timer));
      if (stream !== undefined) cleanups.push(stream.onGrow(finish));
      cleanups.push(this.#subject.onSettle(finish));
      if (signal !== undefined) {
        signal.addEventListener('abort', finish, { once: true });
        cleanups.push(() => signal.removeEventListener('abort', finish));
      }
      this.#wake = finish;
      // Checked after subscribing: nothing can slip between this check and the listeners.
      if ((stream?.end ?? 0) !== seenEnd || !isLive(this.#subject.status())) finish();
    });
  }
}

/** A complete stream over fixed bytes: a final-output task's result, once it has ended. */
export function fixedBytesStream(bytes: Uint8Array): TaskOutputStream {
  return {
    end: bytes.length,
    retainedFrom: 0,
    read: (offset, maxBytes) => ({ from: offset, bytes: bytes.subarray(offset, offset + maxBytes) }),
    onGrow: () => () => {},
  };
}
