/**
 * `errand hook` against a real `errand mcp` (both the built CLI, both children of this test process,
 * which plays the client): the Claude Code contract checked against its documented JSON — `PostToolUse`
 * and `UserPromptSubmit` answer with `hookSpecificOutput.additionalContext`, `Stop` with
 * `{"decision":"block","reason"}` — each notification once across hooks and tool results, a hook killed
 * while it holds notifications gives them back, and a hook that finds no server (or a dead one) prints
 * nothing and exits 0.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, describe, expect, it } from 'vitest';
import {
  CLI_PATH,
  type McpCli,
  startMcpCli,
  TextCapture,
  textBlocks,
} from '../../test/support/mcp-client.js';
import { listLiveServers, runDirectoryOf, SERVER_RECORD_SCHEMA_VERSION } from '../hooks/index.js';
import { openSqliteSessionStore } from '../store/index.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const holdFixture = join(root, 'test/fixtures/hooks/take-and-hold.mjs');

const directories: string[] = [];
const clis: McpCli[] = [];
const children: ChildProcess[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  for (const cli of clis.splice(0)) await cli.client.close();
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function temporaryDirectory(): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), 'errand-hk-')));
  directories.push(directory);
  return directory;
}

/** An `errand mcp` on `home`, once it has registered for hooks. */
async function startServer(home: string): Promise<McpCli> {
  const cli = await startMcpCli({ args: ['--home', home] });
  clis.push(cli);
  for (let round = 0; round < 400 && listLiveServers(home).length === 0; round += 1) {
    await new Promise((resolvePromise) => setTimeout(resolvePromise, 25));
  }
  expect(listLiveServers(home).map((record) => record.server.pid)).toEqual([cli.pid]);
  return cli;
}

/** Runs `errand hook <client> <event>` with `input` on stdin, as the client would. */
function hook(
  home: string,
  client: string,
  event: string,
  input: unknown,
  extra: readonly string[] = [],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolvePromise) => {
    const child = spawn(process.execPath, [CLI_PATH, 'hook', client, event, '--home', home, ...extra], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('exit', (code) => resolvePromise({ code, stdout, stderr }));
    child.stdin.end(JSON.stringify(input));
  });
}

/** The documented fields Claude Code sends every hook, plus the event's own. */
function claudeInput(event: string, fields: Record<string, unknown> = {}) {
  return {
    session_id: 'abc123',
    transcript_path: '/tmp/transcript.jsonl',
    cwd: '/tmp',
    permission_mode: 'default',
    hook_event_name: event,
    ...fields,
  };
}

/**
 * Starts a background command that exits with `code` once the test lets it (after the tool result that
 * started it was received, so that result cannot carry its notification in band), and lets it.
 */
async function endingAfterStart(cli: McpCli, home: string, code: number): Promise<string> {
  const go = join(home, `go-${code}`);
  const id = await startBackground(cli, `while [ ! -e ${go} ]; do sleep 0.05; done; exit ${code}`);
  writeFileSync(go, '');
  return id;
}

async function startBackground(cli: McpCli, command: string): Promise<string> {
  const result = await cli.call('bash', { command, run_in_background: true });
  const id = /Started (bash-\d+) in the background/.exec(textBlocks(result)[0] ?? '')?.[1];
  if (!id) throw new Error(`not started: ${textBlocks(result).join('\n')}`);
  return id;
}

/** Resolves once the session queued task `taskId`'s notification (its logging side channel says so). */
function queued(cli: McpCli, taskId: string) {
  return cli.waitForLog((params) => (params.data as { taskId?: string } | undefined)?.taskId === taskId);
}

/** Open hook connections of the server (its socket's peers), read from /proc. */
async function hookConnections(cli: McpCli): Promise<number> {
  const { readFileSync, readdirSync: list, readlinkSync } = await import('node:fs');
  const inodes = new Set(
    list(`/proc/${cli.pid}/fd`).flatMap((fd) => {
      try {
        const target = readlinkSync(`/proc/${cli.pid}/fd/${fd}`);
        const match = /^socket:\[(\d+)\]$/.exec(target);
        return match ? [match[1] as string] : [];
      } catch {
        return [];
      }
    }),
  );
  // Connected Unix sockets of the server that name its hook socket's path on the listening side.
  const unix = readFileSync('/proc/net/unix', 'utf8').split('\n').slice(1);
  return unix.filter((line) => {
    const fields = line.trim().split(/\s+/);
    return fields[5] === '03' && inodes.has(fields[6] as string) && (fields[7] ?? '').endsWith('.sock');
  }).length;
}

