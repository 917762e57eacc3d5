/**
 * The runtime's own notices beyond the ends the feed carries: a background pty program that prints a prompt
 * and waits is reported as waiting for input (once per quiet spell), and a `task_monitor` match is reported
 * with its lines — both through the same sinks, filters and sent view as the ends.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { capturingLogger } from '../../test/support/registry.js';
import { isPtyAvailable } from '../producers/pty/index.js';
import { createMemorySessionStore } from '../store/index.js';
import { scriptedModel } from '../testing/index.js';
import { executeTool } from '../tools/index.js';
import { createErrandRuntime, type ErrandRuntime } from './errand-runtime.js';

let runtime: ErrandRuntime | undefined;
afterEach(async () => {
  await runtime?.dispose();
  runtime = undefined;
});

function replies(count: number) {
  const model = scriptedModel([]);
  for (let index = 0; index < count; index += 1) model.push({ text: 'Noted.' });
  return model;
}

const ptyAvailable = await isPtyAvailable();

describe('notices the runtime reports itself', () => {
  it.skipIf(!ptyAvailable)('reports a pty program waiting at a prompt, once per quiet spell', async () => {
    runtime = await createErrandRuntime({
      model: replies(10),
      store: createMemorySessionStore(),
      logger: capturingLogger(),
      notifyPerson: { inputQuietMs: 300, browser: { events: ['input-needed'] } },
    });
    const session = runtime.createSession({ id: 'main' });
    const notices: string[] = [];
    runtime.personNotifier!.subscribeBrowser((notice) => notices.push(`${notice.event} ${notice.task.id}`));
    const started = await runtime.pty!.start({
      command: 'printf "Password: "; read answer; echo "got $answer"; printf "Again: "; read more; echo done',
      description: 'login',
      owner: session.owner,
    });
    await vi.waitFor(() => expect(notices).toEqual([`input-needed ${started.taskId}`]), { timeout: 10_000 });
    const [record] = runtime.personNotifier!.sent();
    expect(record!.notice).toMatchObject({
      event: 'input-needed',
      sessionId: 'main',
      summary: `${started.taskId} "login" is waiting for input`,
      task: { taskKind: 'pty', status: 'running' },
    });
    // Answered, it prints again and waits again: a second notice. (That a quiet spell is reported once,
    // however long it lasts, is checked on a fake clock in notice-rules.test.ts.)
    runtime.pty!.write(started.taskId, { text: 'secret', keys: ['Enter'] }, session.owner);
    await vi.waitFor(() => expect(notices.length).toBeGreaterThanOrEqual(2), { timeout: 10_000 });
    runtime.pty!.write(started.taskId, { text: 'x', keys: ['Enter'] }, session.owner);
    await runtime.tasks.wait(started.taskId, 10_000, session.owner);
    await runtime.personNotifier!.whenIdle();
    // Its end is not an input-needed event: the browser's filter leaves it out.
    expect(new Set(notices)).toEqual(new Set([`input-needed ${started.taskId}`]));
    expect(runtime.personNotifier!.sent().some((record) => record.notice.event === 'task-ended')).toBe(false);
  });

  it('reports a monitor match with its lines', async () => {
    runtime = await createErrandRuntime({
      model: replies(10),
      store: createMemorySessionStore(),
      pty: false,
      logger: capturingLogger(),
      taskTools: { monitors: { coalesceMs: 20 } },
      notifyPerson: { browser: { events: ['monitor-match'] } },
    });
    const session = runtime.createSession({ id: 'main' });
    const { taskId } = await runtime.bash.start({
      command: 'echo "ERROR: disk full"; sleep 30',
      description: 'nightly backup',
      owner: session.owner,
      background: true,
    });
    const context = { caller: session.owner, toolCallId: 'call_m', signal: new AbortController().signal };
    await executeTool(runtime.taskTools.taskMonitor!, { task_id: taskId, pattern: '^ERROR' }, context);
    await vi.waitFor(() => expect(runtime!.personNotifier!.sent()).toHaveLength(1), { timeout: 10_000 });
    expect(runtime.personNotifier!.sent()[0]!.notice).toMatchObject({
      event: 'monitor-match',
      task: { id: taskId },
      lines: ['ERROR: disk full'],
      summary: `${taskId} "nightly backup": a monitor matched 1 line`,
    });
    await runtime.tasks.kill(taskId, session.owner);
  });
});
