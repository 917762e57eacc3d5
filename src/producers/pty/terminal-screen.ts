/**
 * Renders a program's terminal output to plain text with a headless xterm: escape sequences are
 * interpreted, not stripped, so colours vanish, `\r` overwrites and cursor moves land where a person would
 * see them. Memory is bounded by the scrollback. Two views:
 *
 * - `view()`: the current screen, non-consuming (for UIs and `pty_write`).
 * - `readDelta()`: consuming. In the normal buffer (line-oriented programs: shells, REPLs, builds) it
 *   returns, in order, every line that is new or changed since the last read: lines that scrolled into
 *   history unread, and screen lines whose text differs from what the last read (or `markScreenSeen`)
 *   showed. A line whose text has not changed is never repeated; wrapped rows are joined into one line.
 *   While a full-screen program holds the alternate screen (vim, top, less), a changed screen is returned
 *   whole after a header line, because rows of a redrawn screen mean nothing out of place.
 *
 * Lines that left the scrollback before any read are reported by `linesLost` (the caller names the raw
 * output file). A resize reflows wrapped rows, so the first read after one may repeat a few lines.
 */
import type { IBuffer, IMarker, Terminal } from '@xterm/headless';
import { truncateUtf8Tail, utf8ByteLength } from '../../text/index.js';
import type { HeadlessTerminalConstructor } from './pty-runtime.js';

/** Precedes the whole screen of a full-screen program in a delta. */
export const ALTERNATE_SCREEN_HEADER = '[full-screen program; its current screen:]';

export interface ScreenView {
  /** The visible screen as text: wrapped rows joined, trailing blank rows removed. */
  readonly text: string;
  readonly cols: number;
  readonly rows: number;
  /** 0-based cursor position within the screen. */
  readonly cursorRow: number;
  readonly cursorColumn: number;
  /** True while a full-screen program uses the alternate screen. */
  readonly alternateScreen: boolean;
  /** True when the head of the screen was cut to fit the byte budget. */
  readonly truncated: boolean;
}

export interface ScreenDelta {
  readonly text: string;
  /** True when lines left the scrollback before any read returned them. */
  readonly linesLost: boolean;
}

export interface TerminalScreenOptions {
  readonly cols: number;
  readonly rows: number;
  readonly scrollbackLines: number;
  /** The budget of `view().text`, in UTF-8 bytes. */
  readonly maxViewBytes: number;
  /** Told when a change listener throws; the other listeners still run. Default: ignored. */
  readonly onListenerError?: (error: unknown) => void;
}

interface LogicalLine {
  readonly firstRow: number;
  readonly lastRow: number;
  readonly text: string;
}

export class TerminalScreen {
  #terminal: Terminal | undefined;
  readonly #maxViewBytes: number;
  readonly #onListenerError: ((error: unknown) => void) | undefined;
  #pendingBytes = 0;
  readonly #listeners = new Set<() => void>();
  /** The first line the next read considers (the top of the screen at the last read). */
  #marker: IMarker | undefined;
  #markerLost = false;
  /** Text last shown to the reader, keyed by line offset from the marker. */
  #seen = new Map<number, string>();
  #seenAlternate: string | undefined;
  #frozen: { view: ScreenView; delta: ScreenDelta | undefined } | undefined;

