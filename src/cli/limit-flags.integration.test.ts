/**
 * The resource-limit flags on the built CLI: `errand mcp --pids-limit … --memory-limit …` serves a bash
 * tool that says so and stops a fork bomb with pids_limit; a malformed value is a usage error (exit 2);
 * a mechanism this host cannot give stops the server (exit 1), never running without the limits asked for.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cgroupSkipReason } from '../../test/support/cgroups.js';
import { CLI_PATH, type McpCli, startMcpCli, textBlocks } from '../../test/support/mcp-client.js';
import { ResourceLimiter } from '../process/index.js';

/** Whether this host gives cgroup v2 limits (then the refusal cannot be shown here). */
function cgroupV2Available(): boolean {
  try {
    new ResourceLimiter({ task: { pids: 8 }, mechanism: 'cgroup-v2' }).dispose();
    return true;
  } catch {
    return false;
  }
}

const directories: string[] = [];
const clis: McpCli[] = [];

afterEach(async () => {
  for (const cli of clis.splice(0)) await cli.client.close();
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function home(): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), 'errand-limits-home-')));
  directories.push(directory);
  return directory;
}

function runCli(args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const data = home();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI_PATH, ...args], {
      env: { ...process.env, HOME: data, ERRAND_HOME: data },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
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

describe('limit flags of errand mcp', () => {
  it('refuses a malformed value with the flag and the value (exit 2)', async () => {
    const usage = await runCli(['mcp', '--memory-limit', 'lots']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('Expected `--memory-limit` to be a size such as 512M or 2G, got "lots"');
  }, 30_000);

  it.skipIf(cgroupSkipReason() !== undefined)(
    'serves a bash tool under the limits: the description says so and a fork bomb ends with pids_limit',
    async () => {
      const cli = await startMcpCli({
        args: ['--home', home(), '--pids-limit', '32', '--memory-limit', '256M'],
      });
      clis.push(cli);
      const { tools } = await cli.client.listTools();
      expect(tools.find((tool) => tool.name === 'bash')!.description).toContain(
        'Commands run under resource limits (each command memory 256 MiB, 32 processes)',
      );
      const result = await cli.call('bash', { command: 'bomb() { bomb | bomb & }; bomb; wait' });
      const [text] = textBlocks(result);
      expect(text).toContain('[pids_limit: the command was killed after exceeding its process limit of 32]');
    },
    60_000,
  );

  it.skipIf(cgroupV2Available())(
    'stops with LIMITS_UNAVAILABLE when the mechanism asked for cannot be had (exit 1)',
    async () => {
      // No cgroup v2 with the pids controller here: never a silent fallback to something weaker.
      const result = await runCli(['mcp', '--pids-limit', '8', '--limits-mechanism', 'cgroup-v2']);
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toContain('errand mcp: Resource limits with cgroup-v2 are not available here');
    },
    30_000,
  );
});
