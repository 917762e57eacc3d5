/**
 * No ending is lost to a crash, none is told twice: a child process runs a session whose background tasks
 * end and are told (idle turns, a model that also reads tasks with task_output) and is killed with SIGKILL
 * at a random moment; a second child resumes it and is killed too; this process resumes it last and lets
 * it deliver everything. Every task the store recorded must then have been told exactly once — by one
 * delivered notification, or by a stored tool result that showed its end before any notification did.
 *
 * `ERRAND_CRASH_ROUNDS` (default 3) and `ERRAND_CRASH_TASKS` (default 200) make it longer.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { capturingLogger } from '../../test/support/registry.js';
import type { MessageRecord, SessionStore } from '../store/index.js';
import { openSqliteSessionStore } from '../store/index.js';
import { scriptedModel } from '../testing/index.js';
import { createTaskTools } from '../tools/index.js';
import { createSessionRuntime } from './session-runtime.js';

const child = new URL('../../test/fixtures/session/ending-storm-child.mjs', import.meta.url).pathname;
const ROUNDS = Number(process.env.ERRAND_CRASH_ROUNDS ?? 3);
const TASKS = Number(process.env.ERRAND_CRASH_TASKS ?? 200);
const directories: string[] = [];
const running = new Set<ChildProcess>();

afterEach(() => {
  for (const process_ of running) process_.kill('SIGKILL');
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

/** Starts the child, waits for `marker`, kills it (SIGKILL) after `delayMs` — or once it is done. */
async function runAndKillAfter(args: string[], marker: string, delayMs: number): Promise<string> {
  const process_ = spawn(process.execPath, [child, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(process_);
  let stdout = '';
  let stderr = '';
  process_.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => process_.on('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    process_.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.includes(marker)) resolve();
    });
    void exited.then(() => reject(new Error(`the child exited before ${marker}: ${stderr}`)));
  });
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, delayMs);
    process_.stdout.on('data', () => {
      if (stdout.includes('DONE')) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  process_.kill('SIGKILL');
  await exited;
  running.delete(process_);
  return stdout.includes('DONE') ? 'after it was done' : `after ${delayMs} ms`;
}

interface Tally {
  readonly recorded: number;
  readonly lost: string[];
  readonly duplicated: string[];
  readonly toldAfterRead: string[];
  readonly byNotification: number;
  readonly byToolResult: number;
}

/** Counts, from the stored conversation, how each recorded task's ending reached the model. */
function tally(store: SessionStore, sessionId: string): Tally {
  const messages: MessageRecord[] = store.listMessages(sessionId);
  const notified = new Map<string, number[]>();
  const shown = new Map<string, number>();
  const callTask = new Map<string, string>();
  for (const message of messages) {
    if (message.role === 'user' && message.visibility === 'model-only') {
      for (const match of (message.content.text ?? '').matchAll(/<task-id>([^<]+)<\/task-id>/g)) {
        const seqs = notified.get(match[1]!) ?? [];
        seqs.push(message.seq);
        notified.set(match[1]!, seqs);
      }
    }
    for (const call of message.content.toolCalls ?? []) {
      const input = call.input as { task_id?: unknown } | null;
      if (typeof input?.task_id === 'string') callTask.set(call.id, input.task_id);
    }
    for (const result of message.content.toolResults ?? []) {
      const taskId = callTask.get(result.toolCallId);
      const output = typeof result.output === 'string' ? result.output : '';
      if (taskId === undefined || !/\[status: (completed|failed|killed|lost)\b[^\n]*\]$/.test(output))
        continue;
      if (!shown.has(taskId)) shown.set(taskId, message.seq);
    }
  }
  const lost: string[] = [];
  const duplicated: string[] = [];
  const toldAfterRead: string[] = [];
  let byNotification = 0;
  let byToolResult = 0;
  const records = store.listTasks({ sessionId });
  for (const task of records) {
    const seqs = notified.get(task.id) ?? [];
    const readAt = shown.get(task.id);
    if (seqs.length > 1) duplicated.push(`${task.id}×${seqs.length}`);
    if (readAt !== undefined && seqs.some((seq) => seq > readAt)) toldAfterRead.push(task.id);
    if (seqs.length === 0 && readAt === undefined) lost.push(`${task.id} (${task.status})`);
    if (readAt !== undefined && (seqs.length === 0 || readAt < seqs[0]!)) byToolResult += 1;
    else if (seqs.length > 0) byNotification += 1;
  }
  return { recorded: records.length, lost, duplicated, toldAfterRead, byNotification, byToolResult };
}

describe('endings across SIGKILL and resume', () => {
  it(
    `tells every recorded ending exactly once over ${ROUNDS} rounds of ${TASKS} tasks`,
    async () => {
      const report: string[] = [];
      let failures = 0;
      for (let round = 0; round < ROUNDS; round += 1) {
        const directory = mkdtempSync(join(tmpdir(), 'errand-crash-'));
        directories.push(directory);
        const file = join(directory, 'errand.sqlite');
        const seed = Math.floor(Math.random() * 2 ** 31);
        const first = Math.floor(Math.random() * 1000);
        const second = Math.floor(Math.random() * 60);
        const killedFirst = await runAndKillAfter(
          [file, 'fresh', String(TASKS), String(seed)],
          'STARTED',
          first,
        );
        const killedSecond = await runAndKillAfter(
          [file, 'resume', String(TASKS), String(seed + 1)],
          'RESUMED',
          second,
        );

        const store = openSqliteSessionStore({ file });
        const runtime = createSessionRuntime({
          store,
          model: scriptedModel([]),
          logger: capturingLogger(),
          notifications: { wakeBudget: Number.POSITIVE_INFINITY },
          tools: () => tools.tools,
        });
        const tools = createTaskTools({ tasks: runtime.tasks });
        const session = runtime.resumeSession('s1');
        await session.whenIdle();
        // The quiet ones (tasks lost with a runtime) go with the next request.
        await session.send('anything else?');
        await session.whenIdle();
        const counts = tally(store, 's1');
        const queued = store.listQueued('s1').length;
        const untold = store.listTasks({ sessionId: 's1' }).filter((task) => !task.reported).length;
        await runtime.dispose();
        tools.dispose();
        store.close();
        const bad =
          counts.lost.length + counts.duplicated.length + counts.toldAfterRead.length + queued + untold > 0;
        if (bad) failures += 1;
        report.push(
          `round ${round} (seed ${seed}; killed ${killedFirst}, then ${killedSecond}): ${counts.recorded} endings, ` +
            `${counts.byNotification} told by notification, ${counts.byToolResult} by a tool result, ` +
            `lost ${counts.lost.length} [${counts.lost.slice(0, 10).join(', ')}], ` +
            `duplicated ${counts.duplicated.length} [${counts.duplicated.slice(0, 10).join(', ')}], ` +
            `told after the model read them ${counts.toldAfterRead.length}, still queued ${queued}, unmarked ${untold}`,
        );
      }
      expect(failures, report.join('\n')).toBe(0);
    },
    120_000 + ROUNDS * 30_000,
  );
});
