/**
 * `errand chat`'s task view in a real terminal (node-pty, the screen read back through a headless xterm):
 * Ctrl-T opens the session's background tasks over the prompt while a reply is still streaming, the arrow
 * keys move through them, Enter opens one task's live output (following its end, PgUp scrolling back, End
 * following again), `s` then `y` stops it, Esc goes back to the list and to the prompt — and the streamed
 * reply finishes above, once, while the view is open. A schedule's row shows its firings and when the next
 * is due, and the view stops it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  completion,
  type FakeEndpoint,
  fakeOpenAiEndpoint,
  streamedCompletion,
} from '../../test/support/fake-openai.js';
import { spawnInTerminal, type TerminalProgram } from '../../test/support/terminal.js';
import { deferred } from '../../test/support/waiting.js';

const main = new URL('../../dist/cli/main.js', import.meta.url).pathname;
let endpoint: FakeEndpoint | undefined;
const directories: string[] = [];
const programs: TerminalProgram[] = [];

afterEach(async () => {
  for (const program of programs.splice(0)) program.kill();
  await endpoint?.close();
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

const KEYS = {
  ctrlT: '\x14',
  up: '\x1b[A',
  down: '\x1b[B',
  enter: '\r',
  pageUp: '\x1b[5~',
  end: '\x1b[F',
  escape: '\x1b',
};

const bashCall = (id: string, command: string, description: string) => ({
  id,
  type: 'function',
  function: {
    name: 'bash',
    arguments: JSON.stringify({ command, description, run_in_background: true }),
  },
});

/** The highest `tick-N` on the screen. */
function lastTick(screen: string): number {
  return Math.max(0, ...[...screen.matchAll(/tick-(\d+)/g)].map((match) => Number(match[1])));
}

/** `errand chat` in a 120×30 terminal on a fresh home, its model at `modelUrl`. */
async function startChat(prefix: string, modelUrl: string): Promise<TerminalProgram> {
  const home = mkdtempSync(join(tmpdir(), prefix));
  directories.push(home);
  const chat = await spawnInTerminal(process.execPath, [main, 'chat', '--home', home, '--cwd', home], {
    cols: 120,
    rows: 30,
    env: {
      ...(process.env as Record<string, string>),
      TERM: 'xterm-256color',
      ERRAND_MODEL: 'test-model',
      ERRAND_BASE_URL: modelUrl,
    },
  });
  programs.push(chat);
  return chat;
}

