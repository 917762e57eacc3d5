import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { queueBoundForTasks } from '../host/errand-runtime.js';
import { createTaskService } from '../registry/index.js';
import { createOwner, ErrandError } from '../tasks/index.js';
import { scriptedTask } from '../testing/index.js';
import { createMcpRuntime } from './mcp-runtime.js';

const home = mkdtempSync(join(tmpdir(), 'errand-mcp-runtime-'));

afterAll(() => {
  rmSync(home, { recursive: true, force: true });
});

describe('createMcpRuntime maxTasks', () => {
  it('refuses a runtime-wide limit below it, naming both', async () => {
    const error = await createMcpRuntime({ home, maxTasks: 2000, tasks: { maxLiveTasks: 1500 } }).catch(
      (caught: unknown) => caught,
    );
    expect(ErrandError.hasCode(error, 'INVALID_ARGUMENT')).toBe(true);
    expect(String((error as Error).message)).toContain('tasks.maxLiveTasks');
    expect(String((error as Error).message)).toContain('maxTasks');
  });
});

describe('the queue bound follows the task limit', () => {
  it('is 1000 up to 500 live tasks per session, twice the task limit above', () => {
    expect(queueBoundForTasks(10)).toBe(1000);
    expect(queueBoundForTasks(500)).toBe(1000);
    expect(queueBoundForTasks(5000)).toBe(10_000);
  });
});

describe('ADMISSION_LIMIT names the limit it hit', () => {
  it('says `tasks.maxLiveTasks` when the whole service is full', async () => {
    const tasks = createTaskService({ maxLiveTasksPerOwner: 5, maxLiveTasks: 1 });
    tasks.attachController('test');
    const first = scriptedTask();
    await tasks.start(first.spec);
    const error = await tasks
      .start({ ...scriptedTask().spec, owner: createOwner('b') })
      .catch((caught: unknown) => caught);
    expect(String((error as Error).message)).toContain('`tasks.maxLiveTasks`');
    expect((error as ErrandError).context).toMatchObject({ option: 'tasks.maxLiveTasks', limit: 1 });
    first.settle();
    await tasks.dispose();
  });
});
