/**
 * UTF-8 at the byte level: where a sequence starts and ends, so a cut between chunks, between readers'
 * pages or at a read limit lands on a character boundary. Bytes that are not valid UTF-8 are never held
 * back: a stream of arbitrary bytes still moves forward.
 */

/** How many bytes the sequence led by `lead` spans; 1 for ASCII and for bytes that cannot lead. */
export function utf8SequenceLength(lead: number): number {
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 1;
}

export function isContinuationByte(byte: number): boolean {
  return (byte & 0xc0) === 0x80;
}

/**
 * The length of the longest prefix of `bytes[0, end)` that does not stop inside a multi-byte sequence.
 * Bytes that are not valid UTF-8 are never held back.
 */
export function completeUtf8Length(bytes: Uint8Array, end = bytes.length): number {
  const lowest = Math.max(0, end - 4);
  let index = end - 1;
  while (index >= lowest && isContinuationByte(bytes[index]!)) index -= 1;
  if (index < lowest) return end;
  const length = utf8SequenceLength(bytes[index]!);
  return end - index < length ? index : end;
}

/**
 * How many continuation bytes `bytes` starts with (at most 3): the rest of a character whose head lies
 * before the slice, which a reader starting there skips.
 */
export function leadingContinuationBytes(bytes: Uint8Array): number {
  let count = 0;
  while (count < 3 && count < bytes.length && isContinuationByte(bytes[count]!)) count += 1;
  return count;
}
