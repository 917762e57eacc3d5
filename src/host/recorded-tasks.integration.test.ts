import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { capturingLogger } from '../../test/support/registry.js';
import { openSqliteSessionStore } from '../store/index.js';
import { scriptedModel } from '../testing/index.js';
import { executeTool } from '../tools/index.js';
import { createErrandRuntime } from './errand-runtime.js';

const child = new URL('../../test/fixtures/host/ended-then-killed-child.mjs', import.meta.url).pathname;
const directories: string[] = [];

afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

/** Runs the child until READY, kills it with SIGKILL, and returns what it printed. */
async function runUntilReadyThenKill(home: string): Promise<{ sessionId: string; taskId: string }> {
  const process_ = spawn(process.execPath, [child, home], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  process_.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => process_.on('exit', () => resolve()));
  const line = await new Promise<string>((resolve, reject) => {
    process_.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /READY (.+)\n/.exec(stdout);
      if (match) resolve(match[1]!);
    });
    void exited.then(() => reject(new Error(`the child exited early: ${stderr}`)));
  });
  process_.kill('SIGKILL');
  await exited;
  return JSON.parse(line) as { sessionId: string; taskId: string };
}

describe('finished work of a runtime that was killed', () => {
  it('task_list and task_output answer from the store and the output file, and reading it tells it once', async () => {
    const home = mkdtempSync(join(tmpdir(), 'errand-recorded-'));
    directories.push(home);
    const { sessionId, taskId } = await runUntilReadyThenKill(home);
    const store = openSqliteSessionStore({ home });
    const record = store.getTask(taskId, sessionId);
    expect(record).toMatchObject({ status: 'completed', reported: false });
    directories.push(dirname(record!.outputFile!));
    // The model had read the first line before the runtime died: its cursor is in the store.
    store.saveTaskReadOffset(taskId, sessionId, 'alpha\n'.length);

    const runtime = await createErrandRuntime({
      model: scriptedModel(),
      store,
      pty: false,
      subagents: false,
      commandPollMs: false,
      logger: capturingLogger(),
    });
    try {
      const session = runtime.resumeSession(sessionId);
      // Its notification was never delivered: it is back in the queue, not discarded.
      expect(session.inbox.queuedNotifications().map((notification) => notification.taskId)).toEqual([
        taskId,
      ]);
      // The new task service never held it.
      expect(() => runtime.tasks.get(taskId, session.owner)).toThrow(
        expect.objectContaining({ code: 'TASK_NOT_FOUND' }),
      );
      const context = { caller: session.owner, toolCallId: 'call-1', signal: new AbortController().signal };
      const list = await executeTool(runtime.taskTools.taskList, {}, context);
      expect(list.text).toBe(`${taskId} [bash] completed — two lines`);

      const output = await executeTool(runtime.taskTools.taskOutput, { task_id: taskId }, context);
      expect(output).toMatchObject({ isError: false, taskEnds: [{ taskId }] });
      // From the model's cursor, not byte 0: the first line is not given again.
      expect(output.text).toBe('beta\n[status: completed (exit code 0; recorded by an earlier runtime)]');
      // The cursor moved to the end: the next read has nothing new.
      const again = await executeTool(runtime.taskTools.taskOutput, { task_id: taskId }, context);
      expect(again.text).toBe(
        '(no new output)\n[status: completed (exit code 0; recorded by an earlier runtime)]',
      );
      // What a surface does with a result that showed an end: its notification goes, the end is told.
      for (const end of output.taskEnds ?? []) session.taskEndTold(end);
      expect(session.inbox.queued).toBe(0);
      expect(store.listLedger(sessionId).map((entry) => [entry.state, entry.reason ?? null])).toEqual([
        ['discarded', 'result_read'],
      ]);
      expect(store.getTask(taskId, sessionId)).toMatchObject({ reported: true });

      // Another session cannot read it: unauthorized looks like not found.
      const stranger = runtime.createSession({ id: 'stranger' });
      const refused = await executeTool(
        runtime.taskTools.taskOutput,
        { task_id: taskId },
        { caller: stranger.owner, toolCallId: 'call-2', signal: new AbortController().signal },
      );
      expect(refused).toMatchObject({ isError: true });
      expect(refused.text).toContain('TASK_NOT_FOUND');
    } finally {
      await runtime.dispose();
      store.close();
    }
  });
});
