import { afterEach, describe, expect, it } from 'vitest';
import { fixture, fixtureCommand, type PtyTestbed, ptyTestbed } from '../../../test/fixtures/pty/harness.js';
import { createOwner, type Owner } from '../../tasks/index.js';
import { createTaskTools, executeTool, type TaskTools, type ToolContext } from '../../tools/index.js';
import { createPtyTools } from './pty-tools.js';

let testbed: PtyTestbed | undefined;
let taskTools: TaskTools | undefined;
const owners: Owner[] = [];

afterEach(async () => {
  for (const owner of owners.splice(0)) await owner.dispose();
  taskTools?.dispose();
  await testbed?.close();
  testbed = undefined;
  taskTools = undefined;
});

function setup() {
  testbed = ptyTestbed();
  taskTools = createTaskTools({ tasks: testbed.tasks });
  const [ptyStart, ptyWrite, ptyResize] = createPtyTools(testbed.producer);
  const owner = createOwner(`session-${owners.length + 1}`);
  owners.push(owner);
  const context = (overrides: Partial<ToolContext> = {}): ToolContext => ({
    caller: owner,
    toolCallId: 'call_pty',
    signal: new AbortController().signal,
    cwd: fixture(''),
    ...overrides,
  });
  return {
    bed: testbed,
    tools: taskTools,
    ptyStart: ptyStart!,
    ptyWrite: ptyWrite!,
    ptyResize: ptyResize!,
    owner,
    context,
  };
}

