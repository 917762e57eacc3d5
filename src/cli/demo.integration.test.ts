import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const main = new URL('../../dist/cli/main.js', import.meta.url).pathname;

describe('errand demo', () => {
  it('runs the whole loop to completion and exits cleanly', async () => {
    const child = spawn(process.execPath, [main, 'demo', '--no-dashboard'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
    // One idle turn carried both results in one message.
    expect(stdout).toMatch(/background results arrived \((unit tests, build|build, unit tests)\)/);
    expect(stdout).toContain('2 <task-notification> block(s) in one message');
    expect(stdout).toContain('4 suites, 12 tests passed');
    expect(stdout).toContain('[status: killed (signal SIGTERM, stopped by the model)]');
    expect(stdout).toMatch(
      /4 background tasks, each settled once: bash-1 completed, bash-2 completed, bash-3 killed, agent-1 completed/,
    );
    // The subagent's result reached the model exactly once (mid-turn or in an idle turn).
    expect(stdout.match(/<task-id>agent-1<\/task-id>/g)).toHaveLength(1);
    expect(stdout).toContain('The subagent');
    expect(stdout).toContain('demo finished: every process stopped');
  });
});
