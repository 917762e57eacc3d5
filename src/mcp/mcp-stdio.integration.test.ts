/**
 * `errand mcp` end to end: the built CLI driven by the official MCP client SDK over stdio. Background
 * bash, task_list, task_output with wait, task_kill of a process tree, the in-band notification (once),
 * the logging side channel, the working directory from roots, and a shutdown that leaves nothing.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isAlive, strayProcesses } from '../../test/fixtures/bash/index.js';
import {
  CLI_PATH,
  type McpCli,
  notifiedTaskIds,
  startMcpCli,
  textBlocks,
} from '../../test/support/mcp-client.js';
import { openSqliteSessionStore } from '../store/index.js';

const directories: string[] = [];
const clis: McpCli[] = [];

afterEach(async () => {
  for (const cli of clis.splice(0)) await cli.client.close();
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function temporaryDirectory(prefix: string): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  directories.push(directory);
  return directory;
}

async function start(options: Parameters<typeof startMcpCli>[0] = {}): Promise<McpCli> {
  const cli = await startMcpCli(options);
  clis.push(cli);
  return cli;
}

/** The task id a background `bash` result names. */
function startedTaskId(text: string): string {
  const id = /Started (bash-\d+) in the background/.exec(text)?.[1];
  if (!id) throw new Error(`not a background start: ${text}`);
  return id;
}

/** Reads a task's output with task_output until every pattern shows up (each read returns the new output). */
async function readUntil(cli: McpCli, taskId: string, patterns: readonly RegExp[]): Promise<string> {
  let seen = '';
  const deadline = Date.now() + 10_000;
  while (!patterns.every((pattern) => pattern.test(seen))) {
    if (Date.now() > deadline)
      throw new Error(`task ${taskId} never printed ${patterns.join(', ')}: ${seen}`);
    const result = await cli.call('task_output', { task_id: taskId, wait: false });
    seen += textBlocks(result)[0]!.replace(/\[status: [^\]]*\]\s*$/, '');
  }
  return seen;
}

/** Runs the CLI, writes `lines` to it and collects its stdout lines until one answers request `lastId`. */
function rawSession(args: readonly string[], lines: readonly object[], lastId: number) {
  const child = spawn(process.execPath, [CLI_PATH, 'mcp', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  let text = '';
  const answered = new Promise<Record<string, unknown>[]>((resolve, reject) => {
    child.once('error', reject);
    child.stdout.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const messages = text
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      if (messages.some((message) => message.id === lastId)) resolve(messages);
    });
  });
  for (const line of lines) child.stdin.write(`${JSON.stringify(line)}\n`);
  const close = () =>
    new Promise<string>((resolve) => {
      child.once('exit', () => resolve(stderr));
      child.stdin.end();
    });
  return { answered, close };
}

