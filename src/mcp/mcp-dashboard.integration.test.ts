/**
 * The dashboard of `errand mcp --dashboard` (URL with token on stderr, stdout left to the protocol,
 * token required, foreign Origin refused; a background result pending until the next tool result
 * carries its notification) and `errand serve` (serves the store's sessions, exits cleanly on SIGTERM),
 * both through the built CLI. Also the CLI's refusal of bad flags.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isAlive, strayProcesses } from '../../test/fixtures/bash/index.js';
import {
  CLI_PATH,
  httpCall,
  type McpCli,
  startMcpCli,
  TextCapture,
  textBlocks,
} from '../../test/support/mcp-client.js';
import { openSqliteSessionStore } from '../store/index.js';

const directories: string[] = [];
const clis: McpCli[] = [];
const children: ChildProcess[] = [];

afterEach(async () => {
  for (const cli of clis.splice(0)) await cli.client.close();
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await new Promise((resolve) => child.once('exit', resolve));
    }
  }
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function temporaryDirectory(prefix: string): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  directories.push(directory);
  return directory;
}

interface Cli {
  readonly child: ChildProcess;
  readonly stdout: TextCapture;
  readonly stderr: TextCapture;
  readonly exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Runs the built CLI with the test's environment (the leak check finds what it leaves). */
