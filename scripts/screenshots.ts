/**
 * Makes the README's screenshots, from the real thing: `docs/images/dashboard.png` (the dashboard of a
 * runtime with a few sessions of history, running and finished work and a foreground command) and
 * `docs/images/terminal-panel.png` (`errand chat` in a pseudo-terminal against a scripted endpoint, with
 * its live panel). Run it with `npm run screenshots`; it needs a Chromium-based browser (see
 * test/support/browser.ts) and node-pty.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createErrandRuntime, type ErrandRuntime } from '../src/host/index.js';
import { createDashboardServer } from '../src/server/index.js';
import type { ModelRequest } from '../src/session/index.js';
import { openSqliteSessionStore, type SessionStore } from '../src/store/index.js';
import { type ScriptedModel, scriptedModel } from '../src/testing/index.js';
import { findBrowser, launchBrowser } from '../test/support/browser.js';
import { completion, fakeOpenAiEndpoint } from '../test/support/fake-openai.js';
import { spawnInTerminal } from '../test/support/terminal.js';

const root = resolve(import.meta.dirname, '../..');
const images = join(root, 'docs', 'images');
const quiet = { warn: () => {} };

function bashCall(
  command: string,
  options: { background?: boolean; description?: string; id?: string } = {},
) {
  return {
    name: 'bash',
    ...(options.id ? { id: options.id } : {}),
    input: {
      command,
      ...(options.description ? { description: options.description } : {}),
      ...(options.background ? { run_in_background: true } : {}),
    },
  };
}

async function runtimeOn(store: SessionStore, cwd: string, model: ScriptedModel): Promise<ErrandRuntime> {
  return createErrandRuntime({
    model,
    store,
    cwd,
    pty: false,
    commandPollMs: 50,
    bash: { tool: { autoBackgroundAfterMs: false } },
    logger: quiet,
  });
}

/** Waits for a condition the page or the runtime reaches by itself. */
async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 50));
  }
}

async function dashboardShot(browserPath: string): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), 'errand-screenshot-'));
  const project = join(home, 'acme-shop');
  mkdirSync(project);
  const store = openSqliteSessionStore({ home: join(home, 'data') });
  const runtimes: ErrandRuntime[] = [];
  try {
    // History: two ended sessions, from a chat and from an MCP client.
    const earlier = await runtimeOn(
      store,
      project,
      scriptedModel([{ text: 'The flaky test waits on a timer.' }]),
    );
    runtimes.push(earlier);
    await earlier.createSession({ cwd: project }).send('Why does parser.test.ts fail one run in ten?');
    earlier.createSession({ cwd: join(home, 'api'), title: 'MCP: claude-code 2.1.4' });
    await earlier.dispose();

    // Another client's session with running work.
    const theirsModel = scriptedModel([
      {
        toolCalls: [
          bashCall('while true; do echo "GET /health 200"; sleep 2; done', {
            background: true,
            description: 'watch the health endpoint',
          }),
        ],
      },
      { text: 'Watching.' },
    ]);
    const theirs = await runtimeOn(store, project, theirsModel);
    runtimes.push(theirs);
    await theirs
      .createSession({ cwd: project, title: 'MCP: codex 0.17.2' })
      .send('Keep an eye on the health endpoint');

    // The server's own session: a finished build, a dev server, and a test run in the foreground.
    const gate = join(home, 'tests-done');
    const model = scriptedModel([
      {
        text: 'I will build first, and start the dev server alongside.',
        toolCalls: [
          bashCall(
            'for step in deps compile bundle; do echo "build: $step"; sleep 0.3; done; echo "built in 0.9s"',
            {
              background: true,
              description: 'npm run build',
              id: 'call_build',
            },
          ),
          bashCall('while true; do echo "GET / 200 (3 ms)"; sleep 1; done', {
            background: true,
            description: 'npm run dev',
            id: 'call_dev',
          }),
        ],
      },
      { text: 'The build and the dev server run in the background.' },
      (request: ModelRequest) => {
        const last = request.messages.at(-1);
        const told = last?.role === 'user' ? last.text : '';
        return {
          text: told.includes('completed') ? 'The build passed. Now the tests.' : 'Running the tests.',
          toolCalls: [
            bashCall(`echo "running 214 tests"; while [ ! -e ${gate} ]; do sleep 0.1; done`, {
              description: 'npm test',
              id: 'call_test',
            }),
          ],
        };
      },
    ]);
    const own = await runtimeOn(store, project, model);
    runtimes.push(own);
    const session = own.createSession({ cwd: project });
    await session.send('Build the shop, start the dev server and run the tests');
    await until(() => model.remaining === 0, 'the test run to start');

    const server = createDashboardServer({
      backend: own.dashboard,
      assetsDirectory: join(root, 'web'),
      logger: quiet,
    });
    const address = await server.listen();
    const browser = await launchBrowser(browserPath, { width: 1280, height: 900 });
    try {
      const page = await browser.context.newPage();
      await page.goto(address.url);
      await page.locator('li.card[data-tool-call-id="call_test"][data-card-state="foreground"]').waitFor();
      await page.locator('li.card[data-tool-call-id="call_build"][data-notified="true"]').waitFor();
      await page.locator('#ended-summary', { hasText: 'Ended sessions (2)' }).waitFor();
      await page.locator('#ended-summary').click();
      await page.locator('button.session[data-session-id] >> nth=3').waitFor();
      await page.screenshot({ path: join(images, 'dashboard.png'), fullPage: true });
      await page.close();
    } finally {
      await browser.close();
      await server.close();
      writeFileSync(gate, '');
    }
  } finally {
    for (const runtime of runtimes.reverse()) await runtime.dispose();
    store.close();
    rmSync(home, { recursive: true, force: true });
  }
}

