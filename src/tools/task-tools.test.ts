import { afterEach, describe, expect, it, vi } from 'vitest';
import { capturingLogger, flushMicrotasks, serviceForTest } from '../../test/support/registry.js';
import { createTaskService } from '../registry/index.js';
import { createOwner, type Owner, type TaskService } from '../tasks/index.js';
import { type ScriptedTaskOptions, scriptedTask } from '../testing/index.js';
import { formatTruncationMarker } from '../text/index.js';
import { createTaskTools, TASK_TOOLS_PROMPT, type TaskTools } from './index.js';
import { type AnyToolDefinition, executeTool, type ToolContext } from './tool-definition.js';

afterEach(() => {
  vi.useRealTimers();
});

function context(caller: Owner | undefined, signal = new AbortController().signal): ToolContext {
  return { caller, toolCallId: 'call_1', signal };
}

interface Harness {
  tasks: TaskService;
  tools: TaskTools;
  owner: Owner;
  start(options?: ScriptedTaskOptions): Promise<{ id: string; task: ReturnType<typeof scriptedTask> }>;
  call(
    name: 'task_output' | 'task_list' | 'task_kill',
    input: unknown,
    caller?: Owner | undefined,
  ): Promise<{ text: string; isError: boolean; value?: unknown }>;
}

function harness(options: Partial<Parameters<typeof createTaskTools>[0]> = {}): Harness {
  const { tasks } = serviceForTest();
  const tools = createTaskTools({ tasks, ...options });
  const owner = createOwner('session-1');
  const byName: Record<string, AnyToolDefinition> = {
    task_output: tools.taskOutput,
    task_list: tools.taskList,
    task_kill: tools.taskKill,
  };
  return {
    tasks,
    tools,
    owner,
    async start(taskOptions = {}) {
      const task = scriptedTask({ kind: 'bash', label: 'npm test', owner, ...taskOptions });
      const { id } = await tasks.start(task.spec);
      return { id, task };
    },
    call(name, input, caller = owner) {
      return executeTool(byName[name], input, context(caller));
    },
  };
}

