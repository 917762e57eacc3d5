import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { capturingLogger } from '../../test/support/registry.js';
import { startTaskTool, type TaskBoard } from '../../test/support/session.js';
import { openSqliteSessionStore } from '../store/index.js';
import { scriptedModel } from '../testing/index.js';
import { createSessionRuntime } from './session-runtime.js';

const child = new URL('../../test/fixtures/session/crash-child.mjs', import.meta.url).pathname;
const directories: string[] = [];

afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

/** Runs the child until it says READY, then kills it with SIGKILL. */
async function runAndKill(file: string): Promise<void> {
  const kill = await runUntilReady(file);
  await kill();
}

/** Runs the child until it says READY; resolves to a function that kills it (SIGKILL) and waits for it. */
async function runUntilReady(file: string): Promise<() => Promise<void>> {
  const process_ = spawn(process.execPath, [child, file], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  process_.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  await new Promise<void>((resolve, reject) => {
    process_.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('READY')) resolve();
    });
    process_.on('exit', (code) => reject(new Error(`child exited early (${code}): ${stderr}`)));
  });
  process_.removeAllListeners('exit');
  const exited = new Promise((resolve) => process_.on('exit', resolve));
  return async () => {
    process_.kill('SIGKILL');
    await exited;
  };
}

describe('resume after a crash', () => {
  it('keeps the ledger consistent: what was queued is delivered once after the resume, nothing twice', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'errand-resume-'));
    directories.push(directory);
    const file = join(directory, 'errand.sqlite');
    await runAndKill(file);

    const store = openSqliteSessionStore({ file });
    const before = store.listLedger('s1').filter((entry) => entry.kind === 'notification');
    expect(before.map((entry) => entry.state)).toEqual([
      'delivered',
      'delivered',
      'delivered',
      'queued',
      'queued',
    ]);

    const model = scriptedModel([
      { toolCalls: [{ name: 'start_task', input: { label: 'again' } }] },
      { text: 'resumed' },
    ]);
    const board: TaskBoard = new Map();
    const runtime = createSessionRuntime({
      store,
      model,
      logger: capturingLogger(),
      tools: (opened) => [startTaskTool(opened, board)],
    });
    runtime.tasks.attachController('resume-test');
    const session = runtime.resumeSession('s1');

    const entries = store.listLedger('s1').filter((entry) => entry.kind === 'notification');
    expect(entries.map((entry) => [entry.state, entry.reason ?? null])).toEqual([
      ['delivered', null],
      ['delivered', null],
      ['delivered', null],
      // Never delivered (a delivery writes its message and settles its entries in one step): queued again.
      ['queued', null],
      ['queued', null],
      // The task that was running when the process died: the model is told, quietly, that it is lost.
      ['queued', null],
    ]);
    expect(entries.slice(3, 5).map((entry) => entry.id)).toEqual(before.slice(3).map((entry) => entry.id));
    expect(entries.at(-1)).toMatchObject({ taskId: 'scripted-6', lane: 'quiet' });
    expect(entries.at(-1)?.text).toContain('<status>lost</status>');
    expect(entries.at(-1)?.text).not.toContain('task_output');
    expect(session.inbox.queued).toBe(3);

    // They had spent the wake budget (quiet lane): they reach the model with its next request, with the
    // lost notice, and the session keeps working.
    const outcome = await session.send('continue');
    expect(outcome.text).toBe('resumed');
    const after = store.listLedger('s1').filter((entry) => entry.kind === 'notification');
    expect(after.map((entry) => entry.state)).toEqual(Array(6).fill('delivered'));
    const firstRequest = JSON.stringify(model.requests[0]);
    for (const taskId of ['scripted-4', 'scripted-5', 'scripted-6']) {
      expect(firstRequest.split(`<task-id>${taskId}</task-id>`)).toHaveLength(2);
    }
    // Every delivered entry points at a stored message that carries it, and no task is delivered twice.
    const messages = store.listMessages('s1');
    for (const entry of after) {
      const message = messages.find((candidate) => candidate.seq === entry.deliveredInMessageSeq);
      expect(message?.content.text).toContain(`<task-id>${entry.taskId}</task-id>`);
    }
    const allText = messages.map((message) => message.content.text ?? '').join('\n');
    for (let index = 1; index <= 6; index += 1) {
      const count = allText.split(`<task-id>scripted-${index}</task-id>`).length - 1;
      expect(count, `scripted-${index}`).toBe(1);
    }
    // The task that was still running when the process died is lost, not running forever; every
    // ending is recorded as told.
    expect(store.getTask('scripted-6', 's1')).toMatchObject({ status: 'lost', reported: true });
    expect(store.getTask('scripted-5', 's1')).toMatchObject({ status: 'failed', reported: true });

    // New ids never reuse the old ones: the crashed runtime never gave back its block (1-100).
    expect(runtime.tasks.list(session.owner).map((task) => task.id)).toEqual(['scripted-101']);
    await runtime.dispose();
    store.close();
  });

  it('refuses to resume a session another live process has open, and takes it over once that process died', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'errand-resume-'));
    directories.push(directory);
    const file = join(directory, 'errand.sqlite');
    const kill = await runUntilReady(file);
    const store = openSqliteSessionStore({ file });
    const runtime = createSessionRuntime({ store, model: scriptedModel([]), logger: capturingLogger() });
    try {
      const before = store.listLedger('s1');
      expect(() => runtime.resumeSession('s1')).toThrow(
        expect.objectContaining({
          code: 'SESSION_IN_USE',
          message: expect.stringContaining('another runtime'),
        }),
      );
      // Nothing of the live session was touched: its queue and its running task are as they were.
      expect(store.listLedger('s1')).toEqual(before);
      expect(store.getTask('scripted-6', 's1')).toMatchObject({ status: 'running' });
    } finally {
      await kill();
    }
    const session = runtime.resumeSession('s1');
    expect(store.getSession('s1')?.holder).toMatchObject({ pid: process.pid });
    expect(store.getTask('scripted-6', 's1')).toMatchObject({ status: 'lost' });
    await session.close();
    expect(store.getSession('s1')?.holder).toBeUndefined();
    await runtime.dispose();
    store.close();
  });
});
