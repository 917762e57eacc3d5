/**
 * Named keys a model can press in a pseudo-terminal, and the bytes a terminal sends for them. Arrow,
 * Home and End keys follow the program's cursor-key mode, as a real terminal does (full-screen programs
 * switch to application mode and expect `ESC O A` for Up).
 */

const CONTROL_LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'.split('');

/** Every key name `pty_write` accepts, in the order the schema lists them. */
export const PTY_KEY_NAMES = [
  'Enter',
  'Tab',
  'BackTab',
  'Backspace',
  'Escape',
  'Space',
  'Up',
  'Down',
  'Right',
  'Left',
  'Home',
  'End',
  'PageUp',
  'PageDown',
  'Insert',
  'Delete',
  'F1',
  'F2',
  'F3',
  'F4',
  'F5',
  'F6',
  'F7',
  'F8',
  'F9',
  'F10',
  'F11',
  'F12',
  ...CONTROL_LETTERS.map((letter) => `Ctrl-${letter}` as const),
  'Ctrl-\\',
  'Ctrl-]',
] as const;

export type PtyKeyName = (typeof PTY_KEY_NAMES)[number];

const FIXED: Readonly<Record<string, string>> = {
  Enter: '\r',
  Tab: '\t',
  BackTab: '\u001b[Z',
  Backspace: '\u007f',
  Escape: '\u001b',
  Space: ' ',
  PageUp: '\u001b[5~',
  PageDown: '\u001b[6~',
  Insert: '\u001b[2~',
  Delete: '\u001b[3~',
  F1: '\u001bOP',
  F2: '\u001bOQ',
  F3: '\u001bOR',
  F4: '\u001bOS',
  F5: '\u001b[15~',
  F6: '\u001b[17~',
  F7: '\u001b[18~',
  F8: '\u001b[19~',
  F9: '\u001b[20~',
  F10: '\u001b[21~',
  F11: '\u001b[23~',
  F12: '\u001b[24~',
  'Ctrl-\\': '\u001c',
  'Ctrl-]': '\u001d',
};

/** Final characters of the cursor keys: `ESC [ x` normally, `ESC O x` in application mode. */
const CURSOR: Readonly<Record<string, string>> = {
  Up: 'A',
  Down: 'B',
  Right: 'C',
  Left: 'D',
  Home: 'H',
  End: 'F',
};

export function isPtyKeyName(value: unknown): value is PtyKeyName {
  return typeof value === 'string' && (PTY_KEY_NAMES as readonly string[]).includes(value);
}

export interface KeyEncodingOptions {
  /** The program enabled application cursor keys (DECCKM). */
  readonly applicationCursorKeys?: boolean;
}

/** The bytes a terminal sends when `key` is pressed. */
export function encodeKey(key: PtyKeyName, options: KeyEncodingOptions = {}): string {
  const fixed = FIXED[key];
  if (fixed !== undefined) return fixed;
  const cursor = CURSOR[key];
  if (cursor !== undefined) return options.applicationCursorKeys ? `\u001bO${cursor}` : `\u001b[${cursor}`;
  // Ctrl-<letter>: the letter's code minus 64 (Ctrl-C is 0x03, the interrupt character).
  const letter = key.slice('Ctrl-'.length);
  return String.fromCharCode(letter.charCodeAt(0) - 64);
}

/** Text followed by keys, as one string to write. */
export function encodeInput(
  text: string,
  keys: readonly PtyKeyName[],
  options: KeyEncodingOptions = {},
): string {
  return text + keys.map((key) => encodeKey(key, options)).join('');
}
