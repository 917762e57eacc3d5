import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { takeUtf8Tail } from './utf8-tail.js';

describe('takeUtf8Tail', () => {
  it('keeps the longest suffix that fits, never splitting a character', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.nat(64), (text, maxBytes) => {
        const { text: tail, skippedBytes } = takeUtf8Tail(text, maxBytes);
        const tailBytes = Buffer.byteLength(tail);
        expect(tailBytes).toBeLessThanOrEqual(maxBytes);
        expect(text.endsWith(tail)).toBe(true);
        expect(skippedBytes + tailBytes).toBe(Buffer.byteLength(text));
        // Byte-identical to the end of the encoding: no character was split or replaced.
        expect(Buffer.from(tail).equals(Buffer.from(text).subarray(skippedBytes))).toBe(true);
      }),
    );
  });

  it('returns short texts unchanged', () => {
    expect(takeUtf8Tail('héllo', 6)).toEqual({ text: 'héllo', skippedBytes: 0 });
    expect(takeUtf8Tail('héllo', 0)).toEqual({ text: '', skippedBytes: 6 });
  });
});
