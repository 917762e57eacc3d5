import { describe, expect, it } from 'vitest';
import { compileMonitorPattern } from './monitor-pattern.js';

function refusal(pattern: string, maxChars = 256): string | undefined {
  try {
    compileMonitorPattern(pattern, false, maxChars);
    return undefined;
  } catch (error) {
    expect(error).toMatchObject({ code: 'INVALID_MONITOR_PATTERN', context: { field: 'pattern' } });
    return (error as Error).message;
  }
}

describe('compileMonitorPattern', () => {
  it('accepts the patterns monitors are for', () => {
    for (const pattern of [
      'error|FAIL',
      '^\\s*at .+:\\d+:\\d+$',
      'Listening on (?:port )?\\d+',
      '(https?://)?localhost:\\d+',
      '[(+*]',
      '\\(a+\\)+',
      'x{2,3}(ab){2}',
      '.*foo.*bar',
    ]) {
      expect(refusal(pattern), pattern).toBeUndefined();
    }
    expect(compileMonitorPattern('fail', true, 10).test('FAILED')).toBe(true);
  });

  it('refuses a repeated group that repeats or alternates inside, and backreferences', () => {
    for (const pattern of [
      '(a+)+$',
      '(a*)*',
      '(?:a|ab)*c',
      '((x+))+',
      '(a{1,})+',
      '(\\w+\\s?){2,}',
      '(?<word>\\w)\\k<word>',
      '(a)\\1',
    ]) {
      expect(refusal(pattern), pattern).toMatch(/repeated group|backreferences/);
    }
  });

  it('refuses an empty, too long or malformed pattern, naming the field', () => {
    expect(refusal('')).toMatch(/`pattern`.*empty/);
    expect(refusal('a'.repeat(11), 10)).toMatch(/longer than 10 characters/);
    expect(refusal('(unclosed')).toMatch(/does not compile/);
  });
});
