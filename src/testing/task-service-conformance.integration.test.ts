/**
 * The conformance suite needs no vitest at runtime: the built `errand/testing` runs it under node:test
 * against the in-process provider, and every case passes there too.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { createTaskService } from '../registry/index.js';
import { describeTaskServiceConformance } from './index.js';

const runner = new URL('../../test/fixtures/conformance/node-test-runner.mjs', import.meta.url).pathname;

describe('describeTaskServiceConformance under node:test', () => {
  it('defines and passes every case with node:test and node:assert alone', async () => {
    const child = spawn(process.execPath, ['--test', '--test-reporter=tap', runner], {
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
    expect(stdout).toMatch(/^# fail 0$/m);
    let cases = 0;
    describeTaskServiceConformance(
      {
        describe: (_, body) => body(),
        it: () => {
          cases += 1;
        },
      },
      (setup) => ({ tasks: createTaskService(setup) }),
    );
    expect(Number(/^# pass (\d+)$/m.exec(stdout)?.[1])).toBe(cases);
    expect(code).toBe(0);
  });
});
