/**
 * Fits text into a UTF-8 byte budget keeping its tail: the newest output matters most. A reserved suffix
 * (a status line) is always kept; what is cut is announced by one truncation marker at the head, which
 * absorbs any marker the producer already wrote in the cut region instead of stacking a second one.
 */
import {
  BARE_TRUNCATION_MARKER,
  findTruncationMarkers,
  formatTruncationMarker,
  type LocatedTruncationMarker,
} from './truncation-marker.js';
import { truncateUtf8Head, truncateUtf8Tail, utf8ByteLength } from './utf8.js';

export interface FitTailOptions {
  /** Appended on its own line and always kept (cut only if it alone exceeds the budget). */
  readonly suffix?: string;
  /** Named in the marker when no absorbed producer marker names a file. */
  readonly outputFile?: string;
}

/** Joins a body and a suffix with exactly one line break between them. */
function join(body: string, suffix: string): string {
  if (suffix === '') return body;
  if (body === '') return suffix;
  return body.endsWith('\n') ? `${body}${suffix}` : `${body}\n${suffix}`;
}

/**
 * Returns `text` followed by `suffix`, bounded to `maxBytes` UTF-8 bytes. Unchanged when it fits.
 * Otherwise the head of `text` is replaced by a truncation marker counting the skipped bytes (plus
 * the bytes of any producer markers it absorbs). With too little room, the marker loses its file name,
 * then shrinks to `[...]`, then goes; the suffix goes last, cut at its end.
 */
export function fitTail(text: string, maxBytes: number, options: FitTailOptions = {}): string {
  const suffix = options.suffix ?? '';
  const whole = join(text, suffix);
  if (!Number.isFinite(maxBytes)) return whole;
  if (utf8ByteLength(whole) <= maxBytes) return whole;

  const suffixBytes = suffix === '' ? 0 : utf8ByteLength(suffix) + 1;
  if (suffixBytes >= maxBytes) return truncateUtf8Head(suffix, maxBytes);
  const room = maxBytes - suffixBytes;

  const markers = findTruncationMarkers(text);
  const producerSkipped = markers.reduce((sum, marker) => sum + marker.skippedBytes, 0);
  const files = markers.flatMap((marker) => (marker.outputFile === undefined ? [] : [marker.outputFile]));
  if (options.outputFile !== undefined) files.push(options.outputFile);
  const longestFile = files.reduce<string | undefined>(
    (longest, file) =>
      longest === undefined || utf8ByteLength(file) > utf8ByteLength(longest) ? file : longest,
    undefined,
  );

  // An upper bound of the marker's size: the count can only be smaller than everything there is.
  const upperCount = producerSkipped + utf8ByteLength(text);
  const candidates: Array<(skipped: number, file: string | undefined) => string> = [
    (skipped, file) =>
      formatTruncationMarker(
        file === undefined ? { skippedBytes: skipped } : { skippedBytes: skipped, outputFile: file },
      ),
    (skipped) => formatTruncationMarker({ skippedBytes: skipped }),
    () => BARE_TRUNCATION_MARKER,
  ];
  for (const render of candidates) {
    const markerBytes = utf8ByteLength(render(upperCount, longestFile)) + 1;
    if (markerBytes > room) continue;
    const cut = chooseCut(text, room - markerBytes, markers);
    const skipped = skippedBytesOf(text, cut, markers);
    const file = fileOf(cut, markers) ?? options.outputFile;
    const kept = text.slice(cut);
    return join(kept === '' ? render(skipped, file) : `${render(skipped, file)}\n${kept}`, suffix);
  }
  // No room for any marker: the bare tail.
  return join(truncateUtf8Tail(text, room), suffix);
}

/** Where the kept tail starts: within the budget, never inside a marker, never right at one. */
function chooseCut(text: string, keepBytes: number, markers: readonly LocatedTruncationMarker[]): number {
  let cut = text.length - truncateUtf8Tail(text, keepBytes).length;
  for (const marker of markers) {
    // A marker cut in half, or one the kept text would start with, is absorbed into the new one.
    if (marker.start <= cut && cut < marker.end) cut = marker.end;
  }
  return cut;
}

function skippedBytesOf(text: string, cut: number, markers: readonly LocatedTruncationMarker[]): number {
  let skipped = utf8ByteLength(text.slice(0, cut));
  for (const marker of markers) {
    if (marker.end > cut) break;
    skipped += marker.skippedBytes - utf8ByteLength(text.slice(marker.start, marker.end));
  }
  return skipped;
}

function fileOf(cut: number, markers: readonly LocatedTruncationMarker[]): string | undefined {
  let file: string | undefined;
  for (const marker of markers) {
    if (marker.end > cut) break;
    if (marker.outputFile !== undefined) file = marker.outputFile;
  }
  return file;
}