describe('errand mcp over stdio', () => {
  it('answers initialize once, before the runtime is loaded, with what the server itself answers', async () => {
    const home = temporaryDirectory('errand-mcp-home-');
    const session = rawSession(
      ['--home', home],
      [
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: '2025-06-18',
            capabilities: {},
            clientInfo: { name: 'raw', version: '1' },
          },
        },
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      ],
      2,
    );
    const messages = await session.answered;
    const answers = messages.filter((message) => message.id === 1);
    expect(answers).toHaveLength(1);
    expect(answers[0]).toMatchObject({
      result: { protocolVersion: '2025-06-18', serverInfo: { name: 'errand' } },
    });
    const listed = messages.find((message) => message.id === 2)!;
    const { tools } = listed.result as { tools: { name: string }[] };
    expect(tools.map((tool) => tool.name)).toContain('bash');
    // The server's own answer to the same request was held back, and it was the same.
    expect(await session.close()).not.toContain('differs');
  });

  it('lists its tools with bash task-capable and runs a foreground command', async () => {
    const home = temporaryDirectory('errand-mcp-home-');
    const cli = await start({ args: ['--home', home] });
    const { tools } = await cli.client.listTools();
    const names = tools.map((tool) => tool.name);
    expect(names).toEqual(
      expect.arrayContaining(['bash', 'task_output', 'task_list', 'task_kill', 'task_monitor']),
    );
    const bash = tools.find((tool) => tool.name === 'bash')!;
    expect(bash.execution?.taskSupport).toBe('optional');
    expect(Object.keys(bash.inputSchema.properties ?? {})).toEqual(
      expect.arrayContaining(['command', 'description', 'timeout_ms', 'run_in_background']),
    );
    const result = await cli.call('bash', { command: 'echo hello; exit 4' });
    expect(result.isError).toBe(false);
    expect(textBlocks(result)).toEqual(['hello\n[exit code: 4]']);
    expect(cli.client.getInstructions()).toContain('<task-notification>');
  });

  it('runs background bash, lists it, waits for it with task_output; a collected result is not notified', async () => {
    const home = temporaryDirectory('errand-mcp-home-');
    const cli = await start({ args: ['--home', home] });
    const started = await cli.call('bash', {
      command: 'echo building; sleep 0.2; echo built',
      description: 'the build',
      run_in_background: true,
    });
    const taskId = startedTaskId(textBlocks(started)[0]!);
    const listed = textBlocks(await cli.call('task_list'))[0]!;
    expect(listed).toMatch(new RegExp(`^${taskId} \\[bash\\] (running|completed) — the build$`, 'm'));
    const waited = await cli.call('task_output', { task_id: taskId, wait: true, timeout_ms: 20_000 });
    const [text, ...rest] = textBlocks(waited);
    expect(text).toContain('built');
    expect(text).toMatch(/\[status: completed/);
    // task_output with wait took the result: no notification follows, now or later.
    expect(rest).toEqual([]);
    expect(textBlocks(await cli.call('task_list'))).toHaveLength(1);
  });

  it('appends the notification to the next tool result exactly once, and logs it when it is queued', async () => {
    const home = temporaryDirectory('errand-mcp-home-');
    const cli = await start({ args: ['--home', home] });
    const taskId = startedTaskId(
      textBlocks(await cli.call('bash', { command: 'echo notify-me', run_in_background: true }))[0]!,
    );
    // The logging side channel fires when the notification is queued.
    const log = await cli.waitForLog(
      (params) => (params.data as { taskId?: string } | undefined)?.taskId === taskId,
    );
    expect(log.level).toBe('info');
    expect(log.logger).toBe('errand');
    expect((log.data as { notification: string }).notification).toContain(`<task-id>${taskId}</task-id>`);

    const first = textBlocks(await cli.call('task_list'));
    expect(first).toHaveLength(2);
    expect(notifiedTaskIds(first[1]!)).toEqual([taskId]);
    expect(first[1]).toContain('<status>completed</status>');
    expect(first[1]).toContain('notify-me');
    const second = textBlocks(await cli.call('bash', { command: 'true' }));
    expect(second).toEqual(['(no output)\n[exit code: 0]']);

    await cli.client.close();
    await cli.exited;
    const store = openSqliteSessionStore({ home });
    try {
      const [session] = store.listSessions();
      expect(session?.state).toBe('closed');
      const entries = store.listLedger(session!.id).filter((entry) => entry.kind === 'notification');
      expect(entries.map((entry) => [entry.taskId, entry.state])).toEqual([[taskId, 'delivered']]);
      const carriers = store
        .listMessages(session!.id)
        .filter((message) => message.source === 'mcp_tool_result');
      expect(carriers).toHaveLength(1);
    } finally {
      store.close();
    }
  });

  it('task_kill stops a whole process tree, escaped grandchildren included; no notification follows', async () => {
    const home = temporaryDirectory('errand-mcp-home-');
    const cli = await start({ args: ['--home', home] });
    const command =
      'sleep 600 & a=$!; (sleep 600 & echo "grandchild $!"; wait) & setsid sleep 600 & c=$!; echo "children $a $c"; wait';
    const taskId = startedTaskId(
      textBlocks(await cli.call('bash', { command, run_in_background: true }))[0]!,
    );
    const output = await readUntil(cli, taskId, [/children \d+ \d+\n/, /grandchild \d+\n/]);
    const pids = [...output.matchAll(/(?:children|grandchild) ([\d ]+)/g)].flatMap((match) =>
      match[1]!.trim().split(' ').map(Number),
    );
    expect(pids).toHaveLength(3);
    expect(pids.every(isAlive)).toBe(true);

    const killed = textBlocks(await cli.call('task_kill', { task_id: taskId, reason: 'no longer needed' }));
    expect(killed[0]).toMatch(/killed/);
    expect(pids.filter(isAlive)).toEqual([]);
    // The model's own kill is answered by its result: the session queues no notification for it.
    expect(textBlocks(await cli.call('task_list'))).toHaveLength(1);
  });

  it('runs commands in the client root when the client offers roots', async () => {
    const home = temporaryDirectory('errand-mcp-home-');
    const project = temporaryDirectory('errand-mcp-root-');
    const cli = await start({ args: ['--home', home], roots: [project] });
    expect(textBlocks(await cli.call('bash', { command: 'pwd' }))).toEqual([`${project}\n[exit code: 0]`]);
  });

  it('--cwd wins over the client roots', async () => {
    const home = temporaryDirectory('errand-mcp-home-');
    const project = temporaryDirectory('errand-mcp-root-');
    const fixed = temporaryDirectory('errand-mcp-cwd-');
    const cli = await start({ args: ['--home', home, '--cwd', fixed], roots: [project] });
    expect(textBlocks(await cli.call('bash', { command: 'pwd' }))).toEqual([`${fixed}\n[exit code: 0]`]);
  });

  it('on stdin close it stops every background process, removes output files and exits', async () => {
    const home = temporaryDirectory('errand-mcp-home-');
    const cli = await start({ args: ['--home', home] });
    const started = textBlocks(
      await cli.call('bash', { command: 'echo up; exec sleep 600', run_in_background: true }),
    )[0]!;
    const outputFile = /Output file: (.+)$/m.exec(started)?.[1];
    const pid = Number(/\(pid (\d+)\)/.exec(started)?.[1]);
    expect(outputFile && existsSync(outputFile)).toBe(true);
    expect(isAlive(pid)).toBe(true);

    await cli.client.close();
    await cli.exited;
    expect(isAlive(cli.pid)).toBe(false);
    expect(isAlive(pid)).toBe(false);
    expect(existsSync(outputFile!)).toBe(false);
    expect(strayProcesses()).toEqual([]);
  });

  it('on SIGTERM it shuts down the same way', async () => {
    const home = temporaryDirectory('errand-mcp-home-');
    const cli = await start({ args: ['--home', home] });
    const started = textBlocks(
      await cli.call('bash', { command: 'exec sleep 600', run_in_background: true }),
    )[0]!;
    const pid = Number(/\(pid (\d+)\)/.exec(started)?.[1]);
    process.kill(cli.pid, 'SIGTERM');
    await cli.exited;
    expect(isAlive(pid)).toBe(false);
    expect(strayProcesses()).toEqual([]);
    expect(cli.stderr.text).toBe('');
  });
});
