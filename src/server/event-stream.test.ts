import { describe, expect, it } from 'vitest';
import { formatEventId, parseEventId } from './event-stream.js';

describe('event stream ids', () => {
  it('round-trip within one stream and reject any other', () => {
    expect(parseEventId('abc', formatEventId('abc', 42))).toBe(42);
    expect(parseEventId('abc', 'abc:0')).toBe(0);
    expect(parseEventId('abc', 'other:42')).toBeNull();
    expect(parseEventId('abc', '42')).toBeNull();
    expect(parseEventId('abc', 'abc:-1')).toBeNull();
    expect(parseEventId('abc', 'abc:4.5')).toBeNull();
    expect(parseEventId('abc', 'abc:9999999999999999')).toBeNull();
  });
});
