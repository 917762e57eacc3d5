/**
 * UTF-8 byte budgets. Cuts land on code point boundaries, so a budgeted string never ends (or starts)
 * with half a character; a lone surrogate counts as the 3 bytes of the replacement character it encodes to.
 */

/** The number of bytes `text` takes in UTF-8. */
export function utf8ByteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

function widthOf(code: number): number {
  if (code < 0x80) return 1;
  if (code < 0x800) return 2;
  return 3;
}

function assertBudget(maxBytes: number): void {
  if (typeof maxBytes !== 'number' || Number.isNaN(maxBytes)) {
    throw new TypeError(`Expected \`maxBytes\` to be a number, got ${String(maxBytes)} (${typeof maxBytes})`);
  }
}

/** The longest prefix of `text` that fits in `maxBytes` UTF-8 bytes. */
export function truncateUtf8Head(text: string, maxBytes: number): string {
  assertBudget(maxBytes);
  if (maxBytes <= 0) return '';
  // Every UTF-16 unit encodes to at most 3 bytes: a short enough string fits without measuring.
  if (text.length * 3 <= maxBytes) return text;
  let bytes = 0;
  let index = 0;
  while (index < text.length) {
    const code = text.charCodeAt(index);
    let width = widthOf(code);
    let units = 1;
    if (isHighSurrogate(code) && index + 1 < text.length && isLowSurrogate(text.charCodeAt(index + 1))) {
      width = 4;
      units = 2;
    }
    if (bytes + width > maxBytes) break;
    bytes += width;
    index += units;
  }
  return text.slice(0, index);
}

/** The longest suffix of `text` that fits in `maxBytes` UTF-8 bytes. */
export function truncateUtf8Tail(text: string, maxBytes: number): string {
  assertBudget(maxBytes);
  if (maxBytes <= 0) return '';
  if (text.length * 3 <= maxBytes) return text;
  let bytes = 0;
  let index = text.length;
  while (index > 0) {
    const code = text.charCodeAt(index - 1);
    let width = widthOf(code);
    let units = 1;
    if (isLowSurrogate(code) && index >= 2 && isHighSurrogate(text.charCodeAt(index - 2))) {
      width = 4;
      units = 2;
    }
    if (bytes + width > maxBytes) break;
    bytes += width;
    index -= units;
  }
  return text.slice(index);
}
