import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  completion,
  type FakeEndpoint,
  fakeOpenAiEndpoint,
  lastMessageText,
} from '../../test/support/fake-openai.js';
import { createErrandRuntime } from '../host/index.js';
import { scriptedModel } from '../testing/index.js';

const main = new URL('../../dist/cli/main.js', import.meta.url).pathname;
let endpoint: FakeEndpoint | undefined;
const directories: string[] = [];

afterEach(async () => {
  await endpoint?.close();
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

describe('errand chat', () => {
  it('runs the loop with a real endpoint: background command, notification, /tasks, /quit', async () => {
    endpoint = await fakeOpenAiEndpoint([
      () =>
        completion(
          {
            content: 'Starting it in the background.',
            tool_calls: [
              {
                id: 'call_1',
                type: 'function',
                function: {
                  name: 'bash',
                  arguments: JSON.stringify({ command: 'echo hello-from-chat', run_in_background: true }),
                },
              },
            ],
          },
          'tool_calls',
        ),
      () => completion({ content: 'It runs in the background.' }, 'stop'),
      (body) =>
        completion(
          {
            content: lastMessageText(body).includes('hello-from-chat')
              ? 'It printed hello-from-chat.'
              : 'no output?',
          },
          'stop',
        ),
    ]);
    const home = mkdtempSync(join(tmpdir(), 'errand-chat-'));
    directories.push(home);
    const child = spawn(process.execPath, [main, 'chat', '--home', home, '--cwd', home], {
      env: { ...process.env, ERRAND_MODEL: 'test-model', ERRAND_BASE_URL: endpoint.url },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const seen = (text: string) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (stdout.includes(text)) {
            child.stdout.off('data', onData);
            resolve();
          }
        };
        const onData = (chunk: Buffer) => {
          stdout += chunk.toString();
          check();
        };
        child.stdout.on('data', onData);
        check();
      });
    await seen('errand chat — model openai:test-model');
    child.stdin.write('say hello in the background\n');
    await seen('It printed hello-from-chat.');
    child.stdin.write('/tasks\n');
    await seen('bash-1 [bash] completed');
    child.stdin.write('/quit\n');
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain('[background results: echo hello-from-chat]');
  });

  it('explains how to configure a model when none is set', async () => {
    const environment = { ...process.env };
    delete environment.ERRAND_MODEL;
    const child = spawn(process.execPath, [main, 'chat'], {
      env: environment,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(2);
    expect(stderr).toContain('ERRAND_MODEL');
  });
});

describe('errand chat on a terminal', () => {
  it('shows running background work live in the prompt line', async () => {
    const pty = await import('node-pty');
    endpoint = await fakeOpenAiEndpoint([
      () =>
        completion(
          {
            content: null,
            tool_calls: [
              {
                id: 'call_1',
                type: 'function',
                function: {
                  name: 'bash',
                  arguments: JSON.stringify({ command: 'sleep 60', run_in_background: true }),
                },
              },
            ],
          },
          'tool_calls',
        ),
      () => completion({ content: 'Sleeping in the background.' }, 'stop'),
    ]);
    const home = mkdtempSync(join(tmpdir(), 'errand-chat-tty-'));
    directories.push(home);
    const terminal = pty.spawn(process.execPath, [main, 'chat', '--home', home, '--cwd', home], {
      cols: 120,
      rows: 30,
      env: { ...process.env, ERRAND_MODEL: 'test-model', ERRAND_BASE_URL: endpoint.url } as Record<
        string,
        string
      >,
    });
    let screen = '';
    const waiters: Array<() => void> = [];
    terminal.onData((data) => {
      screen += data;
      for (const wake of waiters.splice(0)) wake();
    });
    const seen = async (text: string) => {
      while (!screen.includes(text)) await new Promise<void>((resolve) => waiters.push(resolve));
    };
    const exited = new Promise<number>((resolve) => terminal.onExit(({ exitCode }) => resolve(exitCode)));
    await seen('you> ');
    terminal.write('sleep for a while\r');
    await seen('Sleeping in the background.');
    await seen('1 running: bash-1');
    terminal.write('/stop bash-1\r');
    await seen('(stopping bash-1)');
    terminal.write('/quit\r');
    expect(await exited).toBe(0);
  });

  it('refuses to resume a session another live runtime has open, or one that does not exist, and exits 1', async () => {
    const home = mkdtempSync(join(tmpdir(), 'errand-chat-busy-'));
    directories.push(home);
    const holder = await createErrandRuntime({ model: scriptedModel([]), home, cwd: home, pty: false });
    try {
      holder.createSession({ id: 'busy' });
      const run = (id: string) =>
        new Promise<{ code: number | null; stderr: string }>((resolve) => {
          const child = spawn(process.execPath, [main, 'chat', '--home', home, '--resume', id], {
            env: { ...process.env, ERRAND_MODEL: 'test-model', ERRAND_BASE_URL: 'http://127.0.0.1:9/v1' },
            stdio: ['pipe', 'pipe', 'pipe'],
          });
          let stderr = '';
          child.stderr.on('data', (chunk: Buffer) => {
            stderr += chunk.toString();
          });
          child.on('exit', (code) => resolve({ code, stderr }));
        });
      const busy = await run('busy');
      expect(busy.code).toBe(1);
      expect(busy.stderr).toContain(`is open in another runtime (process ${process.pid})`);
      const missing = await run('missing');
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(/errand chat: .*missing/);
    } finally {
      await holder.dispose();
    }
  });
});
