/**
 * `errand mcp` when things go wrong: the server killed with SIGKILL while 50 hard process trees run
 * (every process must be gone within 2 s), its transport closed by an oversized message (the server must
 * end with it, stopping its work), an oversized command (refused at the boundary), and a `--durable`
 * server killed and started again by the same client in the same directory (same task, output from the
 * model's cursor, one notification).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  CRASH_MARK_VARIABLE,
  hardTrees,
  isRunning,
  killMarked,
  markedPids,
  newMark,
  survivorsAfter,
} from '../../test/support/crash.js';
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
const marks: string[] = [];

afterEach(async () => {
  for (const cli of clis.splice(0)) await cli.client.close().catch(() => {});
  for (const mark of marks.splice(0)) killMarked(mark);
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function temporaryDirectory(prefix: string): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  directories.push(directory);
  return directory;
}

/** Starts `errand mcp` with a marker in its environment that only this test's processes carry. */
async function startMarked(mark: string, options: Parameters<typeof startMcpCli>[0]): Promise<McpCli> {
  process.env[CRASH_MARK_VARIABLE] = mark;
  try {
    const cli = await startMcpCli(options);
    clis.push(cli);
    return cli;
  } finally {
    delete process.env[CRASH_MARK_VARIABLE];
  }
}

function outputFileOf(result: string): string {
  const path = /Output file: (.+)$/m.exec(result)?.[1];
  if (path === undefined) throw new Error(`no output file in: ${result}`);
  return path;
}

function taskIdOf(result: string): string {
  const id = /Started (bash-\d+) in the background/.exec(result)?.[1];
  if (id === undefined) throw new Error(`not a background start: ${result}`);
  return id;
}

describe('errand mcp killed with SIGKILL', () => {
  it('leaves no process of 50 hard trees alive 2 s later', async () => {
    const mark = newMark();
    marks.push(mark);
    const home = temporaryDirectory('errand-mcp-crash-');
    const cli = await startMarked(mark, { args: ['--home', home, '--max-tasks', '60'] });
    const files = await Promise.all(
      hardTrees(50).map(async (command) =>
        outputFileOf(textBlocks(await cli.call('bash', { command, run_in_background: true }))[0]!),
      ),
    );
    await vi.waitFor(
      () => {
        for (const file of files) expect(readFileSync(file, 'utf8')).toContain('ready');
      },
      { timeout: 20_000, interval: 50 },
    );
    expect(markedPids(mark).length).toBeGreaterThanOrEqual(50 + 40 + 2);
    const killedAt = performance.now();
    process.kill(cli.pid, 'SIGKILL');
    const { survivors, elapsedMs } = await survivorsAfter(mark, killedAt, 2000);
    expect(survivors).toEqual([]);
    expect(elapsedMs).toBeLessThan(2000);
  });
});

/** `errand mcp` on raw pipes: JSON-RPC lines in, answers out. */
function rawServer(home: string, mark: string) {
  const child = spawn(process.execPath, [CLI_PATH, 'mcp', '--home', home], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, [CRASH_MARK_VARIABLE]: mark },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  child.stdin.on('error', () => {});
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const send = (message: unknown) => child.stdin.write(`${JSON.stringify(message)}\n`);
  const answer = (id: number) =>
    vi.waitFor(
      () => {
        const line = stdout
          .split('\n')
          .find((candidate) => candidate.includes(`"id":${id},`) || candidate.includes(`"id":${id}}`));
        if (line === undefined) throw new Error(`no answer to ${id} yet`);
        return JSON.parse(line) as { result?: { content?: { text: string }[] } };
      },
      { timeout: 10_000, interval: 20 },
    );
  return { child, send, answer, exited, stderr: () => stderr };
}

describe('errand mcp ends with its transport', () => {
  it('a message over the transport limit closes it, and the server stops its work and exits', async () => {
    const mark = newMark();
    marks.push(mark);
    const server = rawServer(temporaryDirectory('errand-mcp-frame-'), mark);
    server.send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    await server.answer(1);
    server.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    server.send({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'bash', arguments: { command: 'echo up; exec sleep 1000', run_in_background: true } },
    });
    const started = (await server.answer(2)).result!.content![0]!.text;
    const pid = Number(/\(pid (\d+)\)/.exec(started)?.[1]);
    expect(isRunning(pid)).toBe(true);
    // 11 MiB without a newline: more than the stdio transport buffers.
    const chunk = 'x'.repeat(1024 * 1024);
    for (let index = 0; index < 11; index += 1) server.child.stdin.write(chunk);
    expect(await server.exited).toBe(0);
    expect(isRunning(pid)).toBe(false);
    expect(markedPids(mark)).toEqual([]);
    expect(server.stderr()).toContain('the connection closed');
  });

  it('refuses an oversized command at the boundary, starting nothing', async () => {
    const mark = newMark();
    marks.push(mark);
    const cli = await startMarked(mark, { args: ['--home', temporaryDirectory('errand-mcp-big-')] });
    const result = await cli.call('bash', {
      command: `echo ${'y'.repeat(200_000)}`,
      run_in_background: true,
    });
    expect(result.isError).toBe(true);
    const [text] = textBlocks(result);
    expect(text).toContain('COMMAND_TOO_LARGE');
    expect(text).toContain('at most 65536 bytes (maxCommandBytes), got 200005 bytes');
    expect(textBlocks(await cli.call('task_list'))[0]).toContain('(no background tasks)');
  });
});

