/** The chat's task view on its own: selection by id, the stop confirmation, scrolling bounds, closing. */
import { describe, expect, it } from 'vitest';
import type { TaskSnapshot } from '../tasks/index.js';
import { TaskView, type TaskViewPorts } from './task-view.js';

function task(id: string, status = 'running'): TaskSnapshot {
  return { id, status, label: `label of ${id}`, startedAt: 0, endedAt: undefined, detail: {} } as never;
}

function harness(tasks: TaskSnapshot[], output = '') {
  const printed: string[] = [];
  const stopped: string[] = [];
  let closed = 0;
  const ports: TaskViewPorts = {
    list: () => tasks,
    output: () => output,
    stop: async (taskId) => {
      stopped.push(taskId);
      return `(stopping ${taskId})\n`;
    },
    print: (text) => printed.push(text),
    changed: () => {},
    closed: () => {
      closed += 1;
    },
    now: () => 1000,
  };
  const view = new TaskView(ports);
  return { view, printed, stopped, closed: () => closed, setOutput: (text: string) => (output = text) };
}

const selected = (rows: string[]) => rows.find((row) => row.startsWith('›'))?.split(/\s+/)[2];

describe('TaskView', () => {
  it('keeps its selection on the same task when a newer one appears', () => {
    const tasks = [task('bash-1'), task('bash-2')];
    const { view } = harness(tasks);
    view.open();
    expect(selected(view.rows(100, 10, 0))).toBe('bash-2');
    view.key({ name: 'up' });
    tasks.push(task('bash-3'));
    expect(selected(view.rows(100, 10, 0))).toBe('bash-1');
    view.key({ name: 'up' });
    expect(selected(view.rows(100, 10, 0))).toBe('bash-1');
  });

  it('stops only after y, and says when there is nothing to stop', async () => {
    const tasks = [task('bash-1', 'completed'), task('bash-2')];
    const { view, printed, stopped } = harness(tasks);
    view.open();
    view.key({ name: 's' });
    expect(view.rows(100, 10, 0)[0]).toMatch(/^── stop bash-2 \(label of bash-2\)\? y stops it/);
    view.key({ name: 'n' });
    expect(stopped).toEqual([]);
    view.key({ name: 'up' });
    view.key({ name: 's' });
    expect(printed).toEqual(['(bash-1 is completed: nothing to stop)\n']);
    view.key({ name: 'down' });
    view.key({ name: 's' });
    view.key({ name: 'y' });
    await Promise.resolve();
    await Promise.resolve();
    expect(stopped).toEqual(['bash-2']);
    expect(printed.at(-1)).toBe('(stopping bash-2)\n');
  });

  it('scrolls back no further than the output, and follows again at End', () => {
    const lines = Array.from({ length: 30 }, (_, index) => `line ${index + 1}`).join('\n');
    const { view } = harness([task('bash-1')], `${lines}\n`);
    view.open();
    view.key({ name: 'return' });
    let rows = view.rows(100, 6, 0);
    expect(rows[0]).toMatch(/^── bash-1 following/);
    expect(rows.slice(1)).toEqual(['  line 26', '  line 27', '  line 28', '  line 29', '  line 30']);
    view.key({ name: 'home' });
    rows = view.rows(100, 6, 0);
    expect(rows[0]).toMatch(/^── bash-1 25 lines back/);
    expect(rows[1]).toBe('  line 1');
    view.key({ name: 'end' });
    expect(view.rows(100, 6, 0)[0]).toMatch(/following/);
  });

  it('closes on Esc from the list and on Ctrl-C anywhere, handing the keys back once', () => {
    const { view, closed } = harness([task('bash-1')]);
    view.open();
    view.key({ name: 'return' });
    view.key({ name: 'c', ctrl: true });
    expect(view.isOpen).toBe(false);
    expect(view.rows(100, 10, 0)).toEqual([]);
    view.open();
    view.key({ name: 'escape' });
    expect(view.isOpen).toBe(false);
    expect(closed()).toBe(2);
  });
});