describe('createTaskTools', () => {
  it('attaches a task controller for as long as the tools exist', async () => {
    const logger = capturingLogger();
    const tasks = createTaskService({ logger });
    await expect(tasks.start(scriptedTask().spec)).rejects.toMatchObject({ code: 'NO_CONTROLLER' });
    const tools = createTaskTools({ tasks });
    await expect(tasks.start(scriptedTask().spec)).resolves.toMatchObject({ status: 'running' });
    tools.dispose();
    tools.dispose();
    await expect(tasks.start(scriptedTask().spec)).rejects.toMatchObject({ code: 'NO_CONTROLLER' });
    await tasks.dispose();
  });

  it('validates its options before attaching', () => {
    const { tasks } = serviceForTest();
    expect(() => createTaskTools({ tasks, defaultWaitMs: 700_000 })).toThrow(
      'Expected `defaultWaitMs` to be no greater than `maxWaitMs` (600000), got 700000 (number)',
    );
    expect(() => createTaskTools({ tasks, maxWaitMs: 0 })).toThrow(
      'Expected `maxWaitMs` to be a positive integer no greater than 2147483647, got 0 (number)',
    );
    expect(() => createTaskTools({ tasks, killSettleMs: -1 })).toThrow(/killSettleMs/);
    expect(() => createTaskTools({ tasks, defaultOutputLimitBytes: 0 })).toThrow(/defaultOutputLimitBytes/);
    expect(() => createTaskTools({ tasks: {} as TaskService })).toThrow(
      'Expected `tasks` to be a TaskService',
    );
    expect(createTaskTools({ tasks, maxWaitMs: 10_000 }).options).toMatchObject({
      defaultWaitMs: 10_000,
      maxWaitMs: 10_000,
    });
  });

  it('serves only the owners of controllerScope when it is given', async () => {
    const tasks = createTaskService({ logger: capturingLogger() });
    const served = createOwner('served');
    const tools = createTaskTools({ tasks, controllerScope: { owner: served } });
    await expect(tasks.start(scriptedTask({ owner: served }).spec)).resolves.toMatchObject({
      status: 'running',
    });
    await expect(tasks.start(scriptedTask({ owner: createOwner('other') }).spec)).rejects.toMatchObject({
      code: 'NO_CONTROLLER',
    });
    await expect(tasks.start(scriptedTask().spec)).rejects.toMatchObject({ code: 'NO_CONTROLLER' });
    expect(() => createTaskTools({ tasks, controllerScope: { serves: 1 as never } })).toThrow(/`serves`/);
    tools.dispose();
    await tasks.dispose();
  });

  it.each([
    ['task_output', { task_id: 'bash-1', bogus: 1 }],
    ['task_list', { bogus: 1 }],
    ['task_kill', { task_id: 'bash-1', reason: 'r', bogus: 1 }],
  ] as const)('%s rejects an unknown argument key, naming it (as bash does)', async (name, input) => {
    const h = harness();
    const { id, task } = await h.start({ onCancel: 'ignore' });
    expect(id).toBe('bash-1');
    const result = await h.call(name, input);
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(new RegExp(`^Error \\[INVALID_TOOL_INPUT\\]: invalid input for ${name}: `));
    expect(result.text).toContain('"bogus"');
    // Nothing ran: no read, no stop.
    expect(task.cancelReasons).toEqual([]);
    expect(h.tasks.get(id, h.owner).status).toBe('running');
  });

  it('answers TOOLS_DISPOSED once disposed', async () => {
    const h = harness();
    const { id } = await h.start();
    h.tools.dispose();
    expect(await h.call('task_output', { task_id: id })).toEqual({
      isError: true,
      text: 'Error [TOOLS_DISPOSED]: The task_output tool is disposed; its task controller is detached',
    });
    expect((await h.call('task_list', {})).text).toMatch(/^Error \[TOOLS_DISPOSED\]/);
    expect((await h.call('task_kill', { task_id: id })).text).toMatch(/^Error \[TOOLS_DISPOSED\]/);
  });
});

