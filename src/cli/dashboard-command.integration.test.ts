/**
 * The data directory's own dashboard for MCP users: `errand dashboard` starts `errand serve` when none
 * runs and prints its URL; the token lives in the data directory (0600), so the URL stays the same
 * across calls and restarts; the URL really opens the dashboard; a second `errand serve` reports the
 * running one instead of starting another.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI_PATH, httpCall } from '../../test/support/mcp-client.js';
import { isRunning } from '../hooks/index.js';

const directories: string[] = [];
const servePids: number[] = [];

afterEach(async () => {
  for (const pid of servePids.splice(0)) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // Already gone.
    }
    for (let round = 0; round < 200; round += 1) {
      try {
        process.kill(pid, 0);
      } catch {
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function errand(args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI_PATH, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

function runningServe(home: string): { process: { pid: number; startTime: number }; port: number } {
  return JSON.parse(readFileSync(join(home, 'run', 'dashboard.json'), 'utf8'));
}

describe('errand dashboard', () => {
  it('starts the dashboard once, prints the same URL every time, and the URL opens it', async () => {
    const home = realpathSync(mkdtempSync(join(tmpdir(), 'errand-dash-')));
    directories.push(home);
    const first = await errand(['dashboard', '--home', home]);
    expect(first.code, first.stderr).toBe(0);
    const url = first.stdout.trim();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]{43}$/);
    const serve = runningServe(home);
    servePids.push(serve.process.pid);
    expect(isRunning(serve.process)).toBe(true);
    expect(statSync(join(home, 'dashboard.json')).mode & 0o777).toBe(0o600);
    expect(statSync(join(home, 'run', 'dashboard.json')).mode & 0o777).toBe(0o600);

    expect((await errand(['dashboard', '--home', home])).stdout.trim()).toBe(url);
    expect(runningServe(home).process.pid).toBe(serve.process.pid);
    const second = await errand(['serve', '--home', home]);
    expect(second).toMatchObject({ code: 0 });
    expect(second.stdout).toContain(`already running): ${url}`);

    const token = new URL(url).searchParams.get('token') ?? '';
    const sessions = await httpCall(`${new URL(url).origin}/api/sessions`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(sessions.status).toBe(200);

    // Stopped and started again: the token and the port are kept, so the URL is the same.
    process.kill(serve.process.pid, 'SIGTERM');
    for (let round = 0; round < 200 && isRunning(serve.process); round += 1) {
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const again = await errand(['dashboard', '--home', home]);
    servePids.push(runningServe(home).process.pid);
    expect(again.stdout.trim()).toBe(url);
  });
});