  constructor(Terminal: HeadlessTerminalConstructor, options: TerminalScreenOptions) {
    this.#maxViewBytes = options.maxViewBytes;
    this.#onListenerError = options.onListenerError;
    this.#terminal = new Terminal({
      cols: options.cols,
      rows: options.rows,
      scrollback: options.scrollbackLines,
      allowProposedApi: true,
      logLevel: 'off',
    });
    this.#watchMarker(this.#terminal.registerMarker(0));
  }

  /** Bytes handed to the terminal and not parsed yet: the producer pauses the pty above a threshold. */
  get pendingBytes(): number {
    return this.#pendingBytes;
  }

  /** Whether arrow keys must be sent in application mode (`ESC O A` instead of `ESC [ A`). */
  get applicationCursorKeys(): boolean {
    return this.#terminal?.modes.applicationCursorKeysMode ?? false;
  }

  get cols(): number {
    return this.#terminal?.cols ?? this.#frozen?.view.cols ?? 0;
  }

  get rows(): number {
    return this.#terminal?.rows ?? this.#frozen?.view.rows ?? 0;
  }

  write(chunk: Uint8Array): void {
    const terminal = this.#terminal;
    if (terminal === undefined) return;
    this.#pendingBytes += chunk.byteLength;
    terminal.write(chunk, () => {
      this.#pendingBytes -= chunk.byteLength;
      if (this.#terminal !== undefined) this.#notify();
    });
  }

  /** Calls `listener` after each parsed chunk (the screen may have changed). Returns an unsubscribe. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** Resolves once everything written so far is parsed. */
  flush(): Promise<void> {
    const terminal = this.#terminal;
    if (terminal === undefined) return Promise.resolve();
    return new Promise((resolve) => terminal.write(new Uint8Array(0), resolve));
  }

  resize(cols: number, rows: number): void {
    this.#terminal?.resize(cols, rows);
    this.#notify();
  }

  view(): ScreenView {
    if (this.#frozen) return this.#frozen.view;
    const terminal = this.#terminal!;
    const buffer = terminal.buffer.active;
    const lines = logicalLines(buffer, buffer.baseY, buffer.baseY + terminal.rows);
    const full = joinLines(trimTrailingBlank(lines.map((line) => line.text)));
    const text = fitLinesTail(full, this.#maxViewBytes);
    return {
      text,
      cols: terminal.cols,
      rows: terminal.rows,
      cursorRow: buffer.cursorY,
      cursorColumn: buffer.cursorX,
      alternateScreen: buffer.type === 'alternate',
      truncated: text.length !== full.length,
    };
  }

  /** The consuming delta described in the module comment. */
  readDelta(): ScreenDelta {
    if (this.#frozen) {
      const delta = this.#frozen.delta ?? { text: '', linesLost: false };
      this.#frozen = { view: this.#frozen.view, delta: undefined };
      return delta;
    }
    const delta = this.#computeDelta();
    this.#advance();
    return delta;
  }

  /** Records the current screen as seen, so the next delta does not repeat it. */
  markScreenSeen(): void {
    const terminal = this.#terminal;
    if (terminal === undefined) return;
    const active = terminal.buffer.active;
    if (active.type === 'alternate') {
      this.#seenAlternate = this.#alternateText();
      return;
    }
    const start = this.#start();
    for (let row = active.baseY; row < active.baseY + terminal.rows && row < active.length; row += 1) {
      this.#seen.set(row - start, rowText(active, row));
    }
  }

  /**
   * Parses what is pending, keeps the final screen and the unread delta as text, and releases the
   * terminal. Reads keep working on the kept text; writes are ignored.
   */
  async freeze(): Promise<void> {
    if (this.#terminal === undefined) return;
    await this.flush();
    const terminal = this.#terminal;
    if (terminal === undefined) return;
    const view = this.view();
    const delta = this.#computeDelta();
    this.#frozen = { view, delta: delta.text === '' && !delta.linesLost ? undefined : delta };
    this.#terminal = undefined;
    this.#marker = undefined;
    this.#seen = new Map();
    this.#listeners.clear();
    terminal.dispose();
  }

  /** Runs every listener; one that throws neither reaches the terminal's parser nor stops the others. */
  #notify(): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener();
      } catch (error) {
        try {
          this.#onListenerError?.(error);
        } catch {
          // A failing error reporter has nowhere left to report to.
        }
      }
    }
  }

  #watchMarker(marker: IMarker | undefined): void {
    this.#marker = marker;
    this.#markerLost = false;
    marker?.onDispose(() => {
      // Only the current marker matters; disposing a replaced one is not a loss.
      if (this.#marker === marker && this.#terminal !== undefined) {
        this.#markerLost = true;
        this.#marker = undefined;
        this.#seen = new Map();
      }
    });
  }

  #start(): number {
    const marker = this.#marker;
    return marker !== undefined && !marker.isDisposed && marker.line >= 0 ? marker.line : 0;
  }

  #alternateText(): string {
    const terminal = this.#terminal!;
    const buffer = terminal.buffer.alternate;
    const lines = logicalLines(buffer, 0, terminal.rows);
    return joinLines(trimTrailingBlank(lines.map((line) => line.text)));
  }

  #computeDelta(): ScreenDelta {
    const terminal = this.#terminal!;
    const normal = terminal.buffer.normal;
    const start = this.#start();
    const lines = logicalLines(normal, start, normal.length);
    const changed = lines.filter((line) => {
      for (let row = line.firstRow; row <= line.lastRow; row += 1) {
        if (this.#seen.get(row - start) !== rowText(normal, row)) return true;
      }
      return false;
    });
    const parts = trimTrailingBlank(changed.map((line) => line.text));
    if (terminal.buffer.active.type === 'alternate') {
      const screen = this.#alternateText();
      if (screen !== this.#seenAlternate) parts.push(ALTERNATE_SCREEN_HEADER, screen);
    }
    return { text: joinLines(parts), linesLost: this.#markerLost };
  }

  /** Moves the read position to the top of the current screen and remembers what the screen shows. */
  #advance(): void {
    const terminal = this.#terminal!;
    const normal = terminal.buffer.normal;
    if (terminal.buffer.active.type === 'alternate') {
      this.#seenAlternate = this.#alternateText();
      // Markers can only be placed in the normal buffer while it is active: keep the old one.
      const start = this.#start();
      const seen = new Map<number, string>();
      for (let row = start; row < normal.length; row += 1) seen.set(row - start, rowText(normal, row));
      this.#seen = seen;
      this.#markerLost = false;
      return;
    }
    this.#seenAlternate = undefined;
    const previous = this.#marker;
    const marker = terminal.registerMarker(-normal.cursorY);
    this.#watchMarker(marker);
    previous?.dispose();
    const top = marker?.line ?? normal.baseY;
    const seen = new Map<number, string>();
    for (let row = top; row < normal.length; row += 1) seen.set(row - top, rowText(normal, row));
    this.#seen = seen;
  }
}

