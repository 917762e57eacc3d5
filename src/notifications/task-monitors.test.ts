import { afterEach, describe, expect, it, vi } from 'vitest';
import { createTaskService } from '../registry/index.js';
import { createManualClock, type ManualClock } from '../tasks/clock.js';
import { createOwner, type Owner, type TaskService } from '../tasks/index.js';
import { type ScriptedTask, scriptedTask } from '../testing/index.js';
import type { MonitorEvent } from './format-monitor.js';
import { createTaskMonitors, type TaskMonitors, type TaskMonitorsOptions } from './task-monitors.js';

interface Bed {
  readonly tasks: TaskService;
  readonly clock: ManualClock;
  readonly monitors: TaskMonitors;
  readonly owner: Owner;
  readonly sent: MonitorEvent[];
  start(options?: Parameters<typeof scriptedTask>[0]): Promise<{ task: ScriptedTask; id: string }>;
}

const beds: Bed[] = [];

afterEach(async () => {
  for (const bed of beds.splice(0)) {
    bed.monitors.dispose();
    await bed.tasks.dispose();
  }
});

function bed(options: Partial<Omit<TaskMonitorsOptions, 'tasks' | 'notify' | 'clock'>> = {}): Bed {
  const clock = createManualClock(1_000_000);
  const tasks = createTaskService({ now: clock.now });
  tasks.attachController('test');
  const sent: MonitorEvent[] = [];
  const monitors = createTaskMonitors({
    tasks,
    clock,
    notify: (_owner, _taskId, event) => {
      sent.push(event);
      return undefined;
    },
    ...options,
  });
  const owner = createOwner('watcher');
  const created: Bed = {
    tasks,
    clock,
    monitors,
    owner,
    sent,
    async start(taskOptions = {}) {
      const task = scriptedTask({ kind: 'bash', label: 'npm run dev', owner, ...taskOptions });
      const { id } = await tasks.start(task.spec);
      return { task, id };
    },
  };
  beds.push(created);
  return created;
}

