import { describe, expect, it } from 'vitest';
import { encodeInput, encodeKey, isPtyKeyName, PTY_KEY_NAMES } from './keys.js';

describe('pty keys', () => {
  it('encodes editing and control keys as a terminal sends them', () => {
    expect(encodeKey('Enter')).toBe('\r');
    expect(encodeKey('Tab')).toBe('\t');
    expect(encodeKey('BackTab')).toBe('\u001b[Z');
    expect(encodeKey('Backspace')).toBe('\u007f');
    expect(encodeKey('Escape')).toBe('\u001b');
    expect(encodeKey('Delete')).toBe('\u001b[3~');
    expect(encodeKey('PageDown')).toBe('\u001b[6~');
    expect(encodeKey('F1')).toBe('\u001bOP');
    expect(encodeKey('F12')).toBe('\u001b[24~');
    expect(encodeKey('Ctrl-C')).toBe('\u0003');
    expect(encodeKey('Ctrl-D')).toBe('\u0004');
    expect(encodeKey('Ctrl-Z')).toBe('\u001a');
    expect(encodeKey('Ctrl-\\')).toBe('\u001c');
  });

  it('sends cursor keys in the mode the program selected', () => {
    expect(encodeKey('Up')).toBe('\u001b[A');
    expect(encodeKey('Left', { applicationCursorKeys: true })).toBe('\u001bOD');
    expect(encodeKey('Home', { applicationCursorKeys: false })).toBe('\u001b[H');
    expect(encodeKey('End', { applicationCursorKeys: true })).toBe('\u001bOF');
  });

  it('types text before pressing keys', () => {
    expect(encodeInput(':wq', ['Enter'])).toBe(':wq\r');
    expect(encodeInput('', ['Up', 'Enter'], { applicationCursorKeys: true })).toBe('\u001bOA\r');
  });

  it('knows exactly the listed names', () => {
    expect(PTY_KEY_NAMES).toContain('Ctrl-A');
    expect(new Set(PTY_KEY_NAMES).size).toBe(PTY_KEY_NAMES.length);
    for (const name of PTY_KEY_NAMES) expect(typeof encodeKey(name)).toBe('string');
    expect(isPtyKeyName('Enter')).toBe(true);
    expect(isPtyKeyName('enter')).toBe(false);
    expect(isPtyKeyName(13)).toBe(false);
  });
});
