/**
 * A program in a real pseudo-terminal (node-pty) whose output is rendered by a headless xterm, so a test
 * reads the screen a person would see: escape sequences applied, redraws in place, rows as they are.
 * Waits are driven by the program's output (checked after each write lands), never by a timer; a
 * deadline only turns a wait that can no longer succeed into a failure that shows the screen.
 */
import xterm from '@xterm/headless';

const { Terminal } = xterm;

export interface TerminalOptions {
  readonly cols?: number;
  readonly rows?: number;
  readonly cwd?: string;
  readonly env?: Record<string, string>;
}

export interface TerminalProgram {
  /** Types into the terminal (`\r` is Enter, `\x02` is Ctrl-B). */
  write(text: string): void;
  /** The visible rows, trailing blanks trimmed. */
  rows(): string[];
  /** The visible screen as one text. */
  screen(): string;
  /** Everything the program wrote so far, as raw text. */
  readonly raw: () => string;
  /** Resolves once the screen satisfies `predicate`; fails with the screen after `timeoutMs`. */
  waitFor(
    predicate: (screen: string, rows: string[]) => boolean,
    what: string,
    timeoutMs?: number,
  ): Promise<void>;
  /** Resolves with the exit code. */
  readonly exited: Promise<number>;
  /** Ends the program (SIGKILL) if it still runs. */
  kill(): void;
}

export async function spawnInTerminal(
  file: string,
  args: readonly string[],
  options: TerminalOptions = {},
): Promise<TerminalProgram> {
  const pty = await import('node-pty');
  const cols = options.cols ?? 100;
  const rows = options.rows ?? 30;
  const terminal = new Terminal({ cols, rows, scrollback: 1000, allowProposedApi: true });
  const child = pty.spawn(file, [...args], {
    cols,
    rows,
    cwd: options.cwd ?? process.cwd(),
    env: options.env ?? (process.env as Record<string, string>),
  });
  let raw = '';
  const checks = new Set<() => void>();
  child.onData((data) => {
    raw += data;
    terminal.write(data, () => {
      for (const check of [...checks]) check();
    });
  });
  let running = true;
  const exited = new Promise<number>((resolve) =>
    child.onExit(({ exitCode }) => {
      running = false;
      resolve(exitCode);
    }),
  );
  const visibleRows = (): string[] => {
    const buffer = terminal.buffer.active;
    const lines: string[] = [];
    for (let row = 0; row < terminal.rows; row += 1) {
      lines.push(buffer.getLine(buffer.viewportY + row)?.translateToString(true) ?? '');
    }
    while (lines.length > 0 && lines.at(-1) === '') lines.pop();
    return lines;
  };
  return {
    write: (text) => child.write(text),
    rows: visibleRows,
    screen: () => visibleRows().join('\n'),
    raw: () => raw,
    waitFor(predicate, what, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const lines = visibleRows();
          if (!predicate(lines.join('\n'), lines)) return;
          cleanup();
          resolve();
        };
        const deadline = setTimeout(() => {
          cleanup();
          reject(new Error(`The terminal never showed ${what}. Its screen:\n${visibleRows().join('\n')}`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(deadline);
          checks.delete(check);
        };
        checks.add(check);
        check();
      });
    },
    exited,
    kill() {
      if (running) child.kill('SIGKILL');
    },
  };
}