describe('errand mcp --durable restarted by the same client in the same directory', () => {
  it('resumes the session: the same task, output from the model’s cursor, one notification', async () => {
    const mark = newMark();
    marks.push(mark);
    const home = temporaryDirectory('errand-mcp-durable-');
    const work = temporaryDirectory('errand-mcp-work-');
    const go = join(work, 'go');
    const end = join(work, 'end');
    const args = ['--home', home, '--durable'];
    const first = await startMarked(mark, { args, cwd: work });
    const command = `echo before; until [ -e ${go} ]; do sleep 0.02; done; echo after; until [ -e ${end} ]; do sleep 0.02; done; exit 4`;
    const started = textBlocks(await first.call('bash', { command, run_in_background: true }))[0]!;
    const taskId = taskIdOf(started);
    const pid = Number(/\(pid (\d+)\)/.exec(started)?.[1]);
    await vi.waitFor(async () => {
      const read = textBlocks(await first.call('task_output', { task_id: taskId }))[0]!;
      expect(read).toContain('before');
    });
    process.kill(first.pid, 'SIGKILL');
    await first.exited;
    expect(isRunning(pid)).toBe(true);

    const second = await startMarked(mark, { args, cwd: work });
    expect(textBlocks(await second.call('task_list'))[0]).toMatch(new RegExp(`${taskId} \\[bash\\] running`));
    writeFileSync(go, '');
    let seen = '';
    await vi.waitFor(
      async () => {
        seen += textBlocks(await second.call('task_output', { task_id: taskId }))[0]!;
        expect(seen).toContain('after');
      },
      { timeout: 10_000, interval: 30 },
    );
    expect(seen).not.toContain('before');
    writeFileSync(end, '');
    const notified: string[] = [];
    await vi.waitFor(
      async () => {
        for (const text of textBlocks(await second.call('task_list')).slice(1)) notified.push(text);
        expect(notified.flatMap(notifiedTaskIds)).toContain(taskId);
      },
      { timeout: 10_000, interval: 50 },
    );
    for (let index = 0; index < 3; index += 1) {
      for (const text of textBlocks(await second.call('task_list')).slice(1)) notified.push(text);
    }
    expect(notified.flatMap(notifiedTaskIds).filter((id) => id === taskId)).toHaveLength(1);
    expect(notified.join('\n')).toContain('<exit-code>4</exit-code>');
    expect(existsSync(go)).toBe(true);
  });

  it('without --durable: the next server of the same client tells once what became of the dead one’s work, and the store keeps nothing running', async () => {
    const mark = newMark();
    marks.push(mark);
    const home = temporaryDirectory('errand-mcp-restart-');
    const work = temporaryDirectory('errand-mcp-work-');
    const args = ['--home', home];
    const first = await startMarked(mark, { args, cwd: work });
    const started = textBlocks(
      await first.call('bash', { command: 'sleep 600', run_in_background: true }),
    )[0]!;
    const taskId = taskIdOf(started);
    const pid = Number(/\(pid (\d+)\)/.exec(started)?.[1]);
    process.kill(first.pid, 'SIGKILL');
    await first.exited;
    // The lifeline stops the dead server's command.
    await vi.waitFor(() => expect(isRunning(pid)).toBe(false), { timeout: 10_000, interval: 50 });

    const second = await startMarked(mark, { args, cwd: work });
    const notified: string[] = [];
    const listed = textBlocks(await second.call('task_list'));
    expect(listed[0]).toMatch(new RegExp(`${taskId} \\[bash\\] (killed|lost)`));
    notified.push(...listed.slice(1));
    for (let index = 0; index < 3; index += 1)
      notified.push(...textBlocks(await second.call('task_list')).slice(1));
    // Told once, naming the case.
    expect(notified.flatMap(notifiedTaskIds).filter((id) => id === taskId)).toHaveLength(1);
    expect(notified.join('\n')).toMatch(/runtime_died|lost/);
    const store = openSqliteSessionStore({ home });
    try {
      const running = store
        .listTasks()
        .filter((task) => task.status === 'running' || task.status === 'stopping');
      expect(running).toEqual([]);
    } finally {
      store.close();
    }
    process.stderr.write(
      `restarted errand mcp: ${notified.join('\n').match(/<summary>[^<]*<\/summary>/)?.[0]}\n`,
    );
  });

  it('a clean exit leaves its durable command running and recorded; the next server takes it over', async () => {
    const mark = newMark();
    marks.push(mark);
    const home = temporaryDirectory('errand-mcp-durable-');
    const work = temporaryDirectory('errand-mcp-work-');
    const args = ['--home', home, '--durable'];
    const first = await startMarked(mark, { args, cwd: work });
    const durable = textBlocks(
      await first.call('bash', { command: 'echo up; exec sleep 1000', run_in_background: true }),
    )[0]!;
    const taskId = taskIdOf(durable);
    const pid = Number(/\(pid (\d+)\)/.exec(durable)?.[1]);
    await first.client.close();
    await first.exited;
    expect(isRunning(pid)).toBe(true);

    const second = await startMarked(mark, { args, cwd: work });
    expect(textBlocks(await second.call('task_list'))[0]).toMatch(new RegExp(`${taskId} \\[bash\\] running`));
    const killed = textBlocks(await second.call('task_kill', { task_id: taskId }))[0]!;
    expect(killed).toMatch(/stop/i);
    await vi.waitFor(() => expect(isRunning(pid)).toBe(false), { timeout: 10_000 });
  });
});