function runCli(args: readonly string[]): Cli {
  const child = spawn(process.execPath, [CLI_PATH, ...args], {
    env: process.env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(child);
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  return { child, stdout: new TextCapture(child.stdout), stderr: new TextCapture(child.stderr), exit };
}

describe('errand mcp --dashboard', () => {
  it('prints the tokenized URL on stderr; the API needs the token and refuses a foreign Origin', async () => {
    const home = temporaryDirectory('errand-mcp-dash-');
    const cli = await startMcpCli({ args: ['--dashboard', '--home', home] });
    clis.push(cli);
    const [, url] = (await cli.stderr.waitFor(
      /dashboard at (http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)\n/,
    )) as unknown as [string, string];
    const page = new URL(url);
    const token = page.searchParams.get('token')!;
    expect(token.length).toBeGreaterThanOrEqual(32);
    const api = (path: string) => new URL(path, page.origin).href;

    const started = textBlocks(
      await cli.call('bash', { command: 'exec sleep 600', run_in_background: true, description: 'server' }),
    )[0]!;
    const taskId = /Started (bash-\d+)/.exec(started)![1]!;
    const pid = Number(/\(pid (\d+)\)/.exec(started)![1]);

    const withQuery = await httpCall(api(`/api/sessions?token=${encodeURIComponent(token)}`));
    expect(withQuery.status).toBe(200);
    const sessions = JSON.parse(withQuery.body) as { sessions: { id: string; title?: string }[] };
    expect(sessions.sessions.map((session) => session.title)).toEqual(['MCP: errand-test-client 1.0.0']);
    const withBearer = await httpCall(api('/api/sessions'), {
      headers: { Authorization: `Bearer ${token}` },
    });
    expect(withBearer.status).toBe(200);
    expect((await httpCall(api('/api/sessions'))).status).toBe(401);
    expect((await httpCall(api('/api/sessions?token=wrong-token'))).status).toBe(401);

    const command = JSON.stringify({ type: 'cancelBackgroundWork', workId: taskId });
    const foreign = await httpCall(api('/api/commands'), {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, Origin: 'http://evil.example' },
      body: command,
    });
    expect(foreign.status).toBe(403);
    expect(isAlive(pid)).toBe(true);
    const withoutToken = await httpCall(api('/api/commands'), { method: 'POST', body: command });
    expect(withoutToken.status).toBe(401);
    expect(isAlive(pid)).toBe(true);

    const own = await httpCall(api('/api/commands'), {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, Origin: page.origin },
      body: command,
    });
    expect(own.status).toBe(200);
    // A person's stop is notified to the model in band, once.
    await cli.waitForLog((params) => (params.data as { taskId?: string }).taskId === taskId);
    expect(isAlive(pid)).toBe(false);
    const next = textBlocks(await cli.call('task_list'));
    expect(next[1]).toContain(`<task-id>${taskId}</task-id>`);
    expect(next[1]).toContain('<status>killed</status>');
  });

  it('shows a background result pending while its notification waits for the next tool result, then completed', async () => {
    const home = temporaryDirectory('errand-mcp-pending-');
    const cli = await startMcpCli({ args: ['--dashboard', '--home', home] });
    clis.push(cli);
    const [, url] = (await cli.stderr.waitFor(
      /dashboard at (http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)\n/,
    )) as unknown as [string, string];
    const page = new URL(url);
    const headers = { Authorization: `Bearer ${page.searchParams.get('token')}` };
    const get = async (path: string) =>
      JSON.parse((await httpCall(new URL(path, page.origin).href, { headers })).body);

    const gate = join(home, 'gate');
    const started = textBlocks(
      await cli.call('bash', {
        command: `while [ ! -e ${gate} ]; do sleep 0.02; done; echo built`,
        run_in_background: true,
        description: 'build',
      }),
    )[0]!;
    const taskId = /Started (bash-\d+)/.exec(started)![1]!;
    const [session] = (await get('/api/sessions')).sessions as { id: string }[];
    const works = async () =>
      (await get(`/api/sessions/${encodeURIComponent(session!.id)}/background-works`)).backgroundWorks as {
        workId: string;
        state: string;
      }[];
    expect(await works()).toMatchObject([{ workId: taskId, state: 'running' }]);

    writeFileSync(gate, '');
    // The logging side channel tells the moment it is queued; nothing delivers it until a tool result.
    await cli.waitForLog((params) => (params.data as { taskId?: string }).taskId === taskId);
    expect(await works()).toMatchObject([
      { workId: taskId, state: 'resultPending', status: 'completed', exitCode: 0 },
    ]);
    // `errand serve` on the same data directory says the same, from the store.
    const serve = runCli(['serve', '--home', home, '--port', '0']);
    const [, serveUrl] = (await serve.stdout.waitFor(
      /Errand dashboard: (http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)\n/,
    )) as unknown as [string, string];
    const served = new URL(serveUrl);
    const servedWorks = async () =>
      JSON.parse(
        (
          await httpCall(
            new URL(`/api/sessions/${encodeURIComponent(session!.id)}/background-works`, served.origin).href,
            { headers: { Authorization: `Bearer ${served.searchParams.get('token')}` } },
          )
        ).body,
      ).backgroundWorks as { workId: string; state: string }[];
    expect(await servedWorks()).toMatchObject([{ workId: taskId, state: 'resultPending' }]);

    const next = textBlocks(await cli.call('task_list'));
    expect(next[1]).toContain(`<task-id>${taskId}</task-id>`);
    // Committed once the result was handed to the transport.
    await vi.waitFor(
      async () => expect(await works()).toMatchObject([{ workId: taskId, state: 'completed' }]),
      { timeout: 10_000 },
    );
    await vi.waitFor(
      async () => expect(await servedWorks()).toMatchObject([{ workId: taskId, state: 'completed' }]),
      { timeout: 10_000 },
    );
    serve.child.kill('SIGTERM');
    expect(await serve.exit).toEqual({ code: 0, signal: null });
    const again = textBlocks(await cli.call('task_list'));
    expect(again.join('\n')).not.toContain('<task-notification>');
  });

  it('refuses bad flags with exit code 2 and a message naming the flag', async () => {
    const unknown = runCli(['mcp', '--bogus']);
    expect((await unknown.exit).code).toBe(2);
    expect(unknown.stderr.text).toContain('errand mcp: unknown option `--bogus`');
    expect(unknown.stdout.text).toBe('');

    const port = runCli(['mcp', '--dashboard', '--port', 'eighty']);
    expect((await port.exit).code).toBe(2);
    expect(port.stderr.text).toContain('Expected `--port` to be a port from 0 to 65535, got "eighty"');

    const noDashboard = runCli(['mcp', '--port', '8080']);
    expect((await noDashboard.exit).code).toBe(2);
    expect(noDashboard.stderr.text).toContain('add `--dashboard`');

    const missing = runCli(['mcp', '--cwd', '/no/such/directory']);
    expect((await missing.exit).code).toBe(2);
    expect(missing.stderr.text).toContain('Expected `--cwd` to be an existing directory');

    const serve = runCli(['serve', '--port']);
    expect((await serve.exit).code).toBe(2);
    expect(serve.stderr.text).toContain('errand serve: `--port` needs a value <n>');
  });
});

describe('errand serve', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)(
    "serves the store's sessions behind the token and exits cleanly on %s",
    async (signal) => {
      const home = temporaryDirectory('errand-serve-');
      const store = openSqliteSessionStore({ home });
      store.createSession({ id: 'earlier-session', cwd: home, title: 'an earlier session' });
      store.close();

      const serve = runCli(['serve', '--home', home, '--port', '0']);
      const [, url] = (await serve.stdout.waitFor(
        /Errand dashboard: (http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)\n/,
      )) as unknown as [string, string];
      const page = new URL(url);
      const token = page.searchParams.get('token')!;
      const sessions = await httpCall(
        new URL(`/api/sessions?token=${encodeURIComponent(token)}`, page.origin).href,
      );
      expect(sessions.status).toBe(200);
      expect(sessions.body).toContain('an earlier session');
      expect((await httpCall(new URL('/api/sessions', page.origin).href)).status).toBe(401);
      const index = await httpCall(url);
      expect(index.status).toBe(200);

      serve.child.kill(signal);
      expect(await serve.exit).toEqual({ code: 0, signal: null });
      expect(serve.stderr.text).toBe('');
      expect(strayProcesses()).toEqual([]);
    },
  );
});
