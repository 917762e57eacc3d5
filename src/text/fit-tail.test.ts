import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fitTail } from './fit-tail.js';
import { findTruncationMarkers, formatTruncationMarker } from './truncation-marker.js';
import { utf8ByteLength } from './utf8.js';

describe('fitTail', () => {
  it('returns the text and its suffix unchanged when they fit', () => {
    expect(fitTail('out\n', 100, { suffix: '[status: running]' })).toBe('out\n[status: running]');
    expect(fitTail('out', 100, { suffix: '[status: running]' })).toBe('out\n[status: running]');
    expect(fitTail('', 100, { suffix: '[status: running]' })).toBe('[status: running]');
  });

  it('keeps the tail and the suffix, announcing the cut with one marker', () => {
    const text = `${'x'.repeat(100)}\nlast line`;
    const fitted = fitTail(text, 60, { suffix: '[status: completed]', outputFile: '/out' });
    expect(utf8ByteLength(fitted)).toBeLessThanOrEqual(60);
    expect(fitted.endsWith('\n[status: completed]')).toBe(true);
    expect(fitted).toMatch(/^\[\.\.\. \d+ bytes skipped \.\.\.\]\n/);
    // The file name did not fit in 60 bytes with any output; the shorter marker did.
    const fittedWide = fitTail(text, 90, { suffix: '[status: completed]', outputFile: '/out' });
    expect(fittedWide).toBe(
      '[... 87 bytes skipped; full output: /out ...]\nxxxxxxxxxxxxx\nlast line\n[status: completed]',
    );
  });

  it('reuses the producer marker instead of adding a second one', () => {
    const producer = formatTruncationMarker({ skippedBytes: 5000, outputFile: '/spill/bash-1.log' });
    const text = `${producer}\n${'a'.repeat(200)}\ntail`;
    const fitted = fitTail(text, 120, { suffix: '[status: running]' });
    const markers = findTruncationMarkers(fitted);
    expect(markers).toHaveLength(1);
    expect(markers[0]?.outputFile).toBe('/spill/bash-1.log');
    // 5000 the producer skipped, plus the output bytes cut here (not the old marker's own bytes).
    const kept = fitted.slice(markers[0]?.end, fitted.length - '\n[status: running]'.length);
    expect(markers[0]?.skippedBytes).toBe(5000 + (200 + 1 + 4) - utf8ByteLength(kept));
    expect(utf8ByteLength(fitted)).toBeLessThanOrEqual(120);
  });

  it('absorbs a producer marker the cut would split or start with', () => {
    const text = `aaaa\n${formatTruncationMarker({ skippedBytes: 10 })}\nbb`;
    expect(fitTail(text, 40)).toBe(text);
    const fitted = fitTail(text, 30);
    expect(findTruncationMarkers(fitted)).toHaveLength(1);
    expect(fitted).toBe('[... 15 bytes skipped ...]\nbb');
  });

  it('degrades with tiny budgets: shorter marker, bare marker, no marker, then the suffix alone', () => {
    const text = 'y'.repeat(200);
    const suffix = '[status: running]';
    expect(fitTail(text, 30, { suffix, outputFile: '/a/very/long/path' })).toBe(`[...]\nyyyyyy\n${suffix}`);
    expect(fitTail(text, 22, { suffix })).toBe(`yyyy\n${suffix}`);
    expect(fitTail(text, 18, { suffix })).toBe(suffix);
    expect(fitTail(text, 10, { suffix })).toBe('[status: r');
    expect(fitTail(text, 0, { suffix })).toBe('');
  });

  it('keeps multi-byte characters whole', () => {
    const fitted = fitTail('中'.repeat(100), 40);
    expect(Buffer.from(fitted).toString()).toBe(fitted);
    expect(utf8ByteLength(fitted)).toBeLessThanOrEqual(40);
  });

  it('stays within the budget and ends with the suffix whenever the suffix fits (property)', () => {
    const marker = fc
      .record({ skippedBytes: fc.nat(100_000), file: fc.option(fc.constantFrom('/f', '/spill/out.log')) })
      .map(({ skippedBytes, file }) =>
        formatTruncationMarker(file === null ? { skippedBytes } : { skippedBytes, outputFile: file }),
      );
    const piece = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 40 }), marker, fc.constant('\n'));
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), fc.integer({ min: 0, max: 200 }), (pieces, budget) => {
        const text = pieces.join('\n');
        const suffix = '[status: completed (exit code 0)]';
        const fitted = fitTail(text, budget, { suffix });
        expect(utf8ByteLength(fitted)).toBeLessThanOrEqual(budget);
        expect(Buffer.from(fitted).toString()).toBe(fitted);
        if (budget > utf8ByteLength(suffix)) expect(fitted.endsWith(suffix)).toBe(true);
      }),
    );
  });
});
