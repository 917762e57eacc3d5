/**
 * `errand mcp --http` as a person runs it: its flag mistakes (exit 2, the flag and value named), the
 * refusal to serve a non-loopback host without a token, the token file (written 0600 once, then
 * reused), a request with that token, and the clean exit on SIGTERM.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI_PATH, TextCapture } from '../../test/support/mcp-client.js';

const directories: string[] = [];
const children: ChildProcess[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }
  }
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function home(): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), 'errand-mcp-http-cli-')));
  directories.push(directory);
  return directory;
}

function run(args: string[]): { status: number | null; stderr: string } {
  const result = spawnSync(process.execPath, [CLI_PATH, 'mcp', ...args], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: result.status, stderr: result.stderr };
}

async function serve(args: string[]): Promise<{ child: ChildProcess; stderr: TextCapture; url: string }> {
  const child = spawn(process.execPath, [CLI_PATH, 'mcp', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(child);
  const stderr = new TextCapture(child.stderr);
  const url = (await stderr.waitFor(/MCP endpoint at (\S+)/))[1] as string;
  return { child, stderr, url };
}

async function stop(child: ChildProcess): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  return exited;
}

describe('errand mcp --http', () => {
  it('names the flag and the value of a mistake, with exit code 2', () => {
    expect(run(['--http', 'localhost:99999'])).toMatchObject({
      status: 2,
      stderr: expect.stringContaining(
        'Expected `--http` to be [host:]port (port 0 to 65535), got "localhost:99999"',
      ),
    });
    expect(run(['--token-file', '/tmp/x'])).toMatchObject({
      status: 2,
      stderr: expect.stringContaining('`--token-file` is an HTTP setting'),
    });
    expect(run(['--http', '0', '--durable'])).toMatchObject({ status: 2 });
    const exposed = run(['--http', '0.0.0.0:0', '--no-auth', '--home', home()]);
    expect(exposed.status).toBe(2);
    expect(exposed.stderr).toContain('not loopback');
  });

  it('writes a token file 0600 once and reuses it; requests need that token; SIGTERM exits 0', async () => {
    const data = home();
    const tokenFile = join(data, 'token');
    const first = await serve(['--http', '127.0.0.1:0', '--home', data, '--token-file', tokenFile]);
    await first.stderr.waitFor(/bearer token written to/);
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    const token = readFileSync(tokenFile, 'utf8').trim();
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(first.stderr.text).not.toContain(token);
    const discover = (authorization?: string) =>
      fetch(first.url, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'MCP-Protocol-Version': '2026-07-28',
          'Mcp-Method': 'server/discover',
          ...(authorization ? { Authorization: authorization } : {}),
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'server/discover',
          params: {
            _meta: {
              'io.modelcontextprotocol/protocolVersion': '2026-07-28',
              'io.modelcontextprotocol/clientCapabilities': {},
            },
          },
        }),
      });
    expect((await discover()).status).toBe(401);
    expect((await discover(`Bearer ${token}`)).status).toBe(200);
    expect(await stop(first.child)).toBe(0);

    const second = await serve(['--http', '127.0.0.1:0', '--home', data, '--token-file', tokenFile]);
    expect(readFileSync(tokenFile, 'utf8').trim()).toBe(token);
    expect(second.stderr.text).not.toContain('written');
    expect(await stop(second.child)).toBe(0);
  });
});