function deliveredViaHooks(home: string): string[] {
  const store = openSqliteSessionStore({ home });
  try {
    return store
      .listSessions()
      .flatMap((session) => store.listMessages(session.id))
      .filter((message) => message.source === 'client_hook')
      .map((message) => JSON.stringify(message.content));
  } finally {
    store.close();
  }
}

describe('errand hook claude-code (the documented contract)', () => {
  it('PostToolUse adds the queued notification as additionalContext, once', async () => {
    const home = temporaryDirectory();
    const cli = await startServer(home);
    const id = await endingAfterStart(cli, home, 3);
    await queued(cli, id);
    const input = claudeInput('PostToolUse', {
      tool_name: 'Bash',
      tool_input: { command: 'ls' },
      tool_response: { stdout: 'a\nb', stderr: '', interrupted: false },
      tool_use_id: 'toolu_01ABC',
    });
    const first = await hook(home, 'claude-code', 'PostToolUse', input);
    expect(first.code).toBe(0);
    expect(first.stdout, first.stderr).not.toBe('');
    const output = JSON.parse(first.stdout) as {
      hookSpecificOutput: { hookEventName: string; additionalContext: string };
    };
    expect(Object.keys(output)).toEqual(['hookSpecificOutput']);
    expect(output.hookSpecificOutput.hookEventName).toBe('PostToolUse');
    expect(output.hookSpecificOutput.additionalContext).toContain(`<task-id>${id}</task-id>`);
    expect(output.hookSpecificOutput.additionalContext).toMatch(/exit code 3/);
    // Delivered: neither the next hook nor the next tool result tells it again.
    const second = await hook(home, 'claude-code', 'PostToolUse', input);
    expect(second).toMatchObject({ code: 0, stdout: '' });
    expect(textBlocks(await cli.call('task_list', {}))).toHaveLength(1);
    expect(deliveredViaHooks(home)).toHaveLength(1);
  });

  it('UserPromptSubmit adds it to the prompt; nothing queued prints nothing', async () => {
    const home = temporaryDirectory();
    const cli = await startServer(home);
    const input = claudeInput('UserPromptSubmit', { prompt: 'how is the build going?' });
    expect(await hook(home, 'claude-code', 'UserPromptSubmit', input)).toMatchObject({ code: 0, stdout: '' });
    const id = await endingAfterStart(cli, home, 0);
    await queued(cli, id);
    const { stdout, stderr, code } = await hook(home, 'claude-code', 'UserPromptSubmit', input);
    expect(code).toBe(0);
    expect(stdout, stderr).not.toBe('');
    const output = JSON.parse(stdout) as { hookSpecificOutput: Record<string, string> };
    expect(output.hookSpecificOutput.hookEventName).toBe('UserPromptSubmit');
    expect(output.hookSpecificOutput.additionalContext).toContain(`<task-id>${id}</task-id>`);
  });

  it('Stop of a headless run waits for running work, then blocks with its notification; the next Stop lets the turn end', async () => {
    const home = temporaryDirectory();
    const cli = await startServer(home);
    const go = join(home, 'go');
    const id = await startBackground(cli, `while [ ! -e ${go} ]; do sleep 0.05; done; exit 5`);
    const stopping = hook(home, 'claude-code', 'Stop', claudeInput('Stop', { stop_hook_active: false }), [
      '--mode',
      'headless',
    ]);
    // The hook is waiting (the command cannot end before the file exists); now let it end.
    writeFileSync(go, '');
    const stopped = await stopping;
    expect(stopped.code).toBe(0);
    const output = JSON.parse(stopped.stdout) as Record<string, string>;
    expect(Object.keys(output).sort()).toEqual(['decision', 'reason']);
    expect(output.decision).toBe('block');
    expect(output.reason).toContain(`<task-id>${id}</task-id>`);
    expect(output.reason).toMatch(/exit code 5/);
    // Printed, then confirmed by the next Stop (the model continued with it).
    expect(deliveredViaHooks(home)).toHaveLength(0);
    const again = await hook(home, 'claude-code', 'Stop', claudeInput('Stop', { stop_hook_active: true }), [
      '--mode',
      'headless',
    ]);
    expect(again).toMatchObject({ code: 0, stdout: '' });
    expect(deliveredViaHooks(home)).toHaveLength(1);
  });

  it('a headless run held past its bound is told which tasks will be stopped, once; then the turn ends', async () => {
    const home = temporaryDirectory();
    const cli = await startServer(home);
    const id = await startBackground(cli, 'sleep 600');
    const input = claudeInput('Stop', { stop_hook_active: false });
    const flags = ['--mode', 'headless', '--headless-wait-ms', '0'];
    const first = await hook(home, 'claude-code', 'Stop', input, flags);
    const output = JSON.parse(first.stdout) as Record<string, string>;
    expect(output.decision).toBe('block');
    expect(output.reason).toContain(`${id} (sleep 600)`);
    expect(output.reason).toMatch(/stopped with it, unfinished/);
    const second = await hook(home, 'claude-code', 'Stop', { ...input, stop_hook_active: true }, flags);
    expect(second).toMatchObject({ code: 0, stdout: '' });
    await cli.call('task_kill', { task_id: id });
  });

  it('interactive: Stop does not hold the turn; the wake hook waits and wakes the model with the ending (exit 2), once', async () => {
    const home = temporaryDirectory();
    const cli = await startServer(home);
    const go = join(home, 'go');
    const id = await startBackground(cli, `while [ ! -e ${go} ]; do sleep 0.05; done; exit 6`);
    const input = claudeInput('Stop', { stop_hook_active: false });
    // Not held: the turn ends while the command runs.
    const stop = await hook(home, 'claude-code', 'Stop', input, ['--mode', 'interactive']);
    expect(stop).toMatchObject({ code: 0, stdout: '' });
    const waking = hook(home, 'claude-code', 'Stop', input, ['--wake', '--mode', 'interactive']);
    let woke = false;
    void waking.then(() => {
      woke = true;
    });
    // The wake is waiting on the server (its connection is open), and cannot end before the command.
    for (let round = 0; round < 400 && (await hookConnections(cli)) === 0; round += 1) {
      await new Promise((resolvePromise) => setTimeout(resolvePromise, 25));
    }
    expect(woke).toBe(false);
    writeFileSync(go, '');
    const wake = await waking;
    expect(wake.code).toBe(2);
    expect(wake.stdout).toBe('');
    expect(wake.stderr).toContain(`<task-id>${id}</task-id>`);
    expect(wake.stderr).toMatch(/exit code 6/);
    expect(deliveredViaHooks(home)).toHaveLength(1);
    // Nothing left: the next wake has nothing to wait for and exits 0 at once.
    expect(await hook(home, 'claude-code', 'Stop', input, ['--wake', '--mode', 'interactive'])).toMatchObject(
      {
        code: 0,
        stdout: '',
      },
    );
  });

  it('a hook killed while it holds the notifications gives them back: the next one delivers them, once', async () => {
    const home = temporaryDirectory();
    const cli = await startServer(home);
    const id = await endingAfterStart(cli, home, 4);
    await queued(cli, id);
    const [record] = listLiveServers(home);
    const holder = spawn(process.execPath, [holdFixture, record!.socket], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const holderErrors = new TextCapture(holder.stderr);
    holder.on('exit', (code) => {
      if (code !== null) throw new Error(`the holding hook exited ${code}: ${holderErrors.text}`);
    });
    children.push(holder);
    const held = await new TextCapture(holder.stdout).waitFor(/held (\d+)\n/);
    expect(held[1]).toBe('1');
    // Reserved: no tool result carries it while the hook holds it.
    expect(textBlocks(await cli.call('task_list', {}))).toHaveLength(1);
    const gone = new Promise((resolvePromise) => holder.once('exit', resolvePromise));
    holder.kill('SIGKILL');
    await gone;
    let delivered = '';
    for (let round = 0; round < 100 && delivered === ''; round += 1) {
      delivered = (await hook(home, 'claude-code', 'PostToolUse', claudeInput('PostToolUse'))).stdout;
    }
    expect(delivered).toContain(`<task-id>${id}</task-id>`);
    expect((await hook(home, 'claude-code', 'PostToolUse', claudeInput('PostToolUse'))).stdout).toBe('');
    expect(deliveredViaHooks(home)).toHaveLength(1);
  });
});

describe('errand hook finds the server of its client', () => {
  it('also when the client started errand mcp through a launcher (sh -c, without exec)', async () => {
    const home = temporaryDirectory();
    const transport = new StdioClientTransport({
      command: '/bin/sh',
      // The shell stays between the client (this process) and the server, as npx would.
      args: ['-c', `"${process.execPath}" "${CLI_PATH}" mcp --home "${home}"; exit 0`],
      stderr: 'pipe',
    });
    const client = new Client({ name: 'launcher-test', version: '1' });
    await client.connect(transport);
    try {
      for (let round = 0; round < 400 && listLiveServers(home).length === 0; round += 1) {
        await new Promise((resolvePromise) => setTimeout(resolvePromise, 25));
      }
      const [record] = listLiveServers(home);
      expect(record?.client.pid).toBe(process.pid);
      const go = join(home, 'go');
      const started = await client.callTool({
        name: 'bash',
        arguments: { command: `while [ ! -e ${go} ]; do sleep 0.05; done; exit 2`, run_in_background: true },
      });
      const id = /Started (bash-\d+)/.exec(JSON.stringify(started))?.[1];
      const stopping = hook(home, 'codex', 'Stop', { stop_hook_active: false });
      writeFileSync(go, '');
      const { stdout } = await stopping;
      expect(JSON.parse(stdout)).toMatchObject({ decision: 'block' });
      expect(stdout).toContain(`<task-id>${id}</task-id>`);
    } finally {
      await client.close();
    }
  });
});

describe('errand hook never breaks its client', () => {
  it('prints nothing and exits 0 without a server, with a dead one, or with malformed input', async () => {
    const home = temporaryDirectory();
    const none = await hook(home, 'codex', 'PostToolUse', 'not json');
    expect(none).toMatchObject({ code: 0, stdout: '' });
    // One line on stderr says why nothing was handed over.
    expect(none.stderr).toMatch(/^errand hook: no Errand server of this client is registered in .*\n$/);
    // A server that was killed left its record behind: the hook finds it dead and removes it.
    const dead = spawn(process.execPath, ['-e', '']);
    const deadPid = await new Promise<number>((resolvePromise) =>
      dead.on('exit', () => resolvePromise(dead.pid!)),
    );
    const runDirectory = runDirectoryOf(home);
    rmSync(runDirectory, { recursive: true, force: true });
    const { mkdirSync } = await import('node:fs');
    mkdirSync(runDirectory, { recursive: true });
    writeFileSync(
      join(runDirectory, `mcp-${deadPid}.json`),
      JSON.stringify({
        schemaVersion: SERVER_RECORD_SCHEMA_VERSION,
        server: { pid: deadPid, startTime: 1 },
        client: { pid: process.pid, startTime: 1 },
        sessionId: 'gone',
        socket: join(runDirectory, `mcp-${deadPid}.sock`),
        startedAt: 1,
      }),
    );
    expect(await hook(home, 'gemini', 'AfterAgent', { stop_hook_active: false })).toMatchObject({
      code: 0,
      stdout: '',
    });
    expect(existsSync(join(runDirectory, `mcp-${deadPid}.json`))).toBe(false);
    expect(readdirSync(runDirectory)).toEqual([]);
  });

  it('exits 1 (a non-blocking error to every client) only for a mistake on its own command line', async () => {
    const home = temporaryDirectory();
    const unknown = await hook(home, 'cursor', 'PostToolUse', {});
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(
      /Expected `<client>` to be one of claude-code, codex, gemini, got "cursor"/,
    );
    const wrongEvent = await hook(home, 'gemini', 'PostToolUse', {});
    expect(wrongEvent.code).toBe(1);
    expect(wrongEvent.stderr).toMatch(/AfterTool, BeforeAgent, AfterAgent/);
  });
});
