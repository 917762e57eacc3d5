/**
 * A live terminal panel of background tasks: spinner, elapsed time, output bytes and status per task,
 * redrawn in place on a TTY. Without a TTY it prints one line per status change instead.
 */
import type { Writable } from 'node:stream';
import {
  createTrustedCaller,
  systemClock,
  type TaskService,
  type TaskSnapshot,
  taskFact,
} from '../tasks/index.js';

export const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const caller = createTrustedCaller('task-panel');

export interface TaskPanelOptions {
  readonly tasks: TaskService;
  readonly out: Writable & { isTTY?: boolean; columns?: number };
  /** Redraws in place (a TTY). Default: `out.isTTY`. */
  readonly live?: boolean;
  /** Redraw period of the live panel. Default 100 ms. */
  readonly intervalMs?: number;
  /** Shown tasks at most (the newest). Default 8. */
  readonly maxRows?: number;
  readonly now?: () => number;
}

export class TaskPanel {
  readonly #options: Required<Omit<TaskPanelOptions, 'tasks' | 'out'>> &
    Pick<TaskPanelOptions, 'tasks' | 'out'>;
  readonly #unsubscribe: () => void;
  readonly #lastStatus = new Map<string, string>();
  #timer: NodeJS.Timeout | undefined;
  #frame = 0;
  #drawnLines = 0;
  #closed = false;

  constructor(options: TaskPanelOptions) {
    this.#options = {
      live: options.out.isTTY === true,
      intervalMs: 100,
      maxRows: 8,
      now: systemClock.now,
      ...options,
    };
    this.#unsubscribe = options.tasks.onTasksChanged((change) => this.#onChange(change.task), { caller });
    if (this.#options.live) {
      this.#timer = setInterval(() => this.#redraw(), this.#options.intervalMs);
      this.#timer.unref();
    }
  }

  /** Prints a log line above the panel. */
  log(line: string): void {
    if (this.#closed) return;
    this.#clear();
    this.#options.out.write(`${line}\n`);
    this.#redraw();
  }

  close(): void {
    if (this.#closed) return;
    this.#redraw();
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#unsubscribe();
    this.#drawnLines = 0;
  }

  #onChange(task: TaskSnapshot): void {
    if (this.#options.live || !task.isBackgrounded) return;
    const status = task.status;
    if (this.#lastStatus.get(task.id) === status) return;
    this.#lastStatus.set(task.id, status);
    this.#options.out.write(`  [panel] ${this.#row(task, '·')}\n`);
  }

  #rows(): string[] {
    const tasks = this.#options.tasks
      .list(caller)
      .filter((task) => task.isBackgrounded)
      .slice(-this.#options.maxRows);
    if (tasks.length === 0) return [];
    const spinner = SPINNER[this.#frame % SPINNER.length]!;
    return ['── background tasks ──', ...tasks.map((task) => this.#row(task, spinner))];
  }

  #row(task: TaskSnapshot, spinner: string): string {
    return formatTaskRow(
      task,
      spinner,
      this.#options.now(),
      Math.max(40, (this.#options.out.columns ?? 100) - 2),
    );
  }

  #clear(): void {
    if (!this.#options.live || this.#drawnLines === 0) return;
    this.#options.out.write(`\x1b[${this.#drawnLines}F\x1b[J`);
    this.#drawnLines = 0;
  }

  #redraw(): void {
    if (!this.#options.live || this.#closed) return;
    this.#frame += 1;
    this.#clear();
    const rows = this.#rows();
    if (rows.length > 0) this.#options.out.write(`${rows.join('\n')}\n`);
    this.#drawnLines = rows.length;
  }
}

/** One task as a panel row: mark, id, status, elapsed time, output bytes, exit code, label; cut to `width`. */
export function formatTaskRow(task: TaskSnapshot, spinner: string, now: number, width: number): string {
  const live = task.status === 'running' || task.status === 'stopping';
  const mark = live ? spinner : task.status === 'completed' ? '✓' : task.status === 'killed' ? '■' : '✗';
  const end = task.endedAt ?? now;
  const elapsed = `${((end - task.startedAt) / 1000).toFixed(1)}s`;
  const bytes = typeof task.detail.outputBytes === 'number' ? formatBytes(task.detail.outputBytes) : '';
  const exit = typeof task.detail.exitCode === 'number' ? ` exit ${task.detail.exitCode}` : '';
  const line = `${mark} ${task.id.padEnd(9)} ${task.status.padEnd(9)} ${elapsed.padStart(6)} ${bytes.padStart(8)}${exit}${scheduleColumn(task, live, now)}  ${task.label}`;
  return line.length > width ? `${line.slice(0, width - 1)}…` : line;
}

/** A schedule's firings and when the next is due (` fired 1/3, next in 2.0s, missed: run once`); '' for other kinds. */
function scheduleColumn(task: TaskSnapshot, live: boolean, now: number): string {
  const progress = taskFact(task, 'schedule');
  if (progress === undefined) return '';
  const next =
    live && progress.nextAt !== null
      ? `, next in ${waitText(progress.nextAt - now)}`
      : live
        ? ', next when idle'
        : '';
  const missed = live ? `, missed: ${progress.missed === 'skip' ? 'skip' : 'run once'}` : '';
  return ` fired ${progress.fired}/${progress.times}${next}${missed}`;
}

/** A wait as a person reads it: `4.2s` under a minute, then `9m 45s`, `3h 05m`, `2d 03h`. */
export function waitText(ms: number): string {
  const seconds = Math.max(0, ms) / 1000;
  if (seconds < 60) return `${seconds.toFixed(1)}s`;
  const two = (value: number) => String(value).padStart(2, '0');
  const whole = Math.floor(seconds);
  if (whole < 3600) return `${Math.floor(whole / 60)}m ${two(whole % 60)}s`;
  if (whole < 86_400) return `${Math.floor(whole / 3600)}h ${two(Math.floor((whole % 3600) / 60))}m`;
  return `${Math.floor(whole / 86_400)}d ${two(Math.floor((whole % 86_400) / 3600))}h`;
}

export interface RunningRowsOptions {
  /** The spinner frame. */
  readonly frame: number;
  /** The terminal's width; rows are cut to fit one line. */
  readonly columns: number;
  readonly now: number;
  /** Task rows shown at most (the newest); the rest are counted in one more line. */
  readonly maxRows: number;
}

/**
 * The live rows of running background work, for a panel above a prompt: a header, one row per task (the
 * newest `maxRows`) and a line counting the others. No rows when nothing runs.
 */
export function runningTaskRows(tasks: readonly TaskSnapshot[], options: RunningRowsOptions): string[] {
  const running = tasks.filter(
    (task) => task.isBackgrounded && (task.status === 'running' || task.status === 'stopping'),
  );
  if (running.length === 0) return [];
  const width = Math.max(20, options.columns - 1);
  const spinner = SPINNER[options.frame % SPINNER.length]!;
  const shown = running.slice(-options.maxRows);
  const header = `── ${running.length} running in the background (Ctrl-B moves a command here; /stop <id>) ──`;
  const rows = [header.length > width ? `${header.slice(0, width - 1)}…` : header];
  for (const task of shown) rows.push(formatTaskRow(task, spinner, options.now, width));
  if (running.length > shown.length)
    rows.push(`  … and ${running.length - shown.length} more (/tasks lists them)`);
  return rows;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
