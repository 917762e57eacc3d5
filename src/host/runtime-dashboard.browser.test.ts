/**
 * The dashboard page in Chromium over real runtimes on one SQLite store, with history present: the badge,
 * the order of the session list and its selection of the server's own session, other runtimes' running
 * work marked, ended sessions collapsed, a confirmed Stop all, moving a running foreground command to the
 * background from its card, and the conversation's tool-call cards following their work to the exit code
 * of the notification that told the model.
 */
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { isAlive } from '../../test/fixtures/bash/index.js';
import { findBrowser, type LaunchedBrowser, launchBrowser } from '../../test/support/browser.js';
import { capturingLogger } from '../../test/support/registry.js';
import { createDashboardServer } from '../server/index.js';
import { openSqliteSessionStore, type SessionStore } from '../store/index.js';
import { type ScriptedModel, scriptedModel } from '../testing/index.js';
import { createErrandRuntime, type ErrandRuntime } from './errand-runtime.js';

const browserPath = findBrowser();
let browser: LaunchedBrowser | undefined;
const cleanups: Array<() => unknown> = [];

async function cleanUp(): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
}

function temporaryHome(): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), 'errand-dash-browser-')));
  cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

/** A store whose clock moves on with every read, so sessions created one after another are ordered. */
function openStore(home: string): SessionStore {
  let bump = 0;
  const store = openSqliteSessionStore({ home, now: () => Date.now() + bump++ });
  cleanups.push(() => store.close());
  return store;
}

async function startRuntime(store: SessionStore, cwd: string, model: ScriptedModel): Promise<ErrandRuntime> {
  const runtime = await createErrandRuntime({
    model,
    store,
    cwd,
    pty: false,
    commandPollMs: 20,
    bash: { tool: { autoBackgroundAfterMs: false } },
    logger: capturingLogger(),
  });
  cleanups.push(() => runtime.dispose());
  return runtime;
}

/** Opens the dashboard of `runtime` in a new page; page errors and console errors are collected. */
async function openPage(runtime: ErrandRuntime): Promise<{ page: Page; problems: string[] }> {
  const server = createDashboardServer({ backend: runtime.dashboard, logger: { warn: vi.fn() } });
  const address = await server.listen();
  cleanups.push(() => server.close());
  const page = await browser!.context.newPage();
  cleanups.push(() => page.close());
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  await page.goto(address.url);
  await page.locator('#connection', { hasText: 'Live' }).waitFor();
  return { page, problems };
}

async function startBackgroundSleep(
  runtime: ErrandRuntime,
  model: ScriptedModel,
  sessionId: string,
  text: string,
) {
  model.push(
    // Distinct per call: the duplicate guard answers an identical running command with its id.
    { toolCalls: [{ name: 'bash', input: { command: `sleep 30 # ${text}`, run_in_background: true } }] },
    { text: 'Started.' },
  );
  const session = runtime.sessions.getSession(sessionId)!;
  await session.send(text);
  const task = runtime.tasks
    .list(session.owner)
    .filter((candidate) => candidate.isBackgrounded && candidate.status === 'running')
    .at(-1)!;
  return { id: task.id, pid: task.detail.pid as number };
}

const eventually = <Value>(read: () => Value | Promise<Value>) => expect.poll(read, { timeout: 15_000 });
const sessionOrder = (page: Page) =>
  page.evaluate(() =>
    Array.from(document.querySelectorAll('button.session')).map((button) =>
      button.getAttribute('data-session-id'),
    ),
  );
const sessionButton = (page: Page, sessionId: string) =>
  page.locator(`button[data-session-id="${sessionId}"]`);
const card = (page: Page, toolCallId: string) => page.locator(`li.card[data-tool-call-id="${toolCallId}"]`);

