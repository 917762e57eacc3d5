/** Line-oriented helpers: the last lines of an output, one-line labels, and terminal escape removal. */

/** The last `maxLines` lines of `text` (a trailing newline does not count as an empty last line). */
export function lastLines(text: string, maxLines: number): string {
  if (maxLines <= 0 || text === '') return '';
  const body = text.endsWith('\n') ? text.slice(0, -1) : text;
  let index = body.length;
  for (let count = 0; count < maxLines; count += 1) {
    const newline = body.lastIndexOf('\n', index - 1);
    if (newline < 0) return body;
    index = newline;
  }
  return body.slice(index + 1);
}

/** Collapses line breaks and runs of whitespace so a label fits on one line. */
export function toSingleLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** Shortens `text` to at most `maxChars` characters, ending with "…" when it was cut. */
export function shortenText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  if (maxChars <= 1) return '…'.slice(0, Math.max(0, maxChars));
  let end = maxChars - 1;
  // Do not split a surrogate pair.
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}…`;
}

// CSI (ESC [ ... final), OSC (ESC ] ... BEL or ESC \), and two-character escapes.
const ANSI_PATTERN =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: terminal escapes are control characters
  /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]|\u009b[0-?]*[ -/]*[@-~]/g;

/** Removes terminal escape sequences (colours, cursor moves, titles) and turns `\r\n` into `\n`. */
export function stripTerminalEscapes(text: string): string {
  return text.replace(ANSI_PATTERN, '').replace(/\r\n/g, '\n');
}
