/**
 * UTF-8 boundaries for command output. Output arrives in chunks cut anywhere; the aligner keeps every cut
 * (between chunks, between stdout and stderr) on a character boundary. The byte-level rules are text/'s.
 */

import { completeUtf8Length, isContinuationByte, utf8SequenceLength } from '../../text/index.js';

export { completeUtf8Length, isContinuationByte, utf8SequenceLength } from '../../text/index.js';

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
