import pkg from '@xterm/headless';
import { describe, expect, it } from 'vitest';
import type { HeadlessTerminalConstructor } from './pty-runtime.js';
import { ALTERNATE_SCREEN_HEADER, TerminalScreen } from './terminal-screen.js';

const { Terminal } = pkg as unknown as { Terminal: HeadlessTerminalConstructor };

function screen(
  options: { cols?: number; rows?: number; scrollbackLines?: number; maxViewBytes?: number } = {},
) {
  const terminal = new TerminalScreen(Terminal, {
    cols: options.cols ?? 20,
    rows: options.rows ?? 5,
    scrollbackLines: options.scrollbackLines ?? 100,
    maxViewBytes: options.maxViewBytes ?? 8192,
  });
  const feed = async (text: string) => {
    terminal.write(Buffer.from(text, 'utf8'));
    await terminal.flush();
  };
  return { terminal, feed };
}

describe('TerminalScreen', () => {
  it('isolates change listeners: one that throws is reported and the others still run', async () => {
    const errors: unknown[] = [];
    const terminal = new TerminalScreen(Terminal, {
      cols: 20,
      rows: 5,
      scrollbackLines: 100,
      maxViewBytes: 8192,
      onListenerError: (error) => errors.push(error),
    });
    let calls = 0;
    terminal.onChange(() => {
      throw new Error('listener broke');
    });
    terminal.onChange(() => {
      calls += 1;
    });
    terminal.write(Buffer.from('hello\r\n', 'utf8'));
    await terminal.flush();
    terminal.write(Buffer.from('again\r\n', 'utf8'));
    await terminal.flush();
    expect(calls).toBeGreaterThanOrEqual(2);
    expect(errors.length).toBe(calls);
    expect(String(errors[0])).toContain('listener broke');
    expect(terminal.view().text).toContain('again');
  });

  it('renders what a person would see: no colours, carriage returns overwrite, cursor moves land', async () => {
    const { terminal, feed } = screen();
    await feed('\u001b[1;31mred\u001b[0m text\r\n');
    await feed('50%\r100%\r\n');
    await feed('abcdef\u001b[3D\u001b[KXY\r\n');
    expect(terminal.view()).toMatchObject({
      text: 'red text\n100%\nabcXY',
      cursorRow: 3,
      cursorColumn: 0,
      alternateScreen: false,
      truncated: false,
    });
  });

  it('joins wrapped rows into one line', async () => {
    const { terminal, feed } = screen({ cols: 10 });
    await feed('0123456789abcdefghij-tail\r\n');
    expect(terminal.view().text).toBe('0123456789abcdefghij-tail');
    expect(terminal.readDelta().text).toBe('0123456789abcdefghij-tail');
  });

  it('returns each new or changed line once, in order, across reads', async () => {
    const { terminal, feed } = screen();
    await feed('one\r\ntwo\r\n$ ');
    expect(terminal.readDelta()).toEqual({ text: 'one\ntwo\n$', linesLost: false });
    expect(terminal.readDelta().text).toBe('');
    // The prompt line changes (typed text); two lines are new; nothing above is repeated.
    await feed('ls\r\nfile-a\r\n$ ');
    expect(terminal.readDelta().text).toBe('$ ls\nfile-a\n$');
    // Lines that scroll into history unchanged are not repeated either.
    await feed('\r\n\r\n\r\n\r\nlater');
    expect(terminal.readDelta().text).toBe('\n\n\nlater');
  });

  it('returns lines that scrolled into history before they were read', async () => {
    const { terminal, feed } = screen({ rows: 3 });
    await feed('1\r\n2\r\n3\r\n4\r\n5\r\n6');
    expect(terminal.readDelta().text).toBe('1\n2\n3\n4\n5\n6');
  });

  it('says when lines left the scrollback unread, and keeps what is left', async () => {
    const { terminal, feed } = screen({ rows: 3, scrollbackLines: 2 });
    await feed('1\r\n2\r\n3\r\n4\r\n5\r\n6\r\n7');
    expect(terminal.readDelta()).toEqual({ text: '3\n4\n5\n6\n7', linesLost: true });
    await feed('\r\n8');
    expect(terminal.readDelta()).toEqual({ text: '8', linesLost: false });
  });

  it('counts a screen marked as seen as read', async () => {
    const { terminal, feed } = screen();
    await feed('prompt> ');
    terminal.markScreenSeen();
    expect(terminal.readDelta().text).toBe('');
    await feed('typed');
    expect(terminal.readDelta().text).toBe('prompt> typed');
  });

  it("returns a full-screen program's whole screen after a header when it changed", async () => {
    const { terminal, feed } = screen();
    await feed('before\r\n');
    expect(terminal.readDelta().text).toBe('before');
    await feed('\u001b[?1049h\u001b[H\u001b[2Jtop - load 0.1\r\nPID CMD');
    expect(terminal.view().alternateScreen).toBe(true);
    expect(terminal.readDelta().text).toBe(`${ALTERNATE_SCREEN_HEADER}\ntop - load 0.1\nPID CMD`);
    expect(terminal.readDelta().text).toBe('');
    await feed('\u001b[1;12H0.5');
    expect(terminal.readDelta().text).toBe(`${ALTERNATE_SCREEN_HEADER}\ntop - load 0.5\nPID CMD`);
    // Leaving the alternate screen restores the normal one; only what is new there is returned.
    await feed('\u001b[?1049lafter\r\n');
    expect(terminal.view().alternateScreen).toBe(false);
    expect(terminal.readDelta().text).toBe('after');
  });

  it('bounds the view to its byte budget, keeping the bottom of the screen', async () => {
    const { terminal, feed } = screen({ cols: 40, rows: 10, maxViewBytes: 256 });
    for (let line = 0; line < 10; line += 1) await feed(`${String(line).repeat(39)}\r\n`);
    const view = terminal.view();
    expect(view.truncated).toBe(true);
    expect(Buffer.byteLength(view.text)).toBeLessThanOrEqual(256);
    expect(view.text.endsWith('9'.repeat(39))).toBe(true);
    expect(view.text.startsWith('\n')).toBe(false);
  });

  it('keeps the final screen and the unread delta as text once frozen', async () => {
    const { terminal, feed } = screen();
    await feed('a\r\nb');
    expect(terminal.readDelta().text).toBe('a\nb');
    await feed('\r\nc');
    await terminal.freeze();
    terminal.write(Buffer.from('ignored'));
    expect(terminal.view().text).toBe('a\nb\nc');
    expect(terminal.readDelta().text).toBe('c');
    expect(terminal.readDelta().text).toBe('');
    expect(terminal.view().text).toBe('a\nb\nc');
  });

  it('follows the cursor-key mode the program selects', async () => {
    const { terminal, feed } = screen();
    expect(terminal.applicationCursorKeys).toBe(false);
    await feed('\u001b[?1h');
    expect(terminal.applicationCursorKeys).toBe(true);
  });
});
