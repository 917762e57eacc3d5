/**
 * Unknown option keys: `defineOptions` rejects a key its declaration lacks before any value is read, so a
 * typo or an old name fails with `UNKNOWN_OPTION` (with a "did you mean") instead of silently doing nothing.
 */
import { UnknownOptionError } from './errors.js';

export interface UnknownOptionsCheck {
  /** The function (or options) the object is handed to, as the message names it: `createPtyProducer`. */
  readonly where: string;
  /** Where the object sits inside the caller's options (`pty`), so keys are reported as `pty.shell`. */
  readonly path?: string;
  /** Old names mapped to their new ones, suggested whatever their spelling distance. */
  readonly renamed?: Readonly<Record<string, string>>;
}

/**
 * Throws `UnknownOptionError` when `options` has an own enumerable string key not in `known`. A value of
 * `undefined` for a known key is fine; a non-object `options` is left to the caller's own validation.
 */
export function rejectUnknownOptions(
  options: unknown,
  known: readonly string[],
  check: UnknownOptionsCheck,
): void {
  if (typeof options !== 'object' || options === null) return;
  const unknown = Object.keys(options).filter((key) => !known.includes(key));
  const [first, ...others] = unknown;
  if (first === undefined) return;
  const prefix = check.path === undefined ? '' : `${check.path}.`;
  const renamed =
    check.renamed !== undefined && Object.hasOwn(check.renamed, first) ? check.renamed[first] : undefined;
  const suggestion = renamed !== undefined && known.includes(renamed) ? renamed : closestKey(first, known);
  throw new UnknownOptionError(
    check.where,
    `${prefix}${first}`,
    (options as Record<string, unknown>)[first],
    known.map((key) => `${prefix}${key}`),
    suggestion === undefined ? undefined : `${prefix}${suggestion}`,
    others.map((key) => `${prefix}${key}`),
  );
}

/**
 * The one known key closest to `key`: equal ignoring case, else within a small edit distance (1 for keys
 * up to 4 characters, 2 up to 7, else 3). Undefined when none is that close, or two are equally close.
 */
export function closestKey(key: string, known: readonly string[]): string | undefined {
  const lower = key.toLowerCase();
  const limit = key.length <= 4 ? 1 : key.length <= 7 ? 2 : 3;
  let best: string | undefined;
  let bestDistance = limit + 1;
  let tied = false;
  for (const candidate of known) {
    const distance = editDistance(lower, candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
      tied = false;
    } else if (distance === bestDistance) {
      tied = true;
    }
  }
  return tied ? undefined : best;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent transpositions. */
function editDistance(left: string, right: string): number {
  const rows = left.length + 1;
  const columns = right.length + 1;
  const table: number[] = new Array(rows * columns).fill(0);
  const at = (row: number, column: number) => table[row * columns + column] ?? 0;
  for (let row = 0; row < rows; row++) table[row * columns] = row;
  for (let column = 0; column < columns; column++) table[column] = column;
  for (let row = 1; row < rows; row++) {
    for (let column = 1; column < columns; column++) {
      const cost = left[row - 1] === right[column - 1] ? 0 : 1;
      let distance = Math.min(
        at(row - 1, column) + 1,
        at(row, column - 1) + 1,
        at(row - 1, column - 1) + cost,
      );
      if (
        row > 1 &&
        column > 1 &&
        left[row - 1] === right[column - 2] &&
        left[row - 2] === right[column - 1]
      ) {
        distance = Math.min(distance, at(row - 2, column - 2) + 1);
      }
      table[row * columns + column] = distance;
    }
  }
  return at(rows - 1, columns - 1);
}
