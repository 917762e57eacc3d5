/**
 * The truncation marker: one line that says how many bytes of output were left out and, when known,
 * where the full output is. Producers write it where they cut; the output limit recognises it and
 * updates it instead of adding a second one.
 *
 *     [... 1234 bytes skipped; full output: /tmp/errand/bash-3.log ...]
 *     [... 1 byte skipped ...]
 */

export interface TruncationMarker {
  /** Bytes of output (not counting marker lines) the marker stands for. */
  readonly skippedBytes: number;
  /** Where the full output can be read, when the producer keeps it. */
  readonly outputFile?: string;
}

export interface LocatedTruncationMarker extends TruncationMarker {
  /** Index of the marker's first character in the searched text. */
  readonly start: number;
  /** Index just past the marker line, including its line break when it has one. */
  readonly end: number;
}

/** Matches one whole marker line (without its line break). */
export const TRUNCATION_MARKER_PATTERN =
  /^\[\.\.\. (\d{1,15}) bytes? skipped(?:; full output: ([^\n]+?))? \.\.\.\]$/;

const MARKER_LINES = /^\[\.\.\. (\d{1,15}) bytes? skipped(?:; full output: ([^\n]+?))? \.\.\.\]$/gm;

/** The shortest marker, used when a budget has no room for the full one. */
export const BARE_TRUNCATION_MARKER = '[...]';

/**
 * Formats a marker line (no line break). `outputFile` must be a single line; line breaks in it are
 * replaced by spaces so the marker stays one line.
 */
export function formatTruncationMarker(marker: TruncationMarker): string {
  const skipped = marker.skippedBytes;
  if (!Number.isSafeInteger(skipped) || skipped < 0) {
    throw new TypeError(
      `Expected \`skippedBytes\` to be a non-negative integer, got ${String(skipped)} (${typeof skipped})`,
    );
  }
  const unit = skipped === 1 ? 'byte' : 'bytes';
  const file = marker.outputFile === undefined ? '' : marker.outputFile.replace(/[\r\n]+/g, ' ').trim();
  return file === ''
    ? `[... ${skipped} ${unit} skipped ...]`
    : `[... ${skipped} ${unit} skipped; full output: ${file} ...]`;
}

/** Parses one marker line; undefined when `line` is not exactly a marker. */
export function parseTruncationMarker(line: string): TruncationMarker | undefined {
  const match = TRUNCATION_MARKER_PATTERN.exec(line);
  if (!match) return undefined;
  const skippedBytes = Number(match[1]);
  return match[2] === undefined ? { skippedBytes } : { skippedBytes, outputFile: match[2] };
}

/** Every marker that occupies a whole line of `text`, in order. */
export function findTruncationMarkers(text: string): LocatedTruncationMarker[] {
  const found: LocatedTruncationMarker[] = [];
  for (const match of text.matchAll(MARKER_LINES)) {
    const start = match.index ?? 0;
    let end = start + match[0].length;
    if (text[end] === '\n') end += 1;
    const skippedBytes = Number(match[1]);
    found.push(
      match[2] === undefined
        ? { skippedBytes, start, end }
        : { skippedBytes, outputFile: match[2], start, end },
    );
  }
  return found;
}
