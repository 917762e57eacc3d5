/**
 * The in-memory part of a command's output: the newest bytes of the merged stdout/stderr stream in a
 * growable ring (bounded by `capacity`), which byte ranges came from stderr, and one consuming cursor.
 * Offsets are absolute positions in the whole stream, so a reader that fell behind the ring learns
 * exactly how many bytes it missed.
 */
import { isContinuationByte } from './utf8-boundary.js';

const INITIAL_BYTES = 16 * 1024;

/** A decoded slice of the stream. */
export interface OutputSlice {
  readonly text: string;
  /** Absolute offset of the first byte of `text`. */
  readonly start: number;
  /** Absolute offset just past the last byte of `text`. */
  readonly end: number;
  /** Bytes between the requested start (the reader's cursor, or offset 0) and `start` that were dropped. */
  readonly skippedBytes: number;
}

export class OutputWindow {
  readonly #capacity: number;
  #ring: Buffer;
  /** Absolute offset of the oldest byte still held. */
  #start = 0;
  /** Absolute offset just past the newest byte: the stream's total length. */
  #end = 0;
  #cursor = 0;
  /** Flat [start, end) pairs of stderr bytes, oldest first, from index `#stderrHead` on. */
  #stderr: number[] = [];
  #stderrHead = 0;

  constructor(capacity: number) {
    this.#capacity = capacity;
    this.#ring = Buffer.alloc(0);
  }

  /** Total bytes of the stream so far. */
  get totalBytes(): number {
    return this.#end;
  }

  /** Absolute offset of the oldest byte still in memory. */
  get retainedFrom(): number {
    return this.#start;
  }

  /** Bytes not yet returned by `read`, including any that fell out of memory. */
  get unreadBytes(): number {
    return this.#end - this.#cursor;
  }

  /** The consuming cursor: how many bytes of the stream consuming reads have returned or passed over. */
  get consumedBytes(): number {
    return this.#cursor;
  }

