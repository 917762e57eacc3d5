/**
 * The task digest after a simulated compaction: a harness drops the conversation, starts the model on a
 * summary plus `session.taskDigest()`, and the model's first request names every live task exactly once,
 * the endings it was not told, and nothing it was told already — in full form, and compact past the cap.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { runtimeForTest, settleEventLoop } from '../../test/support/session.js';
import { createTaskService } from '../registry/index.js';
import { createOwner } from '../tasks/index.js';
import { type ScriptedTask, scriptedTask } from '../testing/index.js';
import { createTaskTools, executeTool, formatTaskDigest, type TaskDigest } from '../tools/index.js';
import type { Session } from './index.js';

let cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

function occurrences(text: string, id: string): number {
  return text.match(new RegExp(`(?<![\\w-])${id}(?![\\w-]|-\\d)`, 'g'))?.length ?? 0;
}

async function sessionWithTasks(live: number) {
  const { runtime, model } = runtimeForTest([{ text: 'noted' }, { text: 'resumed after the summary' }], {
    tasks: createTaskService({ maxLiveTasksPerOwner: 1000 }),
  });
  cleanups.push(() => runtime.dispose());
  const session: Session = runtime.createSession();
  const tasks: ScriptedTask[] = [];
  for (let index = 0; index < live; index += 1) {
    const task = scriptedTask({
      kind: 'bash',
      label: `npm run dev -- --port ${3000 + index}`,
      owner: session.owner,
    });
    await session.tasks.start(task.spec);
    tasks.push(task);
  }
  return { runtime, model, session, tasks };
}

/** What a harness does when it compacts: a fresh context made of a summary and the digest. */
async function compact(session: Session, digest: TaskDigest): Promise<string> {
  await session.send(`Summary of the conversation so far: we were building the app.\n\n${digest.text}`);
  return JSON.stringify(session.messages().at(-2)?.content ?? '');
}

describe('the task digest', () => {
  it('lists every live task once, the endings not told, and none that were told', async () => {
    const { session, tasks, model } = await sessionWithTasks(4);
    // bash-3 ends and its notification wakes the model (told); then bash-4 ends quietly (queued, not told).
    tasks[2]!.settle({ status: 'failed' });
    await vi.waitFor(() => expect(model.requests.length).toBe(1));
    await vi.waitFor(() => expect(session.state).toBe('idle'));
    tasks[3]!.settle({ status: 'completed', detail: { notificationLane: 'quiet' } });
    await settleEventLoop(10);
    const digest = session.taskDigest();
    expect(digest.form).toBe('full');
    expect(digest.live).toEqual(['bash-1', 'bash-2']);
    expect(digest.untold).toContain('bash-4');
    expect(digest.untold).not.toContain('bash-3');
    // Reading the digest claimed nothing: bash-4's notification is still queued for the model.
    expect(session.untoldEndings().map((ending) => ending.taskId)).toEqual(['bash-4']);
    const seen = await compact(session, digest);
    for (const id of ['bash-1', 'bash-2']) expect(occurrences(seen, id)).toBe(1);
    expect(occurrences(seen, 'bash-4')).toBe(1);
    expect(occurrences(seen, 'bash-3')).toBe(0);
    expect(seen).toContain('npm run dev -- --port 3000');
    expect(model.requests.length).toBe(2);
    // The compacted turn's request carried bash-4's own notification as well: now it is told.
    expect(session.untoldEndings()).toEqual([]);
  });

  it('switches to ids only past its cap, still naming every live task once', async () => {
    const { session } = await sessionWithTasks(120);
    const full = session.taskDigest({ maxBytes: 1_000_000 });
    expect(full.form).toBe('full');
    const digest = session.taskDigest({ maxBytes: 2048 });
    expect(digest.form).toBe('compact');
    expect(Buffer.byteLength(digest.text)).toBeLessThanOrEqual(2048);
    const seen = await compact(session, digest);
    for (let index = 1; index <= 120; index += 1) expect(occurrences(seen, `bash-${index}`)).toBe(1);
  });

  it('stays within its cap when even the ids do not fit, and counts the rest', () => {
    const owner = createOwner('s');
    const many = Array.from({ length: 2000 }, (_, index) => ({
      id: `bash-${index + 1}`,
      kind: 'bash',
      label: 'x',
      status: 'running',
      ownerSessionId: owner.sessionId,
      reported: false,
      detail: {},
      isBackgrounded: true,
      startedAt: 0,
    })) as never[];
    const digest = formatTaskDigest({ tasks: many, maxBytes: 1024, now: 0 });
    expect(digest.form).toBe('cut');
    expect(Buffer.byteLength(digest.text)).toBeLessThanOrEqual(1024);
    expect(digest.text).toMatch(/\+\d+ older live tasks not shown/);
    expect(digest.text.endsWith('</task-digest>')).toBe(true);
    for (const id of digest.live) expect(occurrences(digest.text, id)).toBe(1);
  });

  it('is a model-facing tool too, with the session inbox as its source of untold endings', async () => {
    const { session, tasks, runtime } = await sessionWithTasks(2);
    tasks[1]!.settle({ status: 'completed', detail: { notificationLane: 'quiet' } });
    await settleEventLoop(10);
    const tools = createTaskTools({
      tasks: runtime.tasks,
      controllerName: 'digest-test',
      untold: (caller) => (caller === session.owner ? session.untoldEndings() : []),
    });
    cleanups.push(() => tools.dispose());
    const result = await executeTool(
      tools.taskDigest,
      {},
      {
        caller: session.owner,
        toolCallId: 'c1',
        signal: new AbortController().signal,
      },
    );
    expect(result.isError).toBe(false);
    expect(occurrences(result.text, 'bash-1')).toBe(1);
    expect(result.text).toContain('Ended, not yet told (1)');
    const empty = await executeTool(
      tools.taskDigest,
      {},
      {
        caller: createOwner('other'),
        toolCallId: 'c2',
        signal: new AbortController().signal,
      },
    );
    expect(empty.text).toContain('No background work is running');
  });
});