/** A row's text without trailing blanks (printed spaces included: they are invisible). */
function rowText(buffer: IBuffer, row: number): string {
  return trimEndSpaces(buffer.getLine(row)?.translateToString(true) ?? '');
}

function trimEndSpaces(text: string): string {
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === 32) end -= 1;
  return end === text.length ? text : text.slice(0, end);
}

/** Rows `[from, to)` grouped into logical lines: a wrapped row continues the line above it. */
function logicalLines(buffer: IBuffer, from: number, to: number): LogicalLine[] {
  const end = Math.min(to, buffer.length);
  const lines: LogicalLine[] = [];
  let row = Math.max(0, from);
  while (row < end) {
    const firstRow = row;
    let text = '';
    while (true) {
      const line = buffer.getLine(row);
      const continues = row + 1 < end && buffer.getLine(row + 1)?.isWrapped === true;
      // A row followed by its continuation is full width: keep its trailing spaces, they are content.
      const part = line?.translateToString(!continues) ?? '';
      text += continues ? part : trimEndSpaces(part);
      if (!continues) break;
      row += 1;
    }
    lines.push({ firstRow, lastRow: row, text });
    row += 1;
  }
  return lines;
}

function trimTrailingBlank(lines: string[]): string[] {
  let end = lines.length;
  while (end > 0 && lines[end - 1]!.trim() === '') end -= 1;
  return lines.slice(0, end);
}

function joinLines(lines: readonly string[]): string {
  return lines.join('\n');
}

/** The tail of `text` within `maxBytes`, starting at a line boundary when one is in reach. */
function fitLinesTail(text: string, maxBytes: number): string {
  if (utf8ByteLength(text) <= maxBytes) return text;
  const tail = truncateUtf8Tail(text, maxBytes);
  const newline = tail.indexOf('\n');
  return newline >= 0 && newline < tail.length - 1 ? tail.slice(newline + 1) : tail;
}
