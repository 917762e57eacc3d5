import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { capturingLogger } from '../../test/support/registry.js';
import { waitForScreen } from '../producers/pty/index.js';
import { createMemorySessionStore } from '../store/index.js';
import { createTrustedCaller } from '../tasks/index.js';
import { lastUserText, scriptedModel } from '../testing/index.js';
import { createErrandRuntime, type ErrandRuntime } from './errand-runtime.js';

let runtime: ErrandRuntime | undefined;
const directories: string[] = [];

afterEach(async () => {
  await runtime?.dispose();
  runtime = undefined;
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function workdir(): string {
  const directory = mkdtempSync(join(tmpdir(), 'errand-host-'));
  directories.push(directory);
  return directory;
}

describe('the assembled runtime', () => {
  it('runs a real background command end to end: notification, task_output, exactly once', async () => {
    const cwd = workdir();
    const model = scriptedModel([
      {
        toolCalls: [
          {
            name: 'bash',
            input: {
              command: 'echo building; echo done > built.txt; echo finished',
              run_in_background: true,
            },
          },
        ],
      },
      { text: 'The build runs in the background.' },
      (request) => {
        const text = lastUserText(request);
        const id = /<task-id>(bash-\d+)<\/task-id>/.exec(text)?.[1];
        return { toolCalls: [{ name: 'task_output', input: { task_id: id } }] };
      },
      { text: 'The build finished.' },
    ]);
    runtime = await createErrandRuntime({
      model,
      store: createMemorySessionStore(),
      cwd,
      logger: capturingLogger(),
    });
    const snapshots = vi.spyOn(runtime.bash, 'snapshot');
    const session = runtime.createSession({ id: 'main' });
    await session.send('build it');
    await new Promise<void>((resolve) => {
      const stop = session.on((event) => {
        if (event.type === 'turn-end' && event.text === 'The build finished.') {
          stop();
          resolve();
        }
      });
    });

    const notification = model.requests[2]!.messages.at(-1);
    expect(notification?.role).toBe('user');
    const text = notification?.role === 'user' ? notification.text : '';
    expect(text).toContain('<status>completed</status>');
    expect(text).toContain('<exit-code>0</exit-code>');
    expect(text).toContain('finished');
    expect(text).toMatch(/<output-file>\/.+<\/output-file>/);
    // The notification's tail was read with the default size.
    expect(snapshots).toHaveBeenCalledWith(expect.stringMatching(/^bash-\d+$/), expect.anything(), 4096);
    const toolMessage = model.requests[3]!.messages.at(-1);
    expect(toolMessage?.role === 'tool' && toolMessage.results[0]?.output).toContain('[status: completed');
    const delivered = runtime.store.listLedger('main').filter((entry) => entry.kind === 'notification');
    expect(delivered.map((entry) => entry.state)).toEqual(['delivered']);
  });

  it('reads notificationTailReadBytes of the output for the notification tail', async () => {
    const model = scriptedModel([
      {
        toolCalls: [
          {
            name: 'bash',
            input: {
              command: "head -c 300 /dev/zero | tr '\\0' a; echo; echo last-line",
              run_in_background: true,
            },
          },
        ],
      },
      { text: 'started' },
      { text: 'notified' },
    ]);
    runtime = await createErrandRuntime({
      model,
      store: createMemorySessionStore(),
      cwd: workdir(),
      logger: capturingLogger(),
      notificationTailReadBytes: 16,
    });
    const snapshots = vi.spyOn(runtime.bash, 'snapshot');
    const session = runtime.createSession({ id: 'main' });
    const notified = new Promise<void>((resolve) => {
      const stop = session.on((event) => {
        if (event.type === 'turn-end' && event.text === 'notified') {
          stop();
          resolve();
        }
      });
    });
    await session.send('run it');
    await notified;
    expect(snapshots).toHaveBeenCalledWith(expect.stringMatching(/^bash-\d+$/), expect.anything(), 16);
    const text = lastUserText(model.requests[2]!);
    const tail = /<output-tail>\n?([\s\S]*?)<\/output-tail>/.exec(text)?.[1] ?? '';
    expect(tail).toContain('last-line');
    expect(Buffer.byteLength(tail.trim())).toBeLessThanOrEqual(16);
  });

  it("bounds a pty task's output snapshot to maxBytes, keeping the end of the screen", async () => {
    runtime = await createErrandRuntime({
      model: scriptedModel([]),
      store: createMemorySessionStore(),
      cwd: workdir(),
      logger: capturingLogger(),
    });
    const pty = runtime.pty;
    if (pty === undefined) return; // node-pty is optional; without it the runtime has no pty tasks.
    const started = await pty.start({
      command: `printf 'first-line\\n%.0s' 1 2 3 4 5 6 7 8; echo last-line; sleep 30`,
    });
    const screen = pty.process(started.taskId, createTrustedCaller('test'));
    await waitForScreen(screen, (view) => view.text.includes('last-line'), { timeoutMs: 10_000 });
    const whole = runtime.outputSnapshot(started.taskId)!;
    expect(whole.text).toContain('first-line');
    const bounded = runtime.outputSnapshot(started.taskId, 12)!;
    expect(Buffer.byteLength(bounded.text)).toBeLessThanOrEqual(12);
    expect(whole.text.endsWith(bounded.text)).toBe(true);
    expect(bounded.totalBytes).toBe(Buffer.byteLength(whole.text));
  });

  it('a person stops a running command through the dashboard backend; the model is told', async () => {
    const model = scriptedModel([
      { toolCalls: [{ name: 'bash', input: { command: 'sleep 600', run_in_background: true } }] },
      { text: 'sleeping' },
      (request) => ({
        text: lastUserText(request).includes('was stopped') ? 'noted the stop' : 'unexpected',
      }),
    ]);
    runtime = await createErrandRuntime({
      model,
      store: createMemorySessionStore(),
      cwd: workdir(),
      logger: capturingLogger(),
    });
    const session = runtime.createSession({ id: 'main' });
    await session.send('sleep');
    const [task] = runtime.tasks.list(session.owner);
    expect(task?.status).toBe('running');
    expect(await runtime.dashboard.stopBackgroundWork(task!.id)).toEqual({ ok: true });
    await new Promise<void>((resolve) => {
      const stop = session.on((event) => {
        if (event.type === 'turn-end' && event.turnId > 1) {
          stop();
          resolve();
        }
      });
    });
    expect(model.requests.at(-1) && lastUserText(model.requests.at(-1)!)).toContain('stopped');
    expect(runtime.tasks.get(task!.id, session.owner)).toMatchObject({
      status: 'killed',
      stopInitiator: 'user',
    });
    expect(await runtime.dashboard.stopBackgroundWork(task!.id)).toEqual({
      ok: false,
      reason: 'not_running',
    });
  });

  it('the dashboard backend does not stop foreground work it never shows', async () => {
    runtime = await createErrandRuntime({
      model: scriptedModel([]),
      store: createMemorySessionStore(),
      cwd: workdir(),
      logger: capturingLogger(),
    });
    const session = runtime.createSession({ id: 'main' });
    const started = await runtime.bash.start({
      command: 'sleep 600',
      owner: session.owner,
      background: false,
    });
    expect(await runtime.dashboard.stopBackgroundWork(started.taskId)).toEqual({
      ok: false,
      reason: 'not_found',
    });
    expect(runtime.tasks.get(started.taskId, session.owner).status).toBe('running');
  });
});

describe('subagents in the assembled runtime', () => {
  it('a background subagent works with its own bash and reports once with result and usage', async () => {
    const cwd = workdir();
    const parent = scriptedModel([
      {
        toolCalls: [
          {
            name: 'agent',
            input: { prompt: 'Count the files.', description: 'count files', run_in_background: true },
          },
        ],
      },
      { text: 'The subagent is counting.' },
      (request) => ({
        text: lastUserText(request).includes('3 files') ? 'There are 3 files.' : 'unexpected',
      }),
    ]);
    runtime = await createErrandRuntime({
      model: parent,
      store: createMemorySessionStore(),
      cwd,
      logger: capturingLogger(),
      subagents: {
        model: () =>
          scriptedModel([
            { toolCalls: [{ name: 'bash', input: { command: 'touch a b c && ls | wc -l' } }] },
            { text: '3 files', usage: { inputTokens: 40, outputTokens: 2 } },
          ]),
      },
    });
    const session = runtime.createSession({ id: 'main' });
    await session.send('how many files?');
    await new Promise<void>((resolve) => {
      const stop = session.on((event) => {
        if (event.type === 'turn-end' && event.turnId > 1) {
          stop();
          resolve();
        }
      });
    });
    const notification = lastUserText(parent.requests[2]!);
    expect(notification).toContain('<status>completed</status>');
    expect(notification).toContain('3 files');
    expect(notification).toMatch(/tool_uses: 1/);
    const [task] = runtime.tasks.list(session.owner).filter((snapshot) => snapshot.kind === 'agent');
    expect(task).toMatchObject({ status: 'completed', resultText: '3 files' });
    // The child's history stays in its own session.
    expect(
      parent.requests[2]!.messages.some(
        (message) =>
          message.role === 'tool' && message.results.some((result) => result.output.includes('wc')),
      ),
    ).toBe(false);
  });
});