describe('the pty tools', () => {
  it('pty_start answers at once with the task id as its canonical background value', async () => {
    const { bed, ptyStart, owner, context } = setup();
    const result = await executeTool(
      ptyStart,
      { command: fixtureCommand('echo-repl.sh'), description: 'a tiny repl', cols: 100, rows: 30 },
      context(),
    );
    expect(result.isError).toBe(false);
    expect(result.value).toEqual({ kind: 'background', taskId: 'pty-1' });
    expect(result.text).toMatch(/^Started pty task pty-1 \(pid \d+\) in a 100x30 terminal: a tiny repl\n/);
    expect(result.text).toContain('pty_write (task_id "pty-1")');
    expect(bed.tasks.get('pty-1', owner)).toMatchObject({
      ownerSessionId: owner.sessionId,
      detail: { toolUseId: 'call_pty', description: 'a tiny repl', cols: 100, rows: 30 },
    });
  });

  it('pty_start resolves workdir against the session directory', async () => {
    const { bed, ptyStart, tools, owner, context } = setup();
    const result = await executeTool(ptyStart, { command: 'pwd', workdir: '.' }, context());
    const taskId = (result.value as { taskId: string }).taskId;
    await bed.tasks.wait(taskId, 10_000, owner);
    const output = await executeTool(tools.taskOutput, { task_id: taskId }, context());
    expect(output.text).toBe(`${fixture('').replace(/\/$/, '')}\n[status: completed (exit code 0)]`);
  });

  it('pty_write types, presses keys, and shows the screen once wait_for appears; the screen counts as read', async () => {
    const { ptyStart, ptyWrite, tools, context } = setup();
    await executeTool(ptyStart, { command: fixtureCommand('echo-repl.sh') }, context());
    const ready = await executeTool(ptyWrite, { task_id: 'pty-1', wait_for: 'repl>' }, context());
    expect(ready.text).toMatch(/^repl>\n\[pty-1 running · 120x40 · cursor row 1, column 7\]$/);
    const answered = await executeTool(
      ptyWrite,
      // Waits for the next prompt too: the echo alone can be on screen a moment before it.
      { task_id: 'pty-1', input: 'hello', keys: ['Enter'], wait_for: 'echo: hello\nrepl>' },
      context(),
    );
    expect(answered.isError).toBe(false);
    expect(answered.text).toContain('repl> hello\necho: hello\nrepl>\n[pty-1 running');
    expect(answered.value).toMatchObject({ taskId: 'pty-1', running: true, matched: true });
    const output = await executeTool(tools.taskOutput, { task_id: 'pty-1' }, context());
    expect(output.text).toBe('(no new output)\n[status: running]');
  });

  it('pty_write reports a wait_for that did not appear in time, without failing', async () => {
    const { ptyStart, ptyWrite, context } = setup();
    await executeTool(ptyStart, { command: fixtureCommand('echo-repl.sh') }, context());
    const result = await executeTool(
      ptyWrite,
      { task_id: 'pty-1', wait_for: 'never shown', timeout_ms: 1 },
      context(),
    );
    expect(result.isError).toBe(false);
    expect(result.text).toContain('"never shown" did not appear within 1 ms');
    expect(result.value).toMatchObject({ matched: false });
  });

  it('Ctrl-C written with pty_write interrupts the foreground job of an interactive shell', async () => {
    const { ptyStart, ptyWrite, context } = setup();
    const env = { PS1: 'shell$ ' };
    await executeTool(ptyStart, { command: 'bash --norc --noprofile -i' }, context({ env }));
    await executeTool(ptyWrite, { task_id: 'pty-1', wait_for: 'shell$' }, context());
    const started = await executeTool(
      ptyWrite,
      {
        task_id: 'pty-1',
        // The job itself says it is ready: by then the shell has given it the terminal.
        input: `bash -c "printf 'slee%s\\n' ping; exec sleep 300"`,
        keys: ['Enter'],
        wait_for: 'sleeping',
      },
      context(),
    );
    expect(started.value).toMatchObject({ matched: true });
    const interrupted = await executeTool(
      ptyWrite,
      { task_id: 'pty-1', keys: ['Ctrl-C'], input: '', wait_for: '^C' },
      context(),
    );
    expect(interrupted.value).toMatchObject({ matched: true });
    const status = await executeTool(
      ptyWrite,
      { task_id: 'pty-1', input: 'echo "status=$?"', keys: ['Enter'], wait_for: 'status=130' },
      context(),
    );
    expect(status.value, status.text).toMatchObject({ matched: true, running: true });
  });

  it('pty_resize tells the program its new size; out-of-range sizes are refused by the schema', async () => {
    const { ptyStart, ptyWrite, ptyResize, context } = setup();
    await executeTool(ptyStart, { command: fixtureCommand('winch.mjs'), cols: 80, rows: 24 }, context());
    await executeTool(ptyWrite, { task_id: 'pty-1', wait_for: 'ready 80x24' }, context());
    const resized = await executeTool(ptyResize, { task_id: 'pty-1', cols: 100, rows: 30 }, context());
    expect(resized.text).toContain('100x30 · cursor row');
    const seen = await executeTool(ptyWrite, { task_id: 'pty-1', wait_for: 'resized 100x30' }, context());
    expect(seen.value).toMatchObject({ matched: true, cols: 100, rows: 30 });
    const refused = await executeTool(ptyResize, { task_id: 'pty-1', cols: 5, rows: 30 }, context());
    expect(refused.isError).toBe(true);
    expect(refused.text).toMatch(/^Error \[INVALID_TOOL_INPUT\]: invalid input for pty_resize: `cols`/);
  });

  it("another session cannot type into, resize or read a session's pty task", async () => {
    const { ptyStart, ptyWrite, ptyResize, tools, context } = setup();
    await executeTool(ptyStart, { command: fixtureCommand('echo-repl.sh') }, context());
    const stranger = createOwner('session-stranger');
    owners.push(stranger);
    const as = context({ caller: stranger });
    for (const result of [
      await executeTool(ptyWrite, { task_id: 'pty-1', input: 'x' }, as),
      await executeTool(ptyResize, { task_id: 'pty-1', cols: 90, rows: 30 }, as),
    ]) {
      expect(result).toMatchObject({
        isError: true,
        text: 'Error [TASK_NOT_FOUND]: No task with id "pty-1"',
      });
    }
    const read = await executeTool(tools.taskOutput, { task_id: 'pty-1' }, as);
    expect(read.text).toContain('TASK_NOT_FOUND');
  });

  it('task_kill stops a pty task: SIGINT to its foreground job, reported as killed', async () => {
    const { ptyStart, ptyWrite, tools, context } = setup();
    await executeTool(ptyStart, { command: "printf 'ready\\n'; sleep 300" }, context());
    await executeTool(ptyWrite, { task_id: 'pty-1', wait_for: 'ready' }, context());
    const killed = await executeTool(tools.taskKill, { task_id: 'pty-1', reason: 'done with it' }, context());
    expect(killed.text).toContain('[status: killed (signal SIGINT');
    expect(killed.value).toMatchObject({ taskId: 'pty-1', status: 'killed', stopped: true });
    const refused = await executeTool(ptyWrite, { task_id: 'pty-1', input: 'x' }, context());
    expect(refused.text).toBe('Error [TASK_NOT_RUNNING]: Task pty-1 is killed, not running');
  });

  it('a call aborted before it starts starts nothing', async () => {
    const { bed, ptyStart, context } = setup();
    const aborted = new AbortController();
    aborted.abort(new Error('interrupted'));
    const result = await ptyStart.execute({ command: 'true' }, context({ signal: aborted.signal }));
    expect(result).toMatchObject({ isError: true });
    expect(result.text).toContain('TOOL_CALL_ABORTED');
    expect(bed.tasks.list()).toEqual([]);
  });

  it('publishes JSON schemas that list the keys and bound the sizes', () => {
    const { ptyStart, ptyWrite, ptyResize } = setup();
    expect(ptyStart.jsonSchema).toMatchObject({ required: ['command'], additionalProperties: false });
    const keys = (ptyWrite.jsonSchema as { properties: { keys: { items: { enum: string[] } } } }).properties
      .keys;
    expect(keys.items.enum).toEqual(
      expect.arrayContaining(['Enter', 'Tab', 'Escape', 'Up', 'Ctrl-C', 'Ctrl-D']),
    );
    expect(ptyResize.jsonSchema).toMatchObject({
      properties: { cols: { minimum: 10, maximum: 500 }, rows: { minimum: 2, maximum: 200 } },
    });
  });
});
