/**
 * The CLI on a pipe its reader closed before it wrote (`errand install … --print | head`, made
 * deterministic: the command starts only once the reading side has closed its end): it exits 0 without a
 * word on stderr, where it used to die on `EPIPE` with a stack trace.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI_PATH } from '../../test/support/mcp-client.js';

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

/** Runs `errand <args>` with its stdout on a pipe nobody reads any more; its status and stderr. */
function runIntoClosedPipe(args: readonly string[]): Promise<{ status: string; stderr: string }> {
  const directory = mkdtempSync(join(tmpdir(), 'errand-pipe-'));
  directories.push(directory);
  const fifo = join(directory, 'closed');
  const quoted = [process.execPath, CLI_PATH, ...args].map((arg) => `'${arg.replaceAll("'", "'\\''")}'`);
  // Left: waits for the right side's word, then runs the CLI. Right: closes its stdin, then says so.
  const script = [
    `mkfifo '${fifo}'`,
    'exec 3>&1',
    `{ read -r _ < '${fifo}'; ${quoted.join(' ')} 2>'${directory}/stderr'; echo "status=$?" >&3; } | { exec 0<&-; echo closed > '${fifo}'; }`,
    `cat '${directory}/stderr' >&2`,
  ].join('\n');
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('exit', () => resolve({ status: stdout.trim(), stderr }));
  });
}

describe('the CLI on a closed pipe', () => {
  it('errand install … --print | head: exits 0, quietly', async () => {
    const project = mkdtempSync(join(tmpdir(), 'errand-project-'));
    directories.push(project);
    const result = await runIntoClosedPipe(['install', 'claude-code', '--print', '--project', project]);
    expect(result).toEqual({ status: 'status=0', stderr: '' });
  });

  it('errand help | head: exits 0, quietly', async () => {
    expect(await runIntoClosedPipe(['help'])).toEqual({ status: 'status=0', stderr: '' });
  });
});
