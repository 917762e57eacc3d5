/** Keeps the end of a text within a UTF-8 byte budget without splitting a character. */

export interface Utf8Tail {
  readonly text: string;
  /** Bytes of the original text that were cut from its start. */
  readonly skippedBytes: number;
}

/** The longest suffix of `text` whose UTF-8 encoding fits in `maxBytes`. */
export function takeUtf8Tail(text: string, maxBytes: number): Utf8Tail {
  const total = Buffer.byteLength(text, 'utf8');
  if (total <= maxBytes) return { text, skippedBytes: 0 };
  if (maxBytes <= 0) return { text: '', skippedBytes: total };
  const bytes = Buffer.from(text, 'utf8');
  let start = bytes.length - maxBytes;
  // Continuation bytes look like 10xxxxxx; step forward to the next character boundary.
  while (start < bytes.length && ((bytes[start] ?? 0) & 0xc0) === 0x80) start += 1;
  return { text: bytes.subarray(start).toString('utf8'), skippedBytes: start };
}
