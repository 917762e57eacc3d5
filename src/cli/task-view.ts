/**
 * The terminal's task manager for `errand chat`: a list of the session's background tasks a person moves
 * through with the arrow keys, one task's live output (following its end, or scrolled back), and a stop
 * with confirmation. It draws rows for the live region above the prompt and reads keys while it is open;
 * everything else (the streamed reply, the prompt) goes on around it.
 */

import type { TaskSnapshot } from '../tasks/index.js';
import { stripTerminalEscapes } from '../text/index.js';
import { formatTaskRow, SPINNER } from './task-panel.js';

export interface TaskViewPorts {
  /** The session's background tasks, oldest first. */
  list(): readonly TaskSnapshot[];
  /** The newest output of a task (at most the view's byte budget), or undefined when none is held. */
  output(taskId: string): string | undefined;
  /** Stops a task on the person's request; resolves to the line to print. */
  stop(taskId: string): Promise<string>;
  /** Prints a finished line above the live region. */
  print(text: string): void;
  /** The view changed: redraw the live region. */
  changed(): void;
  /** The view closed: the prompt takes the keys again. */
  closed(): void;
  now(): number;
}

export interface KeyPress {
  readonly name?: string | undefined;
  readonly ctrl?: boolean | undefined;
  readonly sequence?: string | undefined;
}

type Mode = 'list' | 'output' | 'confirm';

/** Lines kept for scrolling back through a task's output. */
export const TASK_VIEW_SCROLLBACK_LINES = 2000;

export class TaskView {
  readonly #ports: TaskViewPorts;
  #open = false;
  #mode: Mode = 'list';
  /** The selected task, by id, so new tasks do not move the selection. */
  #selected: string | undefined;
  /** Lines above the output's end the view is scrolled back; 0 follows the output. */
  #scroll = 0;
  /** The mode a confirmation returns to. */
  #before: Mode = 'list';
  #pageRows = 10;

  constructor(ports: TaskViewPorts) {
    this.#ports = ports;
  }

  get isOpen(): boolean {
    return this.#open;
  }

  open(): void {
    this.#open = true;
    this.#mode = 'list';
    this.#scroll = 0;
    const tasks = this.#ports.list();
    if (this.#selected === undefined || !tasks.some((task) => task.id === this.#selected)) {
      this.#selected = tasks.at(-1)?.id;
    }
    this.#ports.changed();
  }

