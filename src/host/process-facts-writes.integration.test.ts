/**
 * When a running command's process facts reach its task record: with its next write, or
 * `limits.processFactsDelayMs` after they were learnt — never a write of their own for a command that
 * ends sooner. Its first record already holds what recognises its tree (tag, boot, status file); a
 * durable command's facts are written at once. Counts the store's task writes of a real runtime.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createMemorySessionStore, type SessionStore, type TaskRecordInput } from '../store/index.js';
import { createTrustedCaller } from '../tasks/index.js';
import { scriptedModel } from '../testing/index.js';
import { createErrandRuntime, type ErrandRuntime } from './errand-runtime.js';

const trusted = createTrustedCaller('facts-test');
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A runtime on a memory store whose task writes are kept, in order. */
async function countingRuntime(processFactsDelayMs?: number): Promise<{
  runtime: ErrandRuntime;
  store: SessionStore;
  writes: TaskRecordInput[];
}> {
  const store = createMemorySessionStore();
  const writes: TaskRecordInput[] = [];
  const upsert = store.upsertTask.bind(store);
  store.upsertTask = (record, options) => {
    writes.push(record);
    return upsert(record, options);
  };
  const runtime = await createErrandRuntime({
    model: scriptedModel([]),
    store,
    pty: false,
    subagents: false,
    notifications: { wakeBudget: 0 },
    logger: { warn() {} },
    ...(processFactsDelayMs === undefined ? {} : { limits: { processFactsDelayMs } }),
  });
  cleanups.push(() => runtime.dispose());
  return { runtime, store, writes };
}

function writesOf(writes: readonly TaskRecordInput[], taskId: string): TaskRecordInput[] {
  return writes.filter((write) => write.id === taskId);
}

describe('the process facts of a running command', () => {
  it('a command that ends before the delay writes its record twice: the start (its tree’s tag, boot and status file) and the ending (every fact)', async () => {
    const { runtime, writes } = await countingRuntime();
    const session = runtime.createSession();
    for (let index = 0; index < 3; index += 1) {
      const { taskId } = await runtime.bash.start({
        command: 'echo hi',
        owner: session.owner,
        background: true,
      });
      const ended = await runtime.tasks.wait(taskId, 10_000, trusted);
      expect(ended.status).toBe('completed');
      const [start, ending, ...rest] = writesOf(writes, taskId);
      expect(rest).toEqual([]);
      expect(start).toMatchObject({
        status: 'running',
        process: { tag: expect.stringMatching(/^ERRAND_PROCESS_TAG=/), bootId: expect.any(String) },
        statusFile: expect.stringMatching(/\.status$/),
      });
      expect(start!.process!.startTime).toBeUndefined();
      expect(start!.outputFile).toBeUndefined();
      expect(ending).toMatchObject({
        status: 'completed',
        // Its start time too, when it was read before the exit (a quick exit can come first).
        process: { pid: ended.detail.pid, tag: start!.process!.tag },
        outputFile: expect.stringMatching(/\.log$/),
      });
      const learnt = ended.detail.processStartTime;
      expect(ending!.process!.startTime).toBe(typeof learnt === 'number' ? learnt : undefined);
    }
  });

  it('a command still running writes them once, the delay after they were learnt', async () => {
    const { runtime, store, writes } = await countingRuntime(100);
    const session = runtime.createSession();
    const { taskId, handle } = await runtime.bash.start({
      // Silent: no output file to learn, whose creation could come after the delay.
      command: 'exec sleep 30',
      owner: session.owner,
      background: true,
    });
    await handle.spawned;
    const stored = await vi.waitFor(
      () => {
        const record = store.getTask(taskId, session.id);
        if (record?.process?.startTime === undefined) throw new Error('not written yet');
        return record;
      },
      { timeout: 5000, interval: 10 },
    );
    expect(stored.process).toMatchObject({ pid: handle.pid, tag: expect.any(String) });
    expect(writesOf(writes, taskId).map((write) => write.status)).toEqual(['running', 'running']);
    await runtime.tasks.kill(taskId, trusted);
  });

  it('with the delay 0 they are written at once, as their own write', async () => {
    const { runtime, writes } = await countingRuntime(0);
    const session = runtime.createSession();
    const { taskId } = await runtime.bash.start({
      command: 'exec sleep 30',
      owner: session.owner,
      background: true,
    });
    await vi.waitFor(() => expect(writesOf(writes, taskId)).toHaveLength(2), { timeout: 5000, interval: 10 });
    expect(writesOf(writes, taskId)[1]!.process!.startTime).toEqual(expect.any(Number));
    await runtime.tasks.kill(taskId, trusted);
  });

  it('a durable command’s are written at once whatever the delay: re-attaching it needs its pid', async () => {
    const { runtime, store } = await countingRuntime(60_000);
    const session = runtime.createSession();
    const { taskId, handle } = await runtime.bash.start({
      command: 'exec sleep 30',
      owner: session.owner,
      background: true,
      durable: true,
    });
    await handle.spawned;
    await vi.waitFor(
      () =>
        expect(store.getTask(taskId, session.id)?.process).toMatchObject({
          pid: handle.pid,
          startTime: expect.any(Number),
        }),
      { timeout: 5000, interval: 10 },
    );
    await runtime.tasks.kill(taskId, trusted);
  });
});