  /**
   * Makes an empty window continue a stream at `offset` (the bytes before it are not held), with the
   * consuming cursor at `cursor` (at most `offset`): what lies between counts as skipped for the next read.
   * Only before anything was appended.
   */
  continueAt(offset: number, cursor: number): void {
    if (this.#end !== 0) throw new Error('continueAt is only for an empty window');
    this.#start = offset;
    this.#end = offset;
    this.#cursor = Math.min(cursor, offset);
  }

  /** Bytes of memory the ring holds. */
  get allocatedBytes(): number {
    return this.#ring.length;
  }

  append(bytes: Uint8Array, fromStderr: boolean): void {
    const length = bytes.length;
    if (length === 0) return;
    const offset = this.#end;
    this.#reserve(Math.min(this.#capacity, this.#end - this.#start + length));
    const size = this.#ring.length;
    const kept = length > size ? bytes.subarray(length - size) : bytes;
    this.#copyIn(kept, offset + length - kept.length);
    this.#end = offset + length;
    this.#start = Math.max(this.#start, this.#end - size);
    if (fromStderr) this.#markStderr(offset, this.#end);
    this.#pruneStderr();
  }

  /**
   * Consuming read of at most `limitBytes`: the newest unread bytes. A reader that fell behind (the
   * ring dropped them, or more is unread than the limit) gets `skippedBytes` instead of the oldest.
   */
  read(limitBytes: number): OutputSlice {
    const slice = this.#slice(this.#cursor, limitBytes);
    this.#cursor = this.#end;
    return slice;
  }

  /** Non-consuming view of at most `limitBytes` of the newest output. */
  tail(limitBytes: number): OutputSlice {
    return this.#slice(0, limitBytes);
  }

  /** Moves the consuming cursor to the end without decoding anything. */
  consumeAll(): void {
    this.#cursor = this.#end;
  }

  /**
   * The newest `limitBytes` (at most) as text with every stderr line prefixed by `stderrPrefix`.
   * A stderr run that starts mid-line begins on a new line, and so does output after it.
   */
  render(limitBytes: number, stderrPrefix: string): OutputSlice {
    const { start, end, skippedBytes } = this.#bounds(0, limitBytes);
    const parts: string[] = [];
    let atLineStart = true;
    let lastWasStderr = false;
    let position = start;
    const emit = (from: number, to: number, stderr: boolean) => {
      if (from >= to) return;
      let text = this.#decode(from, to);
      if (!atLineStart && stderr !== lastWasStderr) {
        parts.push('\n');
        atLineStart = true;
      }
      if (stderr) {
        text = (atLineStart ? stderrPrefix : '') + text.replace(/\n(?=.)/gs, `\n${stderrPrefix}`);
      }
      parts.push(text);
      atLineStart = text.endsWith('\n');
      lastWasStderr = stderr;
    };
    for (let index = this.#stderrHead; index < this.#stderr.length; index += 2) {
      const from = Math.max(this.#stderr[index]!, start);
      const to = Math.min(this.#stderr[index + 1]!, end);
      if (to <= from) continue;
      emit(position, from, false);
      emit(from, to, true);
      position = to;
    }
    emit(position, end, false);
    return { text: parts.join(''), start, end, skippedBytes };
  }

  /** Keeps only the newest `keepBytes` in a right-sized buffer (after the command stopped). */
  shrink(keepBytes: number): void {
    const keep = Math.min(keepBytes, this.#end - this.#start);
    const from = this.#end - keep;
    const ring = Buffer.allocUnsafe(keep);
    this.#copyOut(from, this.#end, ring);
    this.#ring = Buffer.alloc(keep);
    this.#start = from;
    if (keep > 0) this.#copyIn(ring, from);
    this.#pruneStderr();
  }

  #slice(requestedStart: number, limitBytes: number): OutputSlice {
    const { start, end, skippedBytes } = this.#bounds(requestedStart, limitBytes);
    return { text: this.#decode(start, end), start, end, skippedBytes };
  }

  #bounds(requestedStart: number, limitBytes: number): { start: number; end: number; skippedBytes: number } {
    const end = this.#end;
    let start = Math.max(requestedStart, this.#start, end - Math.max(0, limitBytes));
    // Never start inside a character: its head was skipped, so the rest is skipped too.
    for (let step = 0; step < 3 && start < end && isContinuationByte(this.#byteAt(start)); step += 1) {
      start += 1;
    }
    return { start, end, skippedBytes: start - Math.min(requestedStart, start) };
  }

  #decode(from: number, to: number): string {
    if (to <= from) return '';
    const size = this.#ring.length;
    const head = from % size;
    if (head + (to - from) <= size) return this.#ring.toString('utf8', head, head + (to - from));
    const bytes = Buffer.allocUnsafe(to - from);
    this.#copyOut(from, to, bytes);
    return bytes.toString('utf8');
  }

  #byteAt(offset: number): number {
    return this.#ring[offset % this.#ring.length]!;
  }

  #copyIn(bytes: Uint8Array, offset: number): void {
    const size = this.#ring.length;
    const head = offset % size;
    const first = Math.min(bytes.length, size - head);
    this.#ring.set(bytes.subarray(0, first), head);
    if (first < bytes.length) this.#ring.set(bytes.subarray(first), 0);
  }

  #copyOut(from: number, to: number, target: Buffer): void {
    const size = this.#ring.length;
    if (to <= from || size === 0) return;
    const head = from % size;
    const first = Math.min(to - from, size - head);
    this.#ring.copy(target, 0, head, head + first);
    if (first < to - from) this.#ring.copy(target, first, 0, to - from - first);
  }

  /** Grows the ring (doubling, up to the capacity) so it can hold `needed` bytes. */
  #reserve(needed: number): void {
    const size = this.#ring.length;
    if (needed <= size || size >= this.#capacity) return;
    const grown = Math.min(this.#capacity, Math.max(needed, size * 2, INITIAL_BYTES));
    const held = Buffer.allocUnsafe(this.#end - this.#start);
    this.#copyOut(this.#start, this.#end, held);
    this.#ring = Buffer.alloc(grown);
    if (held.length > 0) this.#copyIn(held, this.#start);
  }

  #markStderr(from: number, to: number): void {
    const last = this.#stderr.length - 1;
    if (last > this.#stderrHead && this.#stderr[last] === from) {
      this.#stderr[last] = to;
    } else {
      this.#stderr.push(from, to);
    }
  }

  #pruneStderr(): void {
    while (this.#stderrHead < this.#stderr.length && this.#stderr[this.#stderrHead + 1]! <= this.#start) {
      this.#stderrHead += 2;
    }
    if (this.#stderrHead > 1024 && this.#stderrHead * 2 > this.#stderr.length) {
      this.#stderr = this.#stderr.slice(this.#stderrHead);
      this.#stderrHead = 0;
    }
  }
}
