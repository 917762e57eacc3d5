import { describe, expect, it } from 'vitest';
import { lastLines, shortenText, stripTerminalEscapes, toSingleLine } from './lines.js';

describe('line helpers', () => {
  it('keeps the last lines, ignoring one trailing newline', () => {
    expect(lastLines('a\nb\nc\n', 2)).toBe('b\nc');
    expect(lastLines('a\nb\nc', 5)).toBe('a\nb\nc');
    expect(lastLines('a\nb', 0)).toBe('');
    expect(lastLines('', 3)).toBe('');
  });

  it('makes labels one line and shortens them with an ellipsis', () => {
    expect(toSingleLine('  npm\n  test\t--watch ')).toBe('npm test --watch');
    expect(shortenText('abcdefgh', 5)).toBe('abcd…');
    expect(shortenText('abc', 5)).toBe('abc');
    expect(shortenText('abc😀def', 5)).toBe('abc…');
  });

  it('strips colours, cursor moves and titles', () => {
    expect(stripTerminalEscapes('\u001b[31mred\u001b[0m \u001b]0;title\u0007ok\r\n')).toBe('red ok\n');
  });
});
