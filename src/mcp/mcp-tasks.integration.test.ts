/**
 * MCP Tasks (spec 2025-11-25) on `errand mcp`: a task-augmented `bash` call creates a task bound to the
 * Errand task running the command; tasks/get reads its real status, tasks/result returns its output and
 * exit code, tasks/cancel really stops the process. Driven by the official client SDK over stdio.
 */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { isAlive } from '../../test/fixtures/bash/index.js';
import { type McpCli, startMcpCli, textBlocks } from '../../test/support/mcp-client.js';

const directories: string[] = [];
const clis: McpCli[] = [];

afterEach(async () => {
  for (const cli of clis.splice(0)) await cli.client.close();
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

async function start(args: readonly string[] = []): Promise<McpCli> {
  const home = realpathSync(mkdtempSync(join(tmpdir(), 'errand-mcp-tasks-')));
  directories.push(home);
  const cli = await startMcpCli({ args: ['--home', home, ...args] });
  clis.push(cli);
  return cli;
}

/** Sends a task-augmented tools/call for `bash` and returns the created task. */
async function createBashTask(cli: McpCli, command: string) {
  const created = await cli.client.request(
    { method: 'tools/call', params: { name: 'bash', arguments: { command }, task: { ttl: 60_000 } } },
    CreateTaskResultSchema,
  );
  return created.task;
}

describe('MCP Tasks for task-augmented bash calls', () => {
  it('create → get → result: the real output and exit code', async () => {
    const cli = await start();
    const task = await createBashTask(cli, 'echo from-the-task; exit 3');
    expect(task.status).toMatch(/^(working|completed)$/);
    expect(task.ttl).toBe(60_000);
    expect(task.statusMessage).toMatch(/^bash-\d+ /);

    // tasks/result blocks until the command has ended.
    const result = await cli.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    const [text] = textBlocks(result as Parameters<typeof textBlocks>[0]);
    expect(text).toContain('from-the-task');
    expect(text).toContain('[exit code: 3]');
    expect(result.isError).toBe(false);

    const got = await cli.client.experimental.tasks.getTask(task.taskId);
    expect(got.status).toBe('completed');
    expect(got.statusMessage).toMatch(/^bash-\d+ failed \(exit code 3\)$/);
    const listed = await cli.client.experimental.tasks.listTasks();
    expect(listed.tasks.map((entry) => entry.taskId)).toEqual([task.taskId]);
  });

  it('callToolStream: task created, status polled, result delivered', async () => {
    const cli = await start();
    const kinds: string[] = [];
    let resultText = '';
    for await (const message of cli.client.experimental.tasks.callToolStream(
      { name: 'bash', arguments: { command: 'echo streamed' } },
      CallToolResultSchema,
      { task: { ttl: 60_000 } },
    )) {
      kinds.push(message.type);
      if (message.type === 'result') resultText = textBlocks(message.result as never).join('\n');
      if (message.type === 'error') throw message.error;
    }
    expect(kinds[0]).toBe('taskCreated');
    expect(kinds.at(-1)).toBe('result');
    expect(resultText).toContain('streamed');
    expect(resultText).toContain('[exit code: 0]');
  });

  it('tasks/cancel stops the process (gone when the answer comes) and the result says so', async () => {
    const cli = await start();
    const task = await createBashTask(cli, 'echo started; exec sleep 600');
    const running = await cli.client.experimental.tasks.getTask(task.taskId);
    expect(running.status).toBe('working');
    const pid = Number(/\(pid (\d+)\)/.exec(running.statusMessage ?? '')?.[1]);
    const errandId = /^(bash-\d+)/.exec(running.statusMessage ?? '')?.[1];
    expect(isAlive(pid)).toBe(true);

    const cancelled = await cli.client.experimental.tasks.cancelTask(task.taskId);
    expect(cancelled.status).toBe('cancelled');
    expect(isAlive(pid)).toBe(false);
    expect((await cli.client.experimental.tasks.getTask(task.taskId)).status).toBe('cancelled');

    const result = await cli.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(textBlocks(result as never)[0]).toMatch(/\[cancelled/);
    // The Errand side agrees: the task was killed, by the user (the MCP client), and is notified in band.
    const listed = textBlocks(await cli.call('task_list'));
    expect(listed[0]).toMatch(new RegExp(`^${errandId} \\[bash\\] killed`, 'm'));
  });

  it('an ordinary bash call on the task-capable tool behaves like the plain tool and leaves no task', async () => {
    const cli = await start();
    const result = await cli.call('bash', { command: 'echo plain' });
    expect(textBlocks(result)).toEqual(['plain\n[exit code: 0]']);
    expect((await cli.client.experimental.tasks.listTasks()).tasks).toEqual([]);
    const invalid = await cli.call('bash', { command: '' });
    expect(invalid.isError).toBe(true);
    expect(textBlocks(invalid)[0]).toContain('command');
  });

  it('tasks/result claims the ending like task_output: no <task-notification> repeats it', async () => {
    const cli = await start();
    const task = await createBashTask(cli, 'echo read-through-tasks; exit 6');
    const errandId = /^(bash-\d+)/.exec(task.statusMessage ?? '')?.[1];
    // Its notification is queued (the logging side channel says so) before the client reads the result.
    await cli.waitForLog((params) => (params.data as { taskId?: string } | undefined)?.taskId === errandId);
    const result = await cli.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(textBlocks(result as never)[0]).toContain('[exit code: 6]');
    // The next tool result carries its own text only.
    expect(textBlocks(await cli.call('task_list'))).toHaveLength(1);
    // A task whose result nobody read is still notified once, on the next result.
    const unread = await createBashTask(cli, 'exit 0');
    const unreadId = /^(bash-\d+)/.exec(unread.statusMessage ?? '')?.[1];
    await cli.waitForLog((params) => (params.data as { taskId?: string } | undefined)?.taskId === unreadId);
    const next = textBlocks(await cli.call('task_list'));
    expect(next).toHaveLength(2);
    expect(next[1]).toContain(`<task-id>${unreadId}</task-id>`);
  });
});

describe('errand mcp and the client it serves', () => {
  it("names a notification's <tool-use-id> after the client's call id from _meta (Claude Code, Codex), else the request", async () => {
    const cli = await start();
    const background = async (meta: Record<string, unknown> | undefined) => {
      const result = await cli.client.request(
        {
          method: 'tools/call',
          params: {
            name: 'bash',
            arguments: { command: 'exit 0', run_in_background: true },
            ...(meta ? { _meta: meta } : {}),
          },
        },
        CallToolResultSchema,
      );
      const id = /Started (bash-\d+)/.exec(textBlocks(result)[0] ?? '')?.[1];
      const log = await cli.waitForLog(
        (params) => (params.data as { taskId?: string } | undefined)?.taskId === id,
      );
      return (log.data as { notification: string }).notification;
    };
    expect(await background({ 'claudecode/toolUseId': 'toolu_01XYZ' })).toContain(
      '<tool-use-id>toolu_01XYZ</tool-use-id>',
    );
    expect(await background({ callId: 'call_abc', progressToken: 3 })).toContain(
      '<tool-use-id>call_abc</tool-use-id>',
    );
    expect(await background(undefined)).toMatch(/<tool-use-id>mcp-\d+<\/tool-use-id>/);
  });

  it('runs 20 background commands at once by default, and --max-tasks sets the limit', async () => {
    const cli = await start();
    const started = await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        cli.call('bash', { command: `sleep ${30 + index}`, run_in_background: true }),
      ),
    );
    expect(started.filter((result) => result.isError)).toEqual([]);
    const limited = await start(['--max-tasks', '2']);
    for (let index = 0; index < 2; index += 1) {
      expect(
        (await limited.call('bash', { command: `sleep ${30 + index}`, run_in_background: true })).isError,
      ).toBe(false);
    }
    const refused = await limited.call('bash', { command: 'sleep 32', run_in_background: true });
    expect(refused.isError).toBe(true);
    expect(textBlocks(refused)[0]).toMatch(/ADMISSION_LIMIT|at most 2/);
  });

  it("steers the model: Errand's bash for long work, Errand's task tools for Errand's ids", async () => {
    const cli = await start();
    const instructions = cli.client.getInstructions() ?? '';
    expect(instructions).toMatch(/Prefer this server's bash over your client's built-in shell/);
    expect(instructions).toMatch(/TaskOutput, TaskStop, TaskList\) do not know them/);
    const { tools } = await cli.client.listTools();
    const description = (name: string) => tools.find((tool) => tool.name === name)?.description ?? '';
    expect(description('bash')).toMatch(/Prefer this tool over your client's built-in shell/);
    expect(description('task_output')).toMatch(/Only for Errand's task ids/);
    expect(description('task_kill')).toMatch(/Only for Errand's task ids/);
  });
});