async function terminalShot(browserPath: string): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), 'errand-screenshot-chat-'));
  const endpoint = await fakeOpenAiEndpoint([
    () =>
      completion(
        {
          content: 'Starting the test suite and the type-check in the background.',
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: {
                name: 'bash',
                arguments: JSON.stringify({
                  command: 'for i in $(seq 1 500); do echo "PASS src/module-$i.test.ts"; sleep 0.2; done',
                  description: 'npm test',
                  run_in_background: true,
                }),
              },
            },
            {
              id: 'call_2',
              type: 'function',
              function: {
                name: 'bash',
                arguments: JSON.stringify({
                  command: 'for i in $(seq 1 300); do echo "checking file $i"; sleep 0.3; done',
                  description: 'npx tsc --noEmit',
                  run_in_background: true,
                }),
              },
            },
          ],
        },
        'tool_calls',
      ),
    () => completion({ content: 'Both run in the background; I will tell you when they finish.' }, 'stop'),
  ]);
  const chat = await spawnInTerminal(
    process.execPath,
    [join(root, 'dist/cli/main.js'), 'chat', '--home', home, '--cwd', home],
    {
      cols: 110,
      rows: 22,
      env: {
        ...(process.env as Record<string, string>),
        TERM: 'xterm-256color',
        ERRAND_MODEL: 'gpt-4.1',
        ERRAND_BASE_URL: endpoint.url,
      },
    },
  );
  try {
    await chat.waitFor((screen) => screen.includes('you> '), 'the prompt');
    chat.write('run the tests and the type-check\r');
    await chat.waitFor((screen) => screen.includes('I will tell you when they finish.'), 'the reply');
    await chat.waitFor(
      (screen) => /bash-2 +running +[1-9]/.test(screen),
      'the panel with some seconds on it',
      20_000,
    );
    chat.write('what is still running?');
    await chat.waitFor((screen) => screen.includes('you> what is still running?'), 'the typed question');
    const rows = chat.rows();
    const escapeHtml = (text: string) =>
      text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
    const html = `<!doctype html><meta charset="utf-8"><style>
      body { margin: 0; background: #1e1f24; }
      pre { margin: 0; padding: 18px 22px; color: #e6e8eb; font: 14px/1.45 "DejaVu Sans Mono", monospace; }
      .panel { color: #4cc38a; } .prompt { color: #6ea8ff; }
    </style><pre>${rows
      .map((row) => {
        const text = escapeHtml(row);
        if (row.startsWith('you> ')) return `<span class="prompt">${text}</span>`;
        if (/^(── |\S bash-)/.test(row)) return `<span class="panel">${text}</span>`;
        return text;
      })
      .join('\n')}</pre>`;
    const browser = await launchBrowser(browserPath, { width: 1000, height: 420 });
    try {
      const page = await browser.context.newPage();
      await page.setContent(html);
      await page.locator('pre').screenshot({ path: join(images, 'terminal-panel.png') });
      await page.close();
    } finally {
      await browser.close();
    }
    chat.write('\u0015/stop all\r');
    await chat.waitFor((screen) => screen.includes('(stopping'), 'the stop');
    chat.write('/quit\r');
    await chat.exited;
  } finally {
    chat.kill();
    await endpoint.close();
    rmSync(home, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const browserPath = findBrowser();
  if (browserPath === undefined) {
    process.exitCode = 1;
    return;
  }
  mkdirSync(images, { recursive: true });
  await dashboardShot(browserPath);
  console.log(`wrote ${join(images, 'dashboard.png')}`);
  await terminalShot(browserPath);
  console.log(`wrote ${join(images, 'terminal-panel.png')}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
