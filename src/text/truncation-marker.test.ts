import { describe, expect, it } from 'vitest';
import {
  findTruncationMarkers,
  formatTruncationMarker,
  parseTruncationMarker,
  TRUNCATION_MARKER_PATTERN,
} from './truncation-marker.js';

describe('truncation marker', () => {
  it('has one recognisable format', () => {
    expect(formatTruncationMarker({ skippedBytes: 1234, outputFile: '/tmp/errand/bash-3.log' })).toBe(
      '[... 1234 bytes skipped; full output: /tmp/errand/bash-3.log ...]',
    );
    expect(formatTruncationMarker({ skippedBytes: 1 })).toBe('[... 1 byte skipped ...]');
    expect(TRUNCATION_MARKER_PATTERN.test('[... 0 bytes skipped ...]')).toBe(true);
  });

  it('round-trips through parse, including paths with spaces', () => {
    const marker = { skippedBytes: 42, outputFile: '/tmp/my dir/out.log' };
    expect(parseTruncationMarker(formatTruncationMarker(marker))).toEqual(marker);
    expect(parseTruncationMarker('[... 7 bytes skipped ...]')).toEqual({ skippedBytes: 7 });
    expect(parseTruncationMarker('x [... 7 bytes skipped ...]')).toBeUndefined();
  });

  it('keeps a file name with line breaks on one line', () => {
    expect(formatTruncationMarker({ skippedBytes: 2, outputFile: '/a\nb' })).toBe(
      '[... 2 bytes skipped; full output: /a b ...]',
    );
  });

  it('rejects a negative or fractional count', () => {
    expect(() => formatTruncationMarker({ skippedBytes: -1 })).toThrow(/skippedBytes/);
    expect(() => formatTruncationMarker({ skippedBytes: 1.5 })).toThrow(/skippedBytes/);
  });

  it('finds markers only when they occupy a whole line', () => {
    const text =
      'head\n[... 10 bytes skipped; full output: /f ...]\nmiddle [... 3 bytes skipped ...]\n[... 5 bytes skipped ...]';
    const found = findTruncationMarkers(text);
    expect(found.map((marker) => marker.skippedBytes)).toEqual([10, 5]);
    expect(found[0]).toMatchObject({ outputFile: '/f', start: 5 });
    expect(text.slice(found[0]?.start, found[0]?.end)).toBe('[... 10 bytes skipped; full output: /f ...]\n');
  });
});
