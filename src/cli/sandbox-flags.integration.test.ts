/**
 * `--sandbox` and `--no-network` on the built CLI: a profile that needs a missing bwrap stops `errand mcp`
 * and `errand chat` with the Debian package's name (simulated by a PATH without bwrap) and never runs
 * commands unconfined; a bad profile is a usage error; and `errand mcp --sandbox workspace-write
 * --no-network` serves a bash tool that says so and whose commands hit the boundary.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { findBubblewrap } from '../../test/support/bubblewrap.js';
import { CLI_PATH, type McpCli, startMcpCli, textBlocks } from '../../test/support/mcp-client.js';
import { sandboxFromFlags } from './sandbox-flags.js';

const directories: string[] = [];
const clis: McpCli[] = [];

afterEach(async () => {
  for (const cli of clis.splice(0)) await cli.client.close();
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function temporaryDirectory(prefix: string, parent = tmpdir()): string {
  const directory = realpathSync(mkdtempSync(join(parent, prefix)));
  directories.push(directory);
  return directory;
}

/** Runs the built CLI to its end with stdin closed; its exit code and output. */
function runCli(
  args: readonly string[],
  env: Record<string, string | undefined>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI_PATH, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('sandbox flags', () => {
  it('reads --sandbox and --no-network into the runtime option, and refuses an unknown profile', () => {
    expect(sandboxFromFlags({})).toBeUndefined();
    expect(sandboxFromFlags({ sandbox: 'read-only' })).toEqual({ profile: 'read-only', network: true });
    expect(sandboxFromFlags({ sandbox: 'workspace-write', 'no-network': true })).toEqual({
      profile: 'workspace-write',
      network: false,
    });
    expect(sandboxFromFlags({ 'no-network': true })).toEqual({ profile: 'full', network: false });
    expect(() => sandboxFromFlags({ sandbox: 'strict' })).toThrow(
      'Expected `--sandbox` to be one of read-only, workspace-write, full, got "strict"',
    );
  });

  it('errand mcp and errand chat stop with the package name when bwrap is not on PATH', async () => {
    const home = temporaryDirectory('errand-sandbox-home-');
    // A PATH without bwrap (node is started by its absolute path).
    const env = {
      ...process.env,
      PATH: temporaryDirectory('errand-empty-path-'),
      HOME: home,
      ERRAND_HOME: home,
    };
    const mcp = await runCli(['mcp', '--sandbox', 'workspace-write', '--no-network'], env);
    expect(mcp.code).toBe(1);
    expect(mcp.stdout).toBe('');
    expect(mcp.stderr).toContain('errand mcp: The sandbox (workspace-write, network off) needs bubblewrap');
    expect(mcp.stderr).toContain("Install Debian's `bubblewrap` package (apt-get install bubblewrap)");
    const chat = await runCli(['chat', '--sandbox', 'read-only'], {
      ...env,
      ERRAND_MODEL: 'unused',
      ERRAND_BASE_URL: 'http://127.0.0.1:9/v1',
    });
    expect(chat.code).toBe(1);
    expect(chat.stderr).toContain('errand chat: The sandbox (read-only) needs bubblewrap');
    // Nothing was started, so nothing was stored either.
    expect(existsSync(join(home, 'errand.sqlite'))).toBe(false);
    const usage = await runCli(['mcp', '--sandbox', 'strict'], env);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('Expected `--sandbox` to be one of read-only, workspace-write, full');
  }, 30_000);

  it.skipIf(findBubblewrap() === undefined)(
    'errand mcp --sandbox workspace-write --no-network: the tool says so, and a write outside fails',
    async () => {
      const home = temporaryDirectory('errand-sandbox-home-');
      const workspace = temporaryDirectory('errand-sandbox-ws-');
      const outside = temporaryDirectory('errand-sandbox-outside-', '/var/tmp');
      const cli = await startMcpCli({
        args: ['--home', home, '--cwd', workspace, '--sandbox', 'workspace-write', '--no-network'],
      });
      clis.push(cli);
      const { tools } = await cli.client.listTools();
      expect(tools.find((tool) => tool.name === 'bash')!.description).toContain(
        'Commands run in a sandbox (profile workspace-write, network off)',
      );
      const result = await cli.call('bash', {
        command: `echo in > inside.txt && cat inside.txt; echo out > ${join(outside, 'x')}`,
      });
      const [text] = textBlocks(result);
      expect(text).toContain('in\n');
      expect(text).toContain('Read-only file system');
      expect(existsSync(join(workspace, 'inside.txt'))).toBe(true);
      expect(existsSync(join(outside, 'x'))).toBe(false);
    },
    30_000,
  );
});
