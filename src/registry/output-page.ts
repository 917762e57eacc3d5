/**
 * One page of a byte stream for a reader at a position: the retained bytes from there, decoded as UTF-8
 * without ending inside a character, and a truncation marker counting whatever the stream no longer held.
 * The in-process provider's cursors read through it, and so does every other reader of an output stream
 * (the dashboard's reader of an output file in another process), so they all cut and mark the same way.
 */
import type { TaskOutputStream } from '../tasks/index.js';
import { completeUtf8Length, formatTruncationMarker, leadingContinuationBytes } from '../text/index.js';

export interface OutputPageRequest {
  /** The reader's position (an offset of the stream). */
  readonly position: number;
  /** The most bytes of output the page decodes. */
  readonly maxBytes: number;
  /** True once the stream can no longer grow: a character cut at its end is given up, not held back. */
  readonly complete: boolean;
  /** True when the position may fall inside a character (an offset the caller chose): skip its rest. */
  readonly alignStart: boolean;
}

export interface OutputPage {
  /** The decoded bytes, after a marker line when bytes were missed. */
  readonly text: string;
  /** Offset of the first byte `text` decodes. */
  readonly from: number;
  /** Offset just past the last byte `text` decodes: the reader's next position. */
  readonly next: number;
  /** Bytes from the position to `from` that the stream no longer held (0: nothing was missed). */
  readonly missedBytes: number;
  /** The stream's end when the page was read. */
  readonly end: number;
}

const EMPTY = new Uint8Array(0);

export async function readOutputPage(
  stream: TaskOutputStream | undefined,
  request: OutputPageRequest,
): Promise<OutputPage> {
  const end = stream?.end ?? 0;
  let position = request.position;
  let missed = 0;
  const retainedFrom = stream?.retainedFrom ?? 0;
  if (position < retainedFrom) {
    missed = retainedFrom - position;
    position = retainedFrom;
  }
  const available = Math.max(0, end - position);
  if (stream === undefined || available === 0) {
    return page('', position, position, missed, end, stream?.location);
  }
  const chunk = await stream.read(position, Math.min(available, request.maxBytes));
  let from = position;
  let bytes = chunk.bytes instanceof Uint8Array ? chunk.bytes : EMPTY;
  if (Number.isSafeInteger(chunk.from) && chunk.from > position) {
    // The window moved while we read: what lies between is gone too.
    missed += chunk.from - position;
    from = chunk.from;
  }
  if (bytes.length > request.maxBytes) bytes = bytes.subarray(0, request.maxBytes);
  let start = 0;
  if (request.alignStart || missed > 0) {
    // A character whose head is not ours: its rest is skipped (and counted when bytes were missed).
    start = leadingContinuationBytes(bytes);
    if (missed > 0) missed += start;
  }
  const atEnd = from + bytes.length >= end;
  const stop = request.complete && atEnd ? bytes.length : start + completeUtf8Length(bytes.subarray(start));
  const text = Buffer.from(bytes.buffer, bytes.byteOffset + start, stop - start).toString('utf8');
  return page(text, from + start, from + stop, missed, end, stream.location);
}

function page(
  text: string,
  from: number,
  next: number,
  missedBytes: number,
  end: number,
  location: string | undefined,
): OutputPage {
  if (missedBytes === 0) return { text, from, next, missedBytes, end };
  const marker = formatTruncationMarker(
    location === undefined
      ? { skippedBytes: missedBytes }
      : { skippedBytes: missedBytes, outputFile: location },
  );
  // The marker is a line of its own, so a reader that concatenates pages keeps it apart from what follows.
  return { text: `${marker}\n${text}`, from, next, missedBytes, end };
}