describe('task_output', () => {
  it('returns streaming output since the last read, always ending with the status', async () => {
    const h = harness();
    const { id, task } = await h.start();
    task.push('line 1\n');
    expect(await h.call('task_output', { task_id: id })).toEqual({
      text: 'line 1\n[status: running]',
      isError: false,
      value: { taskId: id, status: 'running', attempt: 1 },
    });
    expect((await h.call('task_output', { task_id: id })).text).toBe('(no new output)\n[status: running]');
    task.push('line 2');
    task.settle({ status: 'completed', detail: { exitCode: 0 } });
    await flushMicrotasks();
    expect(await h.call('task_output', { task_id: id })).toEqual({
      text: 'line 2\n[status: completed (exit code 0)]',
      isError: false,
      value: { taskId: id, status: 'completed', attempt: 1 },
      // The answer showed the end: the typed field says so, for every surface to discard its notification.
      taskEnds: [{ taskId: id, attempt: 1 }],
    });
  });

  it('shows the newest bytes or lines without moving the read position', async () => {
    const h = harness();
    const { id, task } = await h.start();
    task.push('one\ntwo\n\u001b[31mthree\u001b[0m\nfour\n');
    expect((await h.call('task_output', { task_id: id, tail_lines: 2 })).text).toBe(
      '[the last 2 lines of 28 bytes of output; your read position did not move]\nthree\nfour\n[status: running]',
    );
    expect((await h.call('task_output', { task_id: id, tail_bytes: 5 })).text).toBe(
      '[the newest 5 bytes of 28 bytes of output; your read position did not move]\nfour\n[status: running]',
    );
    // The model's own read still starts where it left off: at the beginning.
    expect((await h.call('task_output', { task_id: id })).text).toMatch(/^one\ntwo\n/);
    task.settle();
    await flushMicrotasks();
    const last = await h.call('task_output', { task_id: id, tail_lines: 1 });
    expect(last.text).toBe(
      '[the last line of 28 bytes of output; your read position did not move]\nfour\n[status: completed]',
    );
    // It showed the end: the claim is taken, and surfaces discard the notification.
    expect(h.tasks.get(id, h.owner).reported).toBe(true);
    expect(last).toMatchObject({ taskEnds: [{ taskId: id, attempt: 1 }] });
  });

  it('tails a final-output task once it has ended, and refuses a tail of both kinds', async () => {
    const h = harness({ maxTailLines: 10 });
    const { id, task } = await h.start({ kind: 'agent', label: 'review', streaming: false });
    expect((await h.call('task_output', { task_id: id, tail_lines: 1 })).text).toBe(
      '(no result yet: the result is returned once the task ends)\n[status: running]',
    );
    const both = await h.call('task_output', { task_id: id, tail_lines: 1, tail_bytes: 10 });
    expect(both).toMatchObject({ isError: true });
    expect(both.text).toContain('give tail_bytes or tail_lines, not both');
    expect((await h.call('task_output', { task_id: id, tail_lines: 11 })).text).toMatch(
      /INVALID_TOOL_INPUT.*tail_lines/,
    );
    task.settle({ status: 'completed', output: 'Summary:\nall good' });
    await flushMicrotasks();
    expect((await h.call('task_output', { task_id: id, tail_lines: 1 })).text).toBe(
      '[the last line of 17 bytes of output; your read position did not move]\nall good\n[status: completed]',
    );
  });

  it('takes the delivery claim when it reads a finished task', async () => {
    const h = harness();
    const { id, task } = await h.start();
    let claimedBy: string | undefined;
    h.tasks.onTaskDone(() => {
      claimedBy = 'notifier';
    });
    task.settle();
    await flushMicrotasks();
    expect(claimedBy).toBe('notifier');
    expect(h.tasks.get(id, h.owner).reported).toBe(false);
    await h.call('task_output', { task_id: id });
    expect(h.tasks.get(id, h.owner).reported).toBe(true);
  });

  it('returns a final-output task’s result once it has ended', async () => {
    const h = harness();
    const { id, task } = await h.start({ kind: 'agent', label: 'review', streaming: false });
    expect((await h.call('task_output', { task_id: id })).text).toBe(
      '(no result yet: the result is returned once the task ends)\n[status: running]',
    );
    task.settle({ status: 'completed', output: 'All good.' });
    await flushMicrotasks();
    expect((await h.call('task_output', { task_id: id })).text).toBe('All good.\n[status: completed]');
    expect((await h.call('task_output', { task_id: id })).text).toBe('All good.\n[status: completed]');
  });

  it('shows a failed task’s error and never reads "completed" for a non-zero exit code', async () => {
    const h = harness();
    const { id, task } = await h.start();
    task.settle({ status: 'completed', detail: { exitCode: 3 }, error: 'The command exit code 3' });
    await flushMicrotasks();
    expect((await h.call('task_output', { task_id: id })).text).toBe(
      '(no new output)\nerror: The command exit code 3\n[status: failed (exit code 3)]',
    );
  });

  it('waits when asked, and returns as soon as the task ends', async () => {
    vi.useFakeTimers();
    const h = harness();
    const { id, task } = await h.start();
    const answer = h.call('task_output', { task_id: id, wait: true });
    await vi.advanceTimersByTimeAsync(5_000);
    task.push('done\n');
    task.settle({ status: 'completed', detail: { exitCode: 0 } });
    expect((await answer).text).toBe('done\n[status: completed (exit code 0)]');
    expect(h.tasks.get(id, h.owner).reported).toBe(true);
  });

  it('reports a timed-out wait as running and leaves the task running', async () => {
    vi.useFakeTimers();
    const h = harness();
    const { id, task } = await h.start();
    const answer = h.call('task_output', { task_id: id, wait: true });
    await vi.advanceTimersByTimeAsync(30_000);
    expect((await answer).text).toBe('(no new output)\n[status: running (waited 30000 ms; still running)]');
    expect(task.cancelReasons).toEqual([]);
    expect(h.tasks.get(id, h.owner).status).toBe('running');
  });

  it('caps a requested timeout at maxWaitMs', async () => {
    vi.useFakeTimers();
    const h = harness({ maxWaitMs: 1_000, defaultWaitMs: 500 });
    const { id } = await h.start();
    const answer = h.call('task_output', { task_id: id, wait: true, timeout_ms: 60_000 });
    await vi.advanceTimersByTimeAsync(1_000);
    expect((await answer).text).toBe('(no new output)\n[status: running (waited 1000 ms; still running)]');
  });

  it('ends a pending wait when the tools are disposed', async () => {
    vi.useFakeTimers();
    const h = harness();
    const { id } = await h.start();
    const answer = h.call('task_output', { task_id: id, wait: true });
    await vi.advanceTimersByTimeAsync(10);
    h.tools.dispose();
    expect((await answer).text).toBe('(no new output)\n[status: running (the wait was interrupted)]');
  });

  it('collects the rest when the task ends during the read', async () => {
    const { tasks } = serviceForTest();
    const tools = createTaskTools({ tasks });
    const owner = createOwner('s');
    let resolveDone!: (outcome: { status: 'completed' }) => void;
    let chunks = ['first\n', 'rest\n'];
    const { id } = await tasks.start({
      kind: 'bash',
      label: 'slow reader',
      owner,
      run: () => ({
        cancel() {},
        done: new Promise((resolve) => (resolveDone = resolve)),
        async readOutput() {
          const chunk = chunks[0] ?? '';
          chunks = chunks.slice(1);
          if (chunk === 'first\n') {
            resolveDone({ status: 'completed' });
            await flushMicrotasks();
          }
          return chunk;
        },
      }),
    });
    const answer = await executeTool(tools.taskOutput, { task_id: id }, context(owner));
    expect(answer.text).toBe('first\nrest\n[status: completed]');
    expect(tasks.get(id, owner).reported).toBe(true);
  });

  it('gives the same clear error for empty, malformed, unknown and other sessions’ ids', async () => {
    const h = harness();
    const { id } = await h.start();
    const stranger = createOwner('session-2');
    const answers = await Promise.all([
      h.call('task_output', { task_id: '' }),
      h.call('task_output', { task_id: 'not an id' }),
      h.call('task_output', { task_id: 'bash-99' }),
      h.call('task_output', { task_id: id }, stranger),
      executeTool(h.tools.taskOutput, { task_id: id }, context(undefined)),
    ]);
    const shapes = answers.map((answer, index) => ({
      isError: answer.isError,
      text: answer.text.replace(JSON.stringify(['', 'not an id', 'bash-99', id, id][index]), '<id>'),
    }));
    for (const shape of shapes) {
      expect(shape).toEqual({
        isError: true,
        text: 'Error [TASK_NOT_FOUND]: No task with id <id>. Check the id; task_list shows the tasks you can use.',
      });
    }
  });

  it('rejects invalid input naming the field', async () => {
    const h = harness();
    expect(await h.call('task_output', { task_id: 'bash-1', timeout_ms: -5 })).toEqual({
      isError: true,
      text: 'Error [INVALID_TOOL_INPUT]: invalid input for task_output: `timeout_ms`: Too small: expected number to be >0',
    });
  });

  describe('output limit', () => {
    it('bounds the whole text, keeping the tail and the status line, naming the output file', async () => {
      const h = harness();
      const { id, task } = await h.start({
        outputLimitBytes: 120,
        spec: { detail: { outputFile: '/spill/bash-1.log' } },
      });
      task.push(`${'x'.repeat(500)}\nthe last line\n`);
      const { text } = await h.call('task_output', { task_id: id });
      expect(Buffer.byteLength(text)).toBeLessThanOrEqual(120);
      expect(text).toMatch(
        /^\[\.\.\. \d+ bytes skipped; full output: \/spill\/bash-1\.log \.\.\.\]\nx+\nthe last line\n\[status: running\]$/,
      );
    });

    it('reuses the producer’s truncation marker instead of adding a second one', async () => {
      const h = harness();
      const { id, task } = await h.start({ outputLimitBytes: 100 });
      task.push(`${formatTruncationMarker({ skippedBytes: 10_000, outputFile: '/f' })}\n${'y'.repeat(300)}`);
      const { text } = await h.call('task_output', { task_id: id });
      expect(text.match(/\[\.\.\. /g)).toHaveLength(1);
      expect(text).toMatch(
        /^\[\.\.\. 10\d{3} bytes skipped; full output: \/f \.\.\.\]\ny+\n\[status: running\]$/,
      );
    });

    it('uses the controller default when the producer set no limit, and bounds error results too', async () => {
      const h = harness({ defaultOutputLimitBytes: 60 });
      const { id, task } = await h.start();
      task.push('z'.repeat(1000));
      expect(Buffer.byteLength((await h.call('task_output', { task_id: id })).text)).toBeLessThanOrEqual(60);
      const invalid = await h.call('task_output', { task_id: id, wait: 'yes', timeout_ms: 'soon' });
      expect(invalid.isError).toBe(true);
      expect(Buffer.byteLength(invalid.text)).toBeLessThanOrEqual(60);
      expect(invalid.text).toMatch(/^Error \[INVALID_TOOL_INPUT\]/);
    });

    it('bounds a policy’s answer by the task’s limit', async () => {
      const h = harness();
      const { id } = await h.start({ outputLimitBytes: 50 });
      const answer = await executeTool(h.tools.taskOutput, { task_id: id }, context(h.owner), {
        policy: () => ({ text: `Denied: ${'because '.repeat(40)}`, isError: true }),
      });
      expect(Buffer.byteLength(answer.text)).toBeLessThanOrEqual(50);
      expect(answer.text.startsWith('Denied: because')).toBe(true);
    });
  });
});

describe('task_list', () => {
  it('says so when there are no background tasks', async () => {
    const h = harness();
    expect(await h.call('task_list', {})).toEqual({
      text: '(no background tasks)',
      isError: false,
      value: { tasks: [] },
    });
  });

  it('lists the caller’s background tasks, one line each', async () => {
    const h = harness();
    const first = await h.start({ label: 'npm test\n  --watch' });
    const second = await h.start({ kind: 'agent', label: 'review the diff', streaming: false });
    await h.start({ label: 'foreground work', background: false });
    const stranger = scriptedTask({ owner: createOwner('session-2'), label: 'not yours' });
    await h.tasks.start(stranger.spec);
    first.task.settle({ status: 'failed', detail: { exitCode: 1 } });
    await flushMicrotasks();
    expect((await h.call('task_list', {})).text).toBe(
      [`${first.id} [bash] failed — npm test --watch`, `${second.id} [agent] running — review the diff`].join(
        '\n',
      ),
    );
  });

  it('keeps every live task and the newest finished ones within maxListedTasks, and shortens labels', async () => {
    const h = harness({ maxListedTasks: 2, maxLabelChars: 10 });
    const old = await h.start({ label: 'old finished' });
    const recent = await h.start({ label: 'recent finished' });
    const live = await h.start({ label: 'still running here' });
    old.task.settle();
    recent.task.settle();
    await flushMicrotasks();
    expect((await h.call('task_list', {})).text).toBe(
      [
        '(1 older finished task not shown)',
        `${recent.id} [bash] completed — recent fi…`,
        `${live.id} [bash] running — still run…`,
      ].join('\n'),
    );
  });

  it('never shows more than maxListedTasks lines, live tasks included: the newest, and a count of the rest', async () => {
    const h = harness({ maxListedTasks: 3 });
    const started = [];
    for (let index = 0; index < 6; index += 1) started.push(await h.start({ label: `job ${index}` }));
    const finished = await h.start({ label: 'done' });
    finished.task.settle();
    await flushMicrotasks();
    expect((await h.call('task_list', {})).text).toBe(
      [
        '(4 more tasks not shown: 3 older live, 1 finished)',
        ...started.slice(3).map((task, index) => `${task.id} [bash] running — job ${index + 3}`),
      ].join('\n'),
    );
    for (const task of started) task.task.settle();
  });
});

describe('task_kill', () => {
  it('stops a running task, forwards the reason, reports the final status and takes the claim', async () => {
    const h = harness();
    const { id, task } = await h.start();
    const answer = await h.call('task_kill', { task_id: id, reason: 'superseded by a faster run' });
    expect(answer).toEqual({
      isError: false,
      text: `Stopped task ${id}.\n[status: killed (stopped by the model)]`,
      value: { taskId: id, status: 'killed', attempt: 1, stopped: true },
    });
    expect(task.cancelReasons).toEqual(['superseded by a faster run']);
    expect(h.tasks.get(id, h.owner)).toMatchObject({ stopInitiator: 'model', reported: true });
  });

  it('reports a finished task without consuming its pending output or its claim', async () => {
    const h = harness();
    const { id, task } = await h.start();
    task.push('unread output\n');
    task.settle({ status: 'completed', detail: { exitCode: 0 } });
    await flushMicrotasks();
    expect(await h.call('task_kill', { task_id: id })).toEqual({
      isError: false,
      text: `Task ${id} has already ended; nothing was stopped.\n[status: completed (exit code 0)]`,
      value: { taskId: id, status: 'completed', attempt: 1, stopped: false },
    });
    expect(h.tasks.get(id, h.owner).reported).toBe(false);
    expect((await h.call('task_output', { task_id: id })).text).toBe(
      'unread output\n[status: completed (exit code 0)]',
    );
  });

  it('fails when the producer’s cancel throws, and the task keeps running', async () => {
    const h = harness();
    const { id } = await h.start({ onCancel: 'throw' });
    expect(await h.call('task_kill', { task_id: id })).toEqual({
      isError: true,
      text: `Error [CANCEL_FAILED]: Cancelling task ${id} failed; the task keeps running\n[status: running]`,
    });
    expect(h.tasks.get(id, h.owner)).toMatchObject({ status: 'running', stopInitiator: undefined });
  });

  it('fails for a task that cannot be stopped', async () => {
    const h = harness();
    const { id } = await h.start({ kind: 'monitor', label: 'watch', cancellable: false });
    expect(await h.call('task_kill', { task_id: id })).toEqual({
      isError: true,
      text: `Error [CANCEL_NOT_SUPPORTED]: Task ${id} (monitor) cannot be cancelled\n[status: running]`,
    });
  });

  it('answers "still stopping" when the task does not end within killSettleMs', async () => {
    vi.useFakeTimers();
    const h = harness({ killSettleMs: 1_000 });
    const { id, task } = await h.start({ onCancel: 'ignore' });
    const answer = h.call('task_kill', { task_id: id });
    await vi.advanceTimersByTimeAsync(1_000);
    expect((await answer).text).toBe(
      `Asked task ${id} to stop; it is still stopping. task_output shows when it has ended.\n[status: stopping (stopped by the model)]`,
    );
    task.settle({ status: 'killed' });
    await flushMicrotasks();
  });

  it('gives the same not-found error as task_output', async () => {
    const h = harness();
    expect(await h.call('task_kill', { task_id: 'bash-7' })).toEqual({
      isError: true,
      text: 'Error [TASK_NOT_FOUND]: No task with id "bash-7". Check the id; task_list shows the tasks you can use.',
    });
  });
});

describe('executeTool', () => {
  it('fails a call whose signal was aborted before it started', async () => {
    const h = harness();
    const controller = new AbortController();
    controller.abort();
    expect(await executeTool(h.tools.taskList, {}, context(h.owner, controller.signal))).toEqual({
      isError: true,
      text: 'Error [TOOL_CALL_ABORTED]: The task_list call was aborted before it started',
    });
  });
});

describe('model-facing surface', () => {
  it('pins the three schemas and descriptions', () => {
    const { tasks } = serviceForTest();
    const tools = createTaskTools({ tasks });
    expect(
      tools.tools.map((tool) => ({
        name: tool.name,
        description: tool.description,
        schema: tool.jsonSchema,
      })),
    ).toMatchSnapshot();
  });

  it('pins the system prompt section', () => {
    expect(TASK_TOOLS_PROMPT).toMatchSnapshot();
  });
});