/** Lets queued deliveries run. */
function deliveries(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Waits until the monitor has scheduled its flush, then lets the clock reach it and the sends go out. */
async function flush(target: Bed, milliseconds: number): Promise<void> {
  await vi.waitFor(() => expect(target.clock.pending).toBeGreaterThan(0));
  target.clock.advance(milliseconds);
  await deliveries();
}

describe('task monitors', () => {
  it('coalesces the lines that arrive together into one notification', async () => {
    const b = bed({ coalesceMs: 1000 });
    const { task, id } = await b.start();
    const started = await b.monitors.start(b.owner, { taskId: id, pattern: 'ERR' });
    expect(started).toMatchObject({ monitorId: 'm1', matching: '/ERR/', lane: 'quiet', max: 20 });
    task.push('ok\nERR one\n\u001b[31mERR two\u001b[0m\nERR unfinished');
    await flush(b, 999);
    expect(b.sent).toEqual([]);
    b.clock.advance(1);
    await deliveries();
    expect(b.sent).toHaveLength(1);
    expect(b.sent[0]).toMatchObject({
      lines: ['ERR one', 'ERR two'],
      moreLines: 0,
      sequence: 1,
      lane: 'quiet',
    });
    // The unfinished line is matched once it ends.
    task.push(' now\n');
    await flush(b, 1000);
    expect(b.sent[1]).toMatchObject({ lines: ['ERR unfinished now'], sequence: 2 });
  });

  it('rate-limits per minute and counts the lines it did not show', async () => {
    const b = bed({ coalesceMs: 0, maxNotificationsPerMinute: 2, maxLinesPerNotification: 2 });
    const { task, id } = await b.start();
    await b.monitors.start(b.owner, { taskId: id, everyLine: true, lane: 'wakeup' });
    task.push('a\nb\nc\n');
    await flush(b, 0);
    expect(b.sent[0]).toMatchObject({
      lines: ['a', 'b'],
      moreLines: 1,
      lane: 'wakeup',
      matching: 'every line',
    });
    task.push('d\n');
    await flush(b, 0);
    expect(b.sent).toHaveLength(2);
    task.push('e\nf\ng\n');
    // Two sent this minute: the next waits for the window.
    await flush(b, 59_999);
    expect(b.sent).toHaveLength(2);
    b.clock.advance(1);
    await deliveries();
    expect(b.sent[2]).toMatchObject({ lines: ['e', 'f'], moreLines: 1 });
  });

  it('stops after max notifications, saying so in the last one', async () => {
    const b = bed({ coalesceMs: 0 });
    const { task, id } = await b.start();
    await b.monitors.start(b.owner, { taskId: id, pattern: 'x', max: 2 });
    task.push('x1\n');
    await flush(b, 0);
    task.push('x2\n');
    await flush(b, 0);
    expect(b.sent.map((event) => event.stopping)).toEqual([undefined, 'limit']);
    await vi.waitFor(() => expect(b.monitors.count(id)).toBe(0));
    task.push('x3\n');
    expect(b.clock.pending).toBe(0);
  });

  it('ends with the task, sending what matched last, and never its end', async () => {
    const b = bed({ coalesceMs: 5000 });
    const { task, id } = await b.start();
    await b.monitors.start(b.owner, { taskId: id, pattern: 'fatal', ignoreCase: true });
    task.push('FATAL: disk full');
    task.settle({ status: 'failed' });
    await vi.waitFor(() => expect(b.monitors.count(id)).toBe(0));
    expect(b.sent).toEqual([expect.objectContaining({ lines: ['FATAL: disk full'], sequence: 1 })]);
    expect(b.clock.pending).toBe(0);
    expect(b.tasks.get(id, b.owner).reported).toBe(false);
  });

  it('watches from the start by default, or only what comes next', async () => {
    const b = bed({ coalesceMs: 0 });
    const { task, id } = await b.start();
    task.push('ready on 3000\n');
    await b.monitors.start(b.owner, { taskId: id, pattern: 'ready', from: 'now' });
    await b.monitors.start(b.owner, { taskId: id, pattern: 'ready' });
    await flush(b, 0);
    expect(b.sent).toEqual([expect.objectContaining({ monitorId: 'm2', lines: ['ready on 3000'] })]);
    task.push('ready again\n');
    await flush(b, 0);
    expect(
      b.sent
        .slice(1)
        .map((event) => event.monitorId)
        .sort(),
    ).toEqual(['m1', 'm2']);
  });

  it('matches a very long line on its head only, and ignores the rest of it', async () => {
    const b = bed({ coalesceMs: 0, maxLineChars: 16 });
    const { task, id } = await b.start();
    await b.monitors.start(b.owner, { taskId: id, pattern: 'needle' });
    task.push(`${'x'.repeat(20)}needle\nneedle ${'y'.repeat(30)}`);
    task.push(' needle\nlast needle\n');
    await flush(b, 0);
    expect(b.sent[0]?.lines).toEqual([`needle ${'y'.repeat(8)}…`, 'last needle']);
  });

  it('never matches the missed-bytes marker, nor joins a line across the gap', async () => {
    const b = bed({ coalesceMs: 0 });
    const { task, id } = await b.start({ retainBytes: 12 });
    await b.monitors.start(b.owner, { taskId: id, everyLine: true });
    task.push('first line that leaves\ntail\nnext\n');
    await flush(b, 0);
    // 12 bytes kept: "s\ntail\nnext\n" — the "s" is the end of a line cut by the gap, dropped.
    expect(b.sent.flatMap((event) => event.lines)).toEqual(['tail', 'next']);
    expect(b.sent.some((event) => event.lines.some((line) => line.includes('skipped')))).toBe(false);
  });

  it('stops a monitor whose pattern is too slow on a line', async () => {
    const b = bed({ coalesceMs: 0, slowMatchMs: 50 });
    const { task, id } = await b.start();
    const started = await b.monitors.start(b.owner, { taskId: id, pattern: 'slow' });
    expect(started.monitorId).toBe('m1');
    // The clock jumps while the line is matched: as if the pattern took 60 ms.
    const now = b.clock.now;
    let calls = 0;
    Object.assign(b.clock, { now: () => now() + (calls++ % 2 === 1 ? 60 : 0) });
    task.push('slow line\n');
    await vi.waitFor(() => expect(b.sent).toHaveLength(1));
    expect(b.sent[0]).toMatchObject({ stopping: 'slow_pattern' });
    expect(b.monitors.count(id)).toBe(0);
  });

  it('refuses what it cannot watch, naming the field', async () => {
    const b = bed({ maxMonitorsPerTask: 1 });
    const { task, id } = await b.start();
    await expect(b.monitors.start(b.owner, { taskId: id })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining('`pattern`'),
    });
    await expect(b.monitors.start(b.owner, { taskId: id, pattern: '(a+)+' })).rejects.toMatchObject({
      code: 'INVALID_MONITOR_PATTERN',
    });
    await expect(b.monitors.start(b.owner, { taskId: id, pattern: 'x', max: 101 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining('`max`'),
    });
    await expect(
      b.monitors.start(createOwner('intruder'), { taskId: id, pattern: 'x' }),
    ).rejects.toMatchObject({
      code: 'TASK_NOT_FOUND',
    });
    await b.monitors.start(b.owner, { taskId: id, pattern: 'x' });
    await expect(b.monitors.start(b.owner, { taskId: id, pattern: 'y' })).rejects.toMatchObject({
      code: 'MONITOR_LIMIT',
    });
    expect(b.monitors.stop(createOwner('intruder'), id)).toBe(0);
    expect(b.monitors.stop(b.owner, id)).toBe(1);
    const { id: foreground } = await b.start({ background: false });
    await expect(b.monitors.start(b.owner, { taskId: foreground, pattern: 'x' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    task.settle();
    await vi.waitFor(() => expect(b.tasks.get(id, b.owner).status).toBe('completed'));
    await expect(b.monitors.start(b.owner, { taskId: id, pattern: 'x' })).rejects.toMatchObject({
      code: 'TASK_NOT_RUNNING',
    });
    expect(() => createTaskMonitors({ tasks: b.tasks, notify: () => undefined, coalesceMs: -1 })).toThrow(
      /`coalesceMs`/,
    );
  });
});
