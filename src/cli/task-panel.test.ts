/**
 * The panel `errand demo` draws: redrawn in place on a terminal (rendered here by a headless xterm, so the
 * test reads the screen a person sees, not escape codes), a line per status change without one.
 */
import xterm from '@xterm/headless';
import { afterEach, describe, expect, it } from 'vitest';
import { createTaskService } from '../registry/index.js';
import { createTrustedCaller, type TaskService } from '../tasks/index.js';
import { scriptedTask } from '../testing/index.js';
import { formatTaskRow, TaskPanel, waitText } from './task-panel.js';

const { Terminal } = xterm;
const services: TaskService[] = [];
const trusted = createTrustedCaller('test');

afterEach(async () => {
  for (const service of services.splice(0)) await service.dispose();
});

function service(): TaskService {
  const tasks = createTaskService();
  tasks.attachController('test');
  services.push(tasks);
  return tasks;
}

/** A writable "terminal": what is written goes through xterm; `screen()` is what shows. */
function terminal(cols = 80, rows = 12) {
  const xt = new Terminal({ cols, rows, allowProposedApi: true, convertEol: true });
  let pending = Promise.resolve();
  const out = {
    isTTY: true,
    columns: cols,
    write(chunk: string) {
      pending = pending.then(() => new Promise<void>((resolve) => xt.write(chunk, resolve)));
      return true;
    },
  };
  const screen = async () => {
    await pending;
    const buffer = xt.buffer.active;
    const lines: string[] = [];
    for (let row = 0; row < xt.rows; row += 1) {
      lines.push(buffer.getLine(buffer.viewportY + row)?.translateToString(true) ?? '');
    }
    while (lines.length > 0 && lines.at(-1) === '') lines.pop();
    return lines;
  };
  return { out, screen, dispose: () => xt.dispose() };
}

describe('TaskPanel', () => {
  it('redraws in place on a terminal: one row per background task, log lines above it', async () => {
    const tasks = service();
    const tty = terminal();
    const panel = new TaskPanel({
      tasks,
      out: tty.out as never,
      intervalMs: 60_000,
      now: () => Date.now(),
    });
    try {
      const build = scriptedTask({ kind: 'bash', label: 'npm run build' });
      const tests = scriptedTask({ kind: 'bash', label: 'npm test' });
      const first = await tasks.start(build.spec);
      const second = await tasks.start(tests.spec);
      panel.log('started two');
      let screen = await tty.screen();
      expect(screen[0]).toBe('started two');
      expect(screen[1]).toBe('── background tasks ──');
      expect(screen[2]).toMatch(/^\S bash-1 +running .* npm run build$/);
      expect(screen[3]).toMatch(/^\S bash-2 +running .* npm test$/);
      expect(screen).toHaveLength(4);
      build.settle({ status: 'completed', detail: { exitCode: 0 } });
      await tasks.wait(first.id, 1000, trusted);
      panel.log('one done');
      screen = await tty.screen();
      // Redrawn in place: the old panel rows are gone, not stacked.
      expect(screen.filter((line) => line === '── background tasks ──')).toHaveLength(1);
      expect(screen.slice(0, 2)).toEqual(['started two', 'one done']);
      expect(screen[3]).toMatch(/^✓ bash-1 +completed .* exit 0 {2}npm run build$/);
      expect(screen[4]).toMatch(/^\S bash-2 +running/);
      tests.settle({ status: 'failed', error: 'exit 2' });
      await tasks.wait(second.id, 1000, trusted);
      panel.close();
      screen = await tty.screen();
      expect(screen.at(-1)).toMatch(/^✗ bash-2 +failed/);
    } finally {
      panel.close();
      tty.dispose();
    }
  });

  it('without a terminal prints one line per status change of background work only', async () => {
    const tasks = service();
    const written: string[] = [];
    const out = { isTTY: false, write: (chunk: string) => written.push(chunk) > 0 };
    const panel = new TaskPanel({ tasks, out: out as never, now: () => Date.now() });
    try {
      const background = scriptedTask({ kind: 'bash', label: 'sleep 5' });
      const foreground = scriptedTask({ kind: 'bash', label: 'ls', background: false });
      const started = await tasks.start(background.spec);
      await tasks.start(foreground.spec);
      await tasks.kill(started.id, trusted);
      await tasks.wait(started.id, 1000, trusted);
      foreground.settle();
      expect(written).toEqual([
        expect.stringMatching(/^ {2}\[panel\] · bash-1 +running +\d+\.\ds .* sleep 5\n$/),
        expect.stringMatching(/^ {2}\[panel\] · bash-1 +stopping +\d+\.\ds .* sleep 5\n$/),
        expect.stringMatching(/^ {2}\[panel\] ■ bash-1 +killed +\d+\.\ds .* sleep 5\n$/),
      ]);
    } finally {
      panel.close();
    }
  });

  it('cuts a row to the width', () => {
    const row = formatTaskRow(
      {
        id: 'bash-1',
        status: 'running',
        startedAt: 0,
        endedAt: undefined,
        detail: { outputBytes: 2048 },
        label: 'x'.repeat(200),
      } as never,
      '⠋',
      1500,
      40,
    );
    expect(row).toHaveLength(40);
    expect(row).toMatch(/^⠋ bash-1 +running +1\.5s +2\.0 KiB +x*…$/);
  });

  it("shows a schedule's firings, when the next is due and its missed-firing policy", () => {
    const schedule = (status: string, nextAt: number | null) =>
      formatTaskRow(
        {
          id: 'schedule-1',
          status,
          startedAt: 0,
          endedAt: status === 'running' ? undefined : 6000,
          detail: {
            schedule: { when: 'every 2 s, 3 times', fired: 1, times: 3, nextAt, missed: 'run_once' },
          },
          label: 'schedule: Check the deploy.',
        } as never,
        '⠋',
        2500,
        120,
      );
    expect(schedule('running', 4000)).toMatch(
      /^⠋ schedule-1 running +2\.5s +fired 1\/3, next in 1\.5s, missed: run once {2}schedule: Check the deploy\.$/,
    );
    expect(schedule('completed', null)).toMatch(/^✓ schedule-1 completed +6\.0s +fired 1\/3 {2}schedule: /);
  });
});

describe('waitText', () => {
  it('reads as a person would: seconds under a minute, then minutes, hours and days with their next unit', () => {
    expect(waitText(-5)).toBe('0.0s');
    expect(waitText(1_500)).toBe('1.5s');
    expect(waitText(59_949)).toBe('59.9s');
    expect(waitText(60_000)).toBe('1m 00s');
    expect(waitText(585_000)).toBe('9m 45s');
    expect(waitText(3_600_000 + 5 * 60_000)).toBe('1h 05m');
    expect(waitText(2 * 86_400_000 + 3 * 3_600_000)).toBe('2d 03h');
  });
});