describe.skipIf(browserPath === undefined)('the dashboard of a runtime, in Chromium', () => {
  beforeAll(async () => {
    browser = await launchBrowser(browserPath!);
  });
  afterAll(() => browser?.close());
  afterEach(cleanUp);

  it("selects the server's own session among older ones, orders and names them, and marks other runtimes' work", async () => {
    const home = temporaryHome();
    const store = openStore(home);
    const earlier = await startRuntime(store, home, scriptedModel([{ text: 'Looking.' }, { text: 'Done.' }]));
    await earlier.createSession({ id: 'old-chat', cwd: '/work/parser' }).send('Fix the flaky parser test');
    earlier.createSession({ id: 'old-mcp', cwd: '/work/api', title: 'MCP: claude-code 2.1.0' });
    await earlier.dispose();
    const theirsModel = scriptedModel();
    const theirs = await startRuntime(store, home, theirsModel);
    theirs.createSession({ id: 'theirs', title: 'MCP: codex 0.17.0' });
    await startBackgroundSleep(theirs, theirsModel, 'theirs', 'watch the logs');
    const ownModel = scriptedModel();
    const own = await startRuntime(store, home, ownModel);
    const site = join(home, 'site');
    mkdirSync(site);
    own.createSession({ id: 'mine', title: 'MCP: gemini-cli 0.61.0', cwd: site });
    const later = own.createSession({ id: 'mine-later' });
    const { page, problems } = await openPage(own);

    // Idle: the server's own newest session is selected, though older and foreign ones exist.
    await eventually(() => sessionButton(page, 'mine-later').getAttribute('aria-current')).toBe('true');
    await startBackgroundSleep(own, ownModel, 'mine', 'build the site');
    await eventually(() => page.locator('#badge').textContent()).toBe('1 running');
    await eventually(() => sessionOrder(page)).toEqual([
      'mine',
      'theirs',
      'mine-later',
      'old-mcp',
      'old-chat',
    ]);
    // The selection made stays put while the work moves sessions around.
    expect(await sessionButton(page, 'mine-later').getAttribute('aria-current')).toBe('true');
    await sessionButton(page, 'mine').click();
    await eventually(() => page.locator('#panel-heading').textContent()).toBe(
      'Background work of build the site',
    );
    expect(await page.locator('tr[data-work-id]').count()).toBe(1);

    // Names a person recognises: the first message, else the client; the start time and directory below.
    await expect
      .poll(() => sessionButton(page, 'mine').locator('.details').textContent())
      .toMatch(/^MCP: gemini-cli 0\.61\.0 · started \d\d:\d\d( [AP]M)? · …\/errand-dash-browser-\w+\/site$/);
    expect(await sessionButton(page, 'theirs').locator('.name').textContent()).toBe('watch the logs');
    // Another runtime's running work marks its session, with its count.
    expect(await sessionButton(page, 'theirs').getAttribute('class')).toBe('session active');
    expect(await sessionButton(page, 'theirs').locator('.count').textContent()).toBe('1');
    // Ended sessions are collapsed until opened.
    expect(await page.locator('#ended').evaluate((details) => (details as HTMLDetailsElement).open)).toBe(
      false,
    );
    expect(await page.locator('#ended-summary').textContent()).toBe('Ended sessions (2)');
    expect(await sessionButton(page, 'old-chat').isVisible()).toBe(false);
    await page.locator('#ended-summary').click();
    expect(await sessionButton(page, 'old-chat').locator('.name').textContent()).toBe(
      'Fix the flaky parser test',
    );
    expect(await sessionButton(page, 'old-mcp').locator('.name').textContent()).toBe(
      'MCP: claude-code 2.1.0',
    );
    expect(later.id).toBe('mine-later');
    expect(problems).toEqual([]);
  });

  it('stops all the running work of a session after a confirmation', async () => {
    const home = temporaryHome();
    const store = openStore(home);
    const model = scriptedModel();
    const runtime = await startRuntime(store, home, model);
    runtime.createSession({ id: 'main' });
    const first = await startBackgroundSleep(runtime, model, 'main', 'start two sleeps');
    const second = await startBackgroundSleep(runtime, model, 'main', 'and another');
    const { page, problems } = await openPage(runtime);
    await eventually(() => page.locator('#badge').textContent()).toBe('2 running');

    await page.locator('#stop-all').click();
    expect(await page.locator('#stop-all-question').textContent()).toBe(
      'Stop 2 running works of this session?',
    );
    // Cancel leaves everything running.
    await page.locator('#stop-all-no').click();
    expect(await page.locator('#stop-all-confirm').isVisible()).toBe(false);
    expect([isAlive(first.pid), isAlive(second.pid)]).toEqual([true, true]);
    await page.locator('#stop-all').click();
    await page.locator('#stop-all-yes').click();
    await eventually(() => page.locator('tr[data-work-id] [data-cell="state"]').allTextContents()).toEqual([
      'cancelled',
      'cancelled',
    ]);
    await vi.waitFor(() => expect([isAlive(first.pid), isAlive(second.pid)]).toEqual([false, false]), {
      timeout: 10_000,
    });
    expect(await page.locator('#panel-status').textContent()).toBe('Stop requested for 2 works.');
    expect(await page.locator('#stop-all').isVisible()).toBe(false);
    expect(problems).toEqual([]);
  });

  it('moves a running foreground command to the background from its card, which then follows it to its exit code', async () => {
    const home = temporaryHome();
    const store = openStore(home);
    const gate = join(home, 'go');
    const model = scriptedModel([
      {
        text: 'Running the check.',
        toolCalls: [
          {
            name: 'bash',
            id: 'call_check',
            input: { command: `while [ ! -e ${gate} ]; do sleep 0.05; done; echo checked; exit 3` },
          },
        ],
      },
      { text: 'It runs in the background now.' },
      { text: 'The check failed with exit code 3.' },
    ]);
    const runtime = await startRuntime(store, home, model);
    const session = runtime.createSession({ id: 'main' });
    const { page, problems } = await openPage(runtime);
    const turn = session.send('run the check');

    await eventually(() => card(page, 'call_check').getAttribute('data-card-state')).toBe('foreground');
    expect(await card(page, 'call_check').locator('.summary').textContent()).toContain('exit 3');
    expect(await page.locator('li.turn-user .said').first().textContent()).toBe('run the check');
    await card(page, 'call_check').locator('button.move').click();
    expect((await turn).text).toBe('It runs in the background now.');
    await eventually(() => card(page, 'call_check').getAttribute('data-card-state')).toBe('running');
    expect(await card(page, 'call_check').locator('button.move').count()).toBe(0);
    await eventually(() => page.locator('#badge').textContent()).toBe('1 running');

    writeFileSync(gate, '');
    await eventually(() => card(page, 'call_check').getAttribute('data-notified')).toBe('true');
    expect(await card(page, 'call_check').getAttribute('data-card-state')).toBe('failed');
    expect(await card(page, 'call_check').getAttribute('data-exit-code')).toBe('3');
    expect(await card(page, 'call_check').locator('.card-state').textContent()).toBe(
      'failed · exit code 3 · told the model',
    );
    await eventually(() => page.locator('li.turn-notice').first().textContent()).toMatch(
      /^Told the model: bash-\d+ failed \(exit code 3\)$/,
    );
    await eventually(() => page.locator('li.turn-assistant .said').last().textContent()).toBe(
      'The check failed with exit code 3.',
    );
    expect(existsSync(gate)).toBe(true);
    expect(problems).toEqual([]);
  });

  it("shows a schedule's row with its firings, next due time and policy, live, and stops it", async () => {
    const home = temporaryHome();
    const store = openStore(home);
    const model = scriptedModel([{ text: 'Deploy is fine.' }]);
    const runtime = await createErrandRuntime({
      model,
      store,
      cwd: home,
      pty: false,
      commandPollMs: 20,
      schedules: { minIntervalMs: 1000 },
      logger: capturingLogger(),
    });
    cleanups.push(() => runtime.dispose());
    const session = runtime.createSession({ id: 'main' });
    const { page, problems } = await openPage(runtime);
    await runtime.schedules!.start(
      { prompt: 'Check the deploy.', every_ms: 1500, times: 3, missed: 'skip' },
      { owner: session.owner },
    );
    const row = page.locator('tr[data-work-id="schedule-1"]');
    await eventually(() => row.locator('td[data-cell="kind"]').textContent()).toBe('schedule');
    const details = () => row.locator('td[data-cell="details"]').textContent();
    await eventually(details).toMatch(
      /^every 1\.5 s, 3 times · fired 0 of 3 · next due .+ · missed firings: skip$/,
    );
    // The first firing: an automated turn, then the row counts it.
    await eventually(details).toMatch(/fired 1 of 3 · next due /);
    expect(model.requests).toHaveLength(1);
    await row.locator('button.stop').click();
    await eventually(() => store.getTask('schedule-1', 'main')?.status).toBe('killed');
    await eventually(details).not.toContain('next due');
    await eventually(() => store.listSchedules('main')).toEqual([]);
    expect(problems).toEqual([]);
  });
});
