/**
 * UTF-8 boundaries at the byte level. Output arrives in chunks cut anywhere; these helpers keep every
 * cut (between chunks, between stdout and stderr, at a read limit) on a character boundary.
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
 * Splits one source's chunks so each piece it emits ends on a character boundary. At most three bytes
 * are held back, until the rest of their character arrives or `flush()` gives them up.
 */
export class Utf8ChunkAligner {
  #carry: Buffer | undefined;

  /** The complete characters `chunk` finishes, in up to two pieces; holds back an unfinished tail. */
  push(chunk: Buffer, emit: (piece: Buffer) => void): void {
    let rest = chunk;
    const carry = this.#carry;
    if (carry !== undefined) {
      this.#carry = undefined;
      const missing = utf8SequenceLength(carry[0]!) - carry.length;
      let taken = 0;
      while (taken < missing && taken < rest.length && isContinuationByte(rest[taken]!)) taken += 1;
      if (taken < missing && taken === rest.length) {
        // Still unfinished: keep waiting for the rest of the character.
        this.#carry = Buffer.concat([carry, rest]);
        return;
      }
      // Complete, or cut short by a byte that cannot continue it: either way it goes out now.
      emit(taken === 0 ? carry : Buffer.concat([carry, rest.subarray(0, taken)]));
      rest = rest.subarray(taken);
    }
    if (rest.length === 0) return;
    const complete = completeUtf8Length(rest);
    if (complete > 0) emit(complete === rest.length ? rest : rest.subarray(0, complete));
    if (complete < rest.length) this.#carry = Buffer.from(rest.subarray(complete));
  }

  /** Gives up a held-back tail at the end of the stream. */
  flush(emit: (piece: Buffer) => void): void {
    const carry = this.#carry;
    this.#carry = undefined;
    if (carry !== undefined && carry.length > 0) emit(carry);
  }

  get heldBytes(): number {
    return this.#carry?.length ?? 0;
  }
}