  close(): void {
    if (!this.#open) return;
    this.#open = false;
    this.#ports.changed();
    this.#ports.closed();
  }

  /** Handles one key while open. */
  key(key: KeyPress): void {
    if (!this.#open) return;
    const name = key.name ?? key.sequence ?? '';
    if (key.ctrl && (name === 'c' || name === 't')) {
      this.close();
      return;
    }
    if (this.#mode === 'confirm') this.#confirmKey(name);
    else if (this.#mode === 'output') this.#outputKey(name);
    else this.#listKey(name);
    this.#ports.changed();
  }

  /** The rows the live region shows for the view, at most `height`, each cut to `columns`. */
  rows(columns: number, height: number, frame: number): string[] {
    if (!this.#open) return [];
    const width = Math.max(20, columns - 1);
    const cut = (line: string) => (line.length > width ? `${line.slice(0, width - 1)}…` : line);
    const task = this.#task();
    if (this.#mode === 'confirm' && task) {
      return [cut(`── stop ${task.id} (${task.label})? y stops it, n or Esc keeps it running ──`)];
    }
    if (this.#mode === 'output' && task) return this.#outputRows(task, width, height).map(cut);
    const tasks = this.#ports.list();
    const header = '── tasks: ↑↓ move · Enter output · s stop · Esc back to the prompt ──';
    if (tasks.length === 0) return [cut(header), '  (no background tasks)'];
    const spinner = SPINNER[frame % SPINNER.length] as string;
    const shown = Math.max(1, height - 1);
    const index = Math.max(
      0,
      tasks.findIndex((entry) => entry.id === this.#selected),
    );
    const first = Math.min(Math.max(0, index - shown + 1), Math.max(0, tasks.length - shown));
    const rows = tasks.slice(first, first + shown).map((entry) => {
      const marker = entry.id === this.#selected ? '›' : ' ';
      return `${marker} ${formatTaskRow(entry, spinner, this.#ports.now(), width - 2)}`;
    });
    return [cut(header), ...rows.map(cut)];
  }

  #task(): TaskSnapshot | undefined {
    return this.#ports.list().find((task) => task.id === this.#selected);
  }

  #listKey(name: string): void {
    const tasks = this.#ports.list();
    const index = tasks.findIndex((task) => task.id === this.#selected);
    if (name === 'up' || name === 'k') this.#selected = tasks[Math.max(0, index - 1)]?.id ?? this.#selected;
    else if (name === 'down' || name === 'j')
      this.#selected = tasks[Math.min(tasks.length - 1, index + 1)]?.id ?? this.#selected;
    else if ((name === 'return' || name === 'enter') && this.#task()) {
      this.#mode = 'output';
      this.#scroll = 0;
    } else if (name === 's') this.#askStop('list');
    else if (name === 'escape' || name === 'q') this.close();
  }

  #outputKey(name: string): void {
    const page = Math.max(1, this.#pageRows - 1);
    if (name === 'up' || name === 'k') this.#scroll += 1;
    else if (name === 'down' || name === 'j') this.#scroll = Math.max(0, this.#scroll - 1);
    else if (name === 'pageup') this.#scroll += page;
    else if (name === 'pagedown') this.#scroll = Math.max(0, this.#scroll - page);
    else if (name === 'home') this.#scroll = TASK_VIEW_SCROLLBACK_LINES;
    else if (name === 'end' || name === 'f') this.#scroll = 0;
    else if (name === 's') this.#askStop('output');
    else if (name === 'escape' || name === 'q' || name === 'backspace' || name === 'left') {
      this.#mode = 'list';
      this.#scroll = 0;
    }
  }

  #askStop(from: Mode): void {
    const task = this.#task();
    if (!task) return;
    if (task.status !== 'running') {
      this.#ports.print(`(${task.id} is ${task.status}: nothing to stop)\n`);
      return;
    }
    this.#before = from;
    this.#mode = 'confirm';
  }

  #confirmKey(name: string): void {
    const task = this.#task();
    this.#mode = this.#before;
    if (name !== 'y' || !task) return;
    void this.#ports.stop(task.id).then(
      (line) => {
        this.#ports.print(line);
        this.#ports.changed();
      },
      (error: unknown) =>
        this.#ports.print(`(not stopped: ${error instanceof Error ? error.message : String(error)})\n`),
    );
  }

  #outputRows(task: TaskSnapshot, width: number, height: number): string[] {
    const text = stripTerminalEscapes(this.#ports.output(task.id) ?? '').replace(/\r\n?/g, '\n');
    const lines = text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    const kept = lines.slice(-TASK_VIEW_SCROLLBACK_LINES);
    const bodyRows = Math.max(1, height - 1);
    this.#pageRows = bodyRows;
    const maxScroll = Math.max(0, kept.length - bodyRows);
    this.#scroll = Math.min(this.#scroll, maxScroll);
    const end = kept.length - this.#scroll;
    const body = kept.slice(Math.max(0, end - bodyRows), end).map((line) => `  ${line}`);
    const where =
      this.#scroll === 0
        ? 'following'
        : `${this.#scroll} line${this.#scroll === 1 ? '' : 's'} back (End follows)`;
    const state = task.status === 'running' ? '' : ` · ${task.status}`;
    const header = `── ${task.id} ${where}${state}: ↑↓ PgUp PgDn scroll · s stop · Esc back ──`;
    return [header.slice(0, width), ...(body.length === 0 ? ['  (no output yet)'] : body)];
  }
}