describe('errand chat: the task view', () => {
  it('lists, follows, scrolls back and stops a task, and gives the prompt back, beside a streaming reply', async () => {
    const rest = deferred();
    endpoint = await fakeOpenAiEndpoint([
      () =>
        completion(
          {
            content: null,
            tool_calls: [
              bashCall(
                'call_1',
                'seq -f "early-%g" 1 300; n=0; while true; do n=$((n+1)); echo tick-$n; sleep 0.1; done',
                'ticker',
              ),
              bashCall('call_2', 'sleep 60', 'sleeper'),
            ],
          },
          'tool_calls',
        ),
      () => completion({ content: 'Both run.' }, 'stop'),
      () => ({ stream: streamedCompletion(['Thinking ', 'it over', rest.promise, ' and done.']) }),
      () => completion({ content: 'Noted the stop.' }, 'stop'),
      () => completion({ content: 'Noted.' }, 'stop'),
    ]);
    const chat = await startChat('errand-chat-view-', endpoint.url);
    await chat.waitFor((screen) => screen.includes('you> '), 'the prompt');
    chat.write('start two\r');
    await chat.waitFor((screen) => screen.includes('Both run.'), 'the reply');
    await chat.waitFor((screen) => /── 2 running in the background/.test(screen), 'the panel');

    // A reply streams and stalls; the view opens under it.
    chat.write('think\r');
    await chat.waitFor((screen) => screen.includes('assistant: Thinking it over'), 'the reply so far');
    chat.write(KEYS.ctrlT);
    await chat.waitFor((_screen, rows) => {
      const header = rows.findIndex((row) => row.startsWith('── tasks:'));
      return (
        header > 0 &&
        rows[header - 1] === 'assistant: Thinking it over' &&
        /^ {2}\S bash-1 +running .* ticker$/.test(rows[header + 1] ?? '') &&
        /^› \S bash-2 +running .* sleeper$/.test(rows[header + 2] ?? '')
      );
    }, 'the list under the streaming line, the newest task selected');
    chat.write(KEYS.up);
    await chat.waitFor((screen) => /› \S bash-1 /.test(screen), 'the selection moved up');

    // Its live output, following the end.
    chat.write(KEYS.enter);
    await chat.waitFor((screen) => screen.includes('── bash-1 following'), 'the output view');
    await chat.waitFor((screen) => lastTick(screen) > 0, 'ticks on screen');
    const seen = lastTick(chat.screen());
    await chat.waitFor((screen) => lastTick(screen) > seen + 2, 'the view following new output');

    // The streamed reply finishes above, once, while the view is open.
    rest.resolve();
    await chat.waitFor(
      (screen) =>
        screen.includes('assistant: Thinking it over and done.') &&
        screen.split('Thinking it over').length === 2 &&
        screen.includes('── bash-1 following'),
      'the whole reply above the open view, once',
    );

    // Scrolled back, it stops following; End follows again.
    chat.write(KEYS.pageUp);
    chat.write(KEYS.pageUp);
    await chat.waitFor((screen) => /── bash-1 \d+ lines back/.test(screen), 'scrolled back');
    const held = chat.screen();
    chat.write(KEYS.end);
    await chat.waitFor((screen) => screen.includes('── bash-1 following'), 'following again');
    expect(held).not.toContain('── bash-1 following');

    // Stop it, with confirmation: n keeps it, y stops it.
    chat.write('s');
    await chat.waitFor((screen) => screen.includes('── stop bash-1 (ticker)? y stops it'), 'the question');
    chat.write('n');
    await chat.waitFor((screen) => screen.includes('── bash-1 following'), 'kept running');
    chat.write('s');
    await chat.waitFor((screen) => screen.includes('── stop bash-1 (ticker)?'), 'asked again');
    chat.write('y');
    await chat.waitFor((screen) => screen.includes('(stopping bash-1)'), 'stopped');
    await chat.waitFor((screen) => /── bash-1 following · killed/.test(screen), 'the view shows its end');

    // Back to the list, then to the prompt, whose line editor has its keys again.
    chat.write(KEYS.escape);
    await chat.waitFor((screen) => /› \S bash-1 +killed/.test(screen), 'the list again');
    chat.write(KEYS.escape);
    await chat.waitFor((screen) => !screen.includes('── tasks:'), 'the view closed');
    await chat.waitFor((screen) => /── 1 running in the background/.test(screen), 'the panel again');
    chat.write('/stop all\r');
    await chat.waitFor((screen) => screen.includes('(stopping bash-2)'), 'the prompt taking commands');
    chat.write('/quit\r');
    expect(await chat.exited).toBe(0);
  }, 90_000);

  it('shows a schedule with its firings and next due time, and stops it', async () => {
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
                  name: 'schedule',
                  arguments: JSON.stringify({ prompt: 'Check the deploy.', every_ms: 600_000, times: 3 }),
                },
              },
              bashCall('call_2', 'sleep 61', 'sleeper'),
            ],
          },
          'tool_calls',
        ),
      () => completion({ content: 'Scheduled.' }, 'stop'),
      () => completion({ content: 'Noted the stop.' }, 'stop'),
      () => completion({ content: 'Noted.' }, 'stop'),
    ]);
    const chat = await startChat('errand-chat-schedule-', endpoint.url);
    await chat.waitFor((screen) => screen.includes('you> '), 'the prompt');
    chat.write('check the deploy every ten minutes, three times\r');
    await chat.waitFor((screen) => screen.includes('Scheduled.'), 'the reply');

    // The list row says how many firings are done of how many, and when the next is due.
    chat.write(KEYS.ctrlT);
    await chat.waitFor(
      (screen) => /› \S bash-1 +running .* sleeper/.test(screen),
      'the list, the newest selected',
    );
    chat.write(KEYS.up);
    await chat.waitFor(
      (screen) =>
        /› \S schedule-1 +running .*fired 0\/3, next in (9m \d\ds|10m 00s), missed: run once {2}schedule: Check the deploy\./.test(
          screen,
        ),
      'the schedule selected, with its firings and next due time',
    );

    // Stopped from the list, with confirmation; it ends killed and fires no more.
    chat.write('s');
    await chat.waitFor((screen) => /── stop schedule-1 .*\? y stops it/.test(screen), 'the question');
    chat.write('y');
    await chat.waitFor((screen) => /› \S schedule-1 +killed/.test(screen), 'the schedule stopped');
    chat.write(KEYS.escape);
    await chat.waitFor(
      (screen) => /── 1 running in the background/.test(screen),
      'the prompt and its panel again',
    );
    chat.write('/stop all\r');
    await chat.waitFor((screen) => screen.includes('(stopping bash-1)'), 'the prompt taking commands');
    chat.write('/quit\r');
    expect(await chat.exited).toBe(0);
  }, 90_000);
});
