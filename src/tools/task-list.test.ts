/**
 * `task_list` over many live tasks: the bounded listing the service keeps as tasks change gives the
 * rows a full read would, in order, with the right count of the rest — through starts, ends, tasks
 * moved to the background, foreground calls and resumes.
 */
import { describe, expect, it } from 'vitest';
import { capturingLogger, flushMicrotasks } from '../../test/support/registry.js';
import { createTaskService } from '../registry/index.js';
import { backgroundListingOf, createOwner, type TaskId, type TaskService } from '../tasks/index.js';
import { type ScriptedTask, scriptedTask } from '../testing/index.js';
import { createTaskTools } from './index.js';
import { executeTool } from './tool-definition.js';

function service(maxLive: number): TaskService {
  const tasks = createTaskService({
    logger: capturingLogger(),
    maxLiveTasks: maxLive,
    maxLiveTasksPerOwner: maxLive,
    maxRetainedTasksPerOwner: 100,
  });
  tasks.attachController('test');
  return tasks;
}

describe('task_list with many live tasks', () => {
  it('lists the newest 50 of 10k live tasks in order, with the count of the rest', async () => {
    const tasks = service(20_000);
    const owner = createOwner('session-1');
    const started: { id: string; task: ScriptedTask }[] = [];
    for (let index = 0; index < 10_000; index += 1) {
      const task = scriptedTask({ kind: 'bash', label: `job ${index}`, owner });
      started.push({ id: (await tasks.start(task.spec)).id, task });
    }
    // Some end (among the newest and the oldest), one foreground call is in flight.
    for (const index of [9_999, 9_990, 3, 0]) started[index]!.task.settle();
    await tasks.start(scriptedTask({ kind: 'bash', label: 'foreground', owner, background: false }).spec);
    await flushMicrotasks();
    const { taskList } = createTaskTools({ tasks });
    const answer = await executeTool(
      taskList,
      {},
      { caller: owner, toolCallId: 'c', signal: AbortSignal.timeout(60_000) },
    );
    const lines = answer.text.split('\n');
    expect(lines[0]).toBe('(9950 more tasks not shown: 9946 older live, 4 finished)');
    const liveShown = started
      .map((entry, index) => ({ ...entry, index }))
      .filter(({ index }) => ![9_999, 9_990, 3, 0].includes(index))
      .slice(-50);
    expect(lines.slice(1)).toEqual(liveShown.map(({ id, index }) => `${id} [bash] running — job ${index}`));
    for (const { task } of started) task.settle();
    await tasks.dispose();
  });

  it('keeps the bounded listing equal to a full read through starts, ends, moves and resumes', async () => {
    const tasks = service(1_000);
    const owner = createOwner('session-1');
    const other = createOwner('session-2');
    const all: { id: TaskId; task: ScriptedTask; live: boolean; owner: typeof owner }[] = [];
    let resumes = 0;
    let seed = 7;
    const random = (below: number) => {
      seed = (seed * 48_271) % 2_147_483_647;
      return seed % below;
    };
    for (let step = 0; step < 600; step += 1) {
      const roll = random(10);
      const live = all.filter((entry) => entry.live);
      const ended = all.filter((entry) => !entry.live && entry.owner === owner);
      if (roll < 5 || live.length === 0) {
        const who = random(4) === 0 ? other : owner;
        const task = scriptedTask({
          kind: 'bash',
          label: `t${step}`,
          owner: who,
          background: random(6) !== 0,
        });
        all.push({ id: (await tasks.start(task.spec)).id, task, live: true, owner: who });
      } else if (roll < 8) {
        const entry = live[random(live.length)]!;
        entry.task.settle();
        entry.live = false;
      } else if (roll < 9) {
        const entry = live[random(live.length)]!;
        tasks.requestBackground(entry.id, entry.owner);
      } else if (ended.length > 0) {
        const entry = ended[random(ended.length)]!;
        try {
          const task = scriptedTask({ kind: 'bash', label: 'resumed', owner, spec: { resumeId: entry.id } });
          await tasks.start(task.spec);
          entry.task = task;
          entry.live = true;
          resumes += 1;
        } catch {
          // Forgotten by retention already: nothing to resume.
        }
      }
      await flushMicrotasks();
      for (const max of [1, 5, 50]) {
        expect(tasks.listBackground!(owner, max)).toEqual(backgroundListingOf(tasks.list(owner), max));
      }
    }
    expect(resumes).toBeGreaterThan(5);
    for (const entry of all) if (entry.live) entry.task.settle();
    await flushMicrotasks();
    await tasks.dispose();
  });
});
