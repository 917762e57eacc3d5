/**
 * `task_monitor` in the assembled runtime: a real command's matching lines reach its session through the
 * same inbox as its end, quietly, under their own idempotency keys, and its end is notified exactly once.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { capturingLogger } from '../../test/support/registry.js';
import { createMemorySessionStore } from '../store/index.js';
import { scriptedModel } from '../testing/index.js';
import { executeTool } from '../tools/index.js';
import { createErrandRuntime, type ErrandRuntime } from './errand-runtime.js';

let runtime: ErrandRuntime | undefined;
const directories: string[] = [];

afterEach(async () => {
  await runtime?.dispose();
  runtime = undefined;
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

describe('task_monitor in the runtime', () => {
  it("sends a command's matching lines quietly, and its end once", async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'errand-monitor-'));
    directories.push(cwd);
    const go = join(cwd, 'go');
    const model = scriptedModel([{ text: 'Noted.' }, { text: 'Noted again.' }, { text: 'Done.' }]);
    runtime = await createErrandRuntime({
      model,
      store: createMemorySessionStore(),
      cwd,
      logger: capturingLogger(),
      taskTools: { monitors: { coalesceMs: 20 } },
    });
    const session = runtime.createSession({ id: 'main' });
    expect(session.tools.map((tool) => tool.name)).toContain('task_monitor');
    const { taskId } = await runtime.bash.start({
      command: `echo starting; echo 'ERROR: first'; while [ ! -e go ]; do sleep 0.01; done; echo fine; echo 'ERROR: second'; exit 3`,
      owner: session.owner,
      cwd,
    });
    const monitor = runtime.taskTools.taskMonitor!;
    const context = { caller: session.owner, toolCallId: 'call_m', signal: new AbortController().signal };
    const answer = await executeTool(monitor, { task_id: taskId, pattern: '^ERROR' }, context);
    expect(answer.isError).toBe(false);
    expect(answer.text).toMatch(
      /^Monitoring task bash-\d+ \(m\d+\): lines matching \/\^ERROR\/, sent quietly/,
    );
    const notifications = () =>
      runtime!.store.listLedger('main').filter((entry) => entry.kind === 'notification');
    // The first line is there before the command goes on: it is queued, quietly, without waking a turn.
    await vi.waitFor(() => expect(notifications().length).toBe(1), { timeout: 10_000 });
    expect(notifications()[0]).toMatchObject({ lane: 'quiet', state: 'queued' });
    expect(model.requests).toHaveLength(0);
    writeFileSync(go, '');
    await vi.waitFor(
      () =>
        expect(
          notifications().filter((entry) => entry.text.includes('<status>failed</status>')),
        ).toHaveLength(1),
      { timeout: 10_000 },
    );
    await vi.waitFor(() => expect(runtime!.taskTools.monitors!.count()).toBe(0));
    const entries = notifications();
    const matched = entries.filter((entry) => entry.text.includes('<event>output_matched</event>'));
    const ends = entries.filter((entry) => !entry.text.includes('<event>output_matched</event>'));
    const lines = matched.flatMap(
      (entry) => /<lines>\n([\s\S]*?)\n<\/lines>/.exec(entry.text)?.[1]?.split('\n') ?? [],
    );
    expect(lines).toEqual(['ERROR: first', 'ERROR: second']);
    expect(ends).toHaveLength(1);
    // Nothing a monitor sends says how the task ended.
    for (const entry of matched) expect(entry.text).not.toContain('<status>');
    expect(new Set(entries.map((entry) => entry.idempotencyKey)).size).toBe(entries.length);
    expect(existsSync(go)).toBe(true);
  });

  it('stops a monitor on request, and refuses one on a finished task', async () => {
    runtime = await createErrandRuntime({
      model: scriptedModel([]),
      store: createMemorySessionStore(),
      logger: capturingLogger(),
    });
    const session = runtime.createSession({ id: 'main' });
    const { taskId } = await runtime.bash.start({ command: 'sleep 30', owner: session.owner });
    const monitor = runtime.taskTools.taskMonitor!;
    const context = { caller: session.owner, toolCallId: 'call_m', signal: new AbortController().signal };
    await executeTool(monitor, { task_id: taskId, every_line: true }, context);
    expect(runtime.taskTools.monitors!.count(taskId)).toBe(1);
    const stopped = await executeTool(monitor, { task_id: taskId, stop: true }, context);
    expect(stopped.text).toBe(`Stopped the monitor of task ${taskId}.\n[status: running]`);
    expect(runtime.taskTools.monitors!.count(taskId)).toBe(0);
    const bad = await executeTool(monitor, { task_id: taskId, pattern: '(a+)+' }, context);
    expect(bad).toMatchObject({ isError: true });
    expect(bad.text).toMatch(/^Error \[INVALID_MONITOR_PATTERN\]: Expected `pattern`/);
    await runtime.tasks.kill(taskId, session.owner);
    await runtime.tasks.wait(taskId, 10_000, session.owner);
    const late = await executeTool(monitor, { task_id: taskId, pattern: 'x' }, context);
    expect(late.text).toMatch(/has already ended; there is nothing left to monitor/);
  });
});
