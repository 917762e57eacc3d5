import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { truncateUtf8Head, truncateUtf8Tail, utf8ByteLength } from './utf8.js';

describe('UTF-8 byte budgets', () => {
  it('counts bytes, not characters', () => {
    expect(utf8ByteLength('aé中😀')).toBe(1 + 2 + 3 + 4);
  });

  it('cuts on code point boundaries, keeping the head or the tail', () => {
    const text = 'aé中😀b';
    expect(truncateUtf8Head(text, 3)).toBe('aé');
    expect(truncateUtf8Head(text, 5)).toBe('aé');
    expect(truncateUtf8Head(text, 6)).toBe('aé中');
    expect(truncateUtf8Head(text, 9)).toBe('aé中');
    expect(truncateUtf8Head(text, 10)).toBe('aé中😀');
    expect(truncateUtf8Tail(text, 4)).toBe('b');
    expect(truncateUtf8Tail(text, 5)).toBe('😀b');
    expect(truncateUtf8Tail(text, 7)).toBe('😀b');
    expect(truncateUtf8Tail(text, 8)).toBe('中😀b');
  });

  it('returns nothing for a budget of zero or less and everything for a large one', () => {
    expect(truncateUtf8Head('abc', 0)).toBe('');
    expect(truncateUtf8Tail('abc', -5)).toBe('');
    expect(truncateUtf8Tail('abc', Number.POSITIVE_INFINITY)).toBe('abc');
  });

  it('counts a lone surrogate as the replacement character it encodes to', () => {
    expect(truncateUtf8Tail('a\ud800', 3)).toBe('\ud800');
    expect(truncateUtf8Head('\udc00a', 3)).toBe('\udc00');
  });

  it('never exceeds the budget and never splits a character (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.nat(64), (text, budget) => {
        for (const cut of [truncateUtf8Head(text, budget), truncateUtf8Tail(text, budget)]) {
          expect(utf8ByteLength(cut)).toBeLessThanOrEqual(budget);
          expect(Buffer.from(cut, 'utf8').toString('utf8')).toBe(cut);
        }
        expect(text.startsWith(truncateUtf8Head(text, budget))).toBe(true);
        expect(text.endsWith(truncateUtf8Tail(text, budget))).toBe(true);
      }),
    );
  });
});
