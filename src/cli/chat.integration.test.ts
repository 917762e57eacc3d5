import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  completion,
  type FakeEndpoint,
  fakeOpenAiEndpoint,
  lastMessageText,
  streamedCompletion,
} from '../../test/support/fake-openai.js';
import { spawnInTerminal, type TerminalProgram } from '../../test/support/terminal.js';
import { deferred } from '../../test/support/waiting.js';
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
                  // Ends once the first turn is over (the gate): its notification starts a turn of its own.
                  arguments: JSON.stringify({
                    command: 'while [ ! -e gate ]; do sleep 0.01; done; echo hello-from-chat',
                    description: 'echo hello-from-chat',
                    run_in_background: true,
                  }),
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
    await seen('It runs in the background.');
    writeFileSync(join(home, 'gate'), '');
    await seen('It printed hello-from-chat.');
    child.stdin.write('/tasks\n');
    await seen('bash-1 [bash] completed');
    child.stdin.write('/quit\n');
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain('[background results: echo hello-from-chat]');
  });

  it('prints its help without a model, and refuses an unknown flag', async () => {
    const environment = { ...process.env };
    delete environment.ERRAND_MODEL;
    const run = (args: string[]) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [main, 'chat', ...args], {
          env: environment,
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
        child.on('exit', (code) => resolve({ code, stdout, stderr }));
      });
    const help = await run(['--help']);
    expect(help).toMatchObject({ code: 0, stderr: '' });
    expect(help.stdout).toMatch(/^Usage: errand chat \[options\]/);
    for (const text of ['ERRAND_MODEL', 'ERRAND_STREAM=0', '--resume <session-id>', '/stop all', 'Ctrl-B']) {
      expect(help.stdout).toContain(text);
    }
    const wrong = await run(['--colour']);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('errand chat: unknown option `--colour`');
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
  const terminalEnv = (url: string) => ({
    ...(process.env as Record<string, string>),
    TERM: 'xterm-256color',
    ERRAND_MODEL: 'test-model',
    ERRAND_BASE_URL: url,
  });
  const programs: TerminalProgram[] = [];
  afterEach(() => {
    for (const program of programs.splice(0)) program.kill();
  });
  const startChat = async (url: string, home: string, size = { cols: 120, rows: 30 }) => {
    const program = await spawnInTerminal(process.execPath, [main, 'chat', '--home', home, '--cwd', home], {
      ...size,
      env: terminalEnv(url),
    });
    programs.push(program);
    await program.waitFor((screen) => screen.includes('you> '), 'the prompt');
    return program;
  };
  const bashCall = (id: string, command: string, background: boolean) => ({
    id,
    type: 'function',
    function: {
      name: 'bash',
      arguments: JSON.stringify({ command, ...(background ? { run_in_background: true } : {}) }),
    },
  });

  it('shows each running background command on a line of its own above the prompt, until /stop all', async () => {
    endpoint = await fakeOpenAiEndpoint([
      () =>
        completion(
          {
            content: null,
            tool_calls: [bashCall('call_1', 'sleep 60', true), bashCall('call_2', 'sleep 61', true)],
          },
          'tool_calls',
        ),
      () => completion({ content: 'Both sleep in the background.' }, 'stop'),
      () => completion({ content: 'You stopped both.' }, 'stop'),
    ]);
    const home = mkdtempSync(join(tmpdir(), 'errand-chat-tty-'));
    directories.push(home);
    const chat = await startChat(endpoint.url, home);
    chat.write('sleep twice\r');
    await chat.waitFor((screen) => screen.includes('Both sleep in the background.'), 'the reply');
    await chat.waitFor((_screen, rows) => {
      const panel = rows.slice(-4);
      return (
        /── 2 running in the background/.test(panel[0] ?? '') &&
        /^\S bash-1 +running .* sleep 60$/.test(panel[1] ?? '') &&
        /^\S bash-2 +running .* sleep 61$/.test(panel[2] ?? '') &&
        (panel[3] ?? '').startsWith('you> ')
      );
    }, 'a panel line per running command right above the prompt');
    // Typing goes on under the panel.
    chat.write('/stop all');
    await chat.waitFor(
      (_screen, rows) => rows.at(-1) === 'you> /stop all',
      'the typed command on the prompt line',
    );
    chat.write('\r');
    await chat.waitFor((screen) => screen.includes('(stopping bash-1, bash-2)'), 'both stopped');
    await chat.waitFor((screen) => screen.includes('You stopped both.'), 'the model told of the stops');
    await chat.waitFor((screen) => !screen.includes('running in the background'), 'the panel gone');
    expect(chat.screen()).not.toContain('warning');
    chat.write('/quit\r');
    expect(await chat.exited).toBe(0);
  });

  it('moves the running foreground command to the background with Ctrl-B, and with /bg', async () => {
    const home = mkdtempSync(join(tmpdir(), 'errand-chat-bg-'));
    directories.push(home);
    const wait = (gate: string) =>
      `while [ ! -e ${join(home, gate)} ]; do sleep 0.05; done; echo ${gate} passed`;
    endpoint = await fakeOpenAiEndpoint([
      () =>
        completion({ content: null, tool_calls: [bashCall('call_1', wait('first'), false)] }, 'tool_calls'),
      (body) =>
        completion(
          { content: lastMessageText(body).includes('bash-1') ? 'The first moved on.' : 'no task id?' },
          'stop',
        ),
      () =>
        completion({ content: null, tool_calls: [bashCall('call_2', wait('second'), false)] }, 'tool_calls'),
      () => completion({ content: 'The second moved on.' }, 'stop'),
    ]);
    const chat = await startChat(endpoint.url, home);
    chat.write('run the first check\r');
    await chat.waitFor((screen) => screen.includes('→ bash'), 'the foreground command starting');
    chat.write('\x02');
    await chat.waitFor((screen) => screen.includes('(moved bash-1 to the background)'), 'Ctrl-B moving it');
    await chat.waitFor((screen) => screen.includes('The first moved on.'), 'the turn going on');
    chat.write('run the second check\r');
    await chat.waitFor((screen) => screen.includes('second ]; do'), 'the second command starting');
    chat.write('/bg\r');
    await chat.waitFor((screen) => screen.includes('(moved bash-2 to the background)'), '/bg moving it');
    await chat.waitFor((screen) => screen.includes('The second moved on.'), 'the second turn going on');
    await chat.waitFor((screen) => /── 2 running in the background/.test(screen), 'both in the panel');
    const toolMessage = (endpoint.bodies[1]!.messages as Array<{ role: string; content: string }>).at(-1);
    expect(toolMessage?.role).toBe('tool');
    expect(toolMessage?.content).toContain('bash-1');
    chat.write('/stop all\r');
    await chat.waitFor((screen) => screen.includes('(stopping bash-1, bash-2)'), 'both stopped');
    chat.write('/quit\r');
    expect(await chat.exited).toBe(0);
  });

  it('shows a streamed reply as it is generated', async () => {
    const rest = deferred();
    endpoint = await fakeOpenAiEndpoint([
      () => ({
        stream: streamedCompletion(['Thinking ', 'about it', rest.promise, ' some more.\nSecond line.']),
      }),
    ]);
    const home = mkdtempSync(join(tmpdir(), 'errand-chat-stream-'));
    directories.push(home);
    const chat = await startChat(endpoint.url, home);
    chat.write('think\r');
    // The endpoint holds the rest back: what came so far is on the screen, above the prompt.
    await chat.waitFor(
      (_screen, rows) => rows.at(-2) === 'assistant: Thinking about it' && rows.at(-1) === 'you> ',
      'the reply so far',
    );
    rest.resolve();
    await chat.waitFor(
      (_screen, rows) =>
        rows.at(-3) === 'assistant: Thinking about it some more.' &&
        rows.at(-2) === 'Second line.' &&
        rows.at(-1) === 'you> ',
      'the whole reply, once',
    );
    expect(chat.screen().split('Thinking about it').length).toBe(2);
    expect(endpoint.bodies[0]).toMatchObject({ stream: true });
    chat.write('/quit\r');
    expect(await chat.exited).toBe(0);
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
