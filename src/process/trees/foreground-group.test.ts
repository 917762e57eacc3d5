import { describe, expect, it } from 'vitest';
import { parseForegroundGroup, readForegroundGroup } from './foreground-group.js';

describe('parseForegroundGroup', () => {
  it('reads field 8 after the command name, even one with spaces and parentheses', () => {
    const stat = '4242 (a) b (c)) S 4200 4242 4242 34816 4250 4194304 0 0 0 0 0 0 0 0 20 0 1 0 77409 0 0';
    expect(parseForegroundGroup(stat)).toBe(4250);
  });

  it('has no group for a process without a terminal, or for malformed text', () => {
    expect(parseForegroundGroup('7 (daemon) S 1 7 7 0 -1 4194304 0 0')).toBeUndefined();
    expect(parseForegroundGroup('garbage')).toBeUndefined();
  });

  it('reads nothing for a pid that does not exist', () => {
    expect(readForegroundGroup(2 ** 30)).toBeUndefined();
  });
});
