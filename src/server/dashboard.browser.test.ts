import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { findBrowser, type LaunchedBrowser, launchBrowser } from '../../test/support/browser.js';
import { createTaskService } from '../registry/index.js';
import { createOwner, type Owner, type TaskService } from '../tasks/index.js';
import { type ScriptedTask, type ScriptedTaskOptions, scriptedTask } from '../testing/index.js';
import type { DashboardBackend, StopBackgroundWorkResult } from './dashboard-backend.js';
import { createDashboardServer, type DashboardServer } from './dashboard-server.js';
import type { DashboardServerOptions } from './server-options.js';
import { createInMemorySessionDirectory } from './session-directory.js';
import { createTaskServiceBackend, type TaskServiceBackend } from './task-service-backend.js';

const browserPath = findBrowser();
let browser: LaunchedBrowser | undefined;
let context: BrowserContext;

interface Dashboard {
  readonly service: TaskService;
  readonly backend: TaskServiceBackend;
  readonly server: DashboardServer;
  readonly page: Page;
  /** Output held by a live runtime, by `<sessionId>/<workId>`. */
  readonly outputs: Map<string, string>;
  /** Stops the runtime refuses, by work id (the page cannot know in advance). */
  readonly refusedStops: Map<string, StopBackgroundWorkResult>;
  /** Problems the page reported: script errors, console errors, CSP violations. */
  readonly pageProblems: string[];
  owner(sessionId: string): Owner;
  start(sessionId: string, options?: ScriptedTaskOptions): Promise<{ task: ScriptedTask; id: string }>;
}

const open: Dashboard[] = [];
const restartedServers: DashboardServer[] = [];

/**
 * `live: false` serves a backend without output readers: the page falls back to snapshots. `retained`:
 * the ended tasks a session keeps (the service's default otherwise).
 */
async function openDashboard(
  options: { live?: boolean; retained?: number } & Partial<DashboardServerOptions> = {},
): Promise<Dashboard> {
  const { live, retained, ...serverOptions } = options;
  const logger = { warn: vi.fn() };
  const service = createTaskService({
    logger,
    ...(retained === undefined ? {} : { maxRetainedTasksPerOwner: retained }),
  });
  service.attachController('test');
  const sessions = createInMemorySessionDirectory([
    { id: 'main', title: 'Main session', createdAt: 3000 },
    { id: 'child', title: 'Subagent', parentId: 'main', createdAt: 2000 },
    { id: 'idle', title: 'Idle session', createdAt: 1000 },
  ]);
  const outputs = new Map<string, string>();
  const refusedStops = new Map<string, StopBackgroundWorkResult>();
  const backend = createTaskServiceBackend({
    tasks: service,
    sessions,
    feed: { logger },
    readOutput: (sessionId, workId) => {
      const text = outputs.get(`${sessionId}/${workId}`);
      return text === undefined ? undefined : { text, totalBytes: Buffer.byteLength(text) };
    },
  });
  const { openOutput, ...withoutReaders } = backend;
  const served: DashboardBackend = {
    ...(live === false ? withoutReaders : { ...withoutReaders, openOutput }),
    events: backend.events,
    stopBackgroundWork: (workId) => refusedStops.get(workId) ?? backend.stopBackgroundWork(workId),
  };
  const server = createDashboardServer({ backend: served, logger, ...serverOptions });
  const address = await server.listen();
  const page = await context.newPage();
  const pageProblems: string[] = [];
  page.on('pageerror', (error) => pageProblems.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') pageProblems.push(`console: ${message.text()}`);
  });
  await page.goto(address.url);
  await page.locator('#connection', { hasText: 'Live' }).waitFor();
  const owners = new Map<string, Owner>();
  const owner = (sessionId: string) => {
    let found = owners.get(sessionId);
    if (!found) {
      found = createOwner(sessionId);
      owners.set(sessionId, found);
    }
    return found;
  };
  const dashboard: Dashboard = {
    service,
    backend,
    server,
    page,
    outputs,
    refusedStops,
    pageProblems,
    owner,
    async start(sessionId, options = {}) {
      const task = scriptedTask({ kind: 'bash', label: 'npm test', owner: owner(sessionId), ...options });
      const snapshot = await service.start(task.spec);
      return { task, id: snapshot.id };
    },
  };
  open.push(dashboard);
  return dashboard;
}

async function closeAll(): Promise<void> {
  for (const server of restartedServers.splice(0)) await server.close();
  for (const dashboard of open.splice(0)) {
    expect(dashboard.pageProblems).toEqual([]);
    await dashboard.page.close();
    await dashboard.server.close();
    dashboard.backend.dispose();
    await dashboard.service.dispose();
  }
}

/** Waits for the page to catch up; generous because a browser on a loaded CI machine can be slow. */
const eventually = <Value>(read: () => Value | Promise<Value>) => expect.poll(read, { timeout: 10_000 });
const row = (page: Page, workId: string) => page.locator(`tr[data-work-id="${workId}"]`);
const stateOf = (page: Page, workId: string) =>
  row(page, workId).locator('[data-cell="state"]').textContent();
const sessionButton = (page: Page, sessionId: string) =>
  page.locator(`button[data-session-id="${sessionId}"]`);

describe.skipIf(browserPath === undefined)('the dashboard in Chromium', () => {
  beforeAll(async () => {
    browser = await launchBrowser(browserPath!);
    context = browser.context;
  });
  afterAll(() => browser?.close());
  afterEach(closeAll);

  it('counts running bash, workflow and subagent work in the badge, live', async () => {
    const dashboard = await openDashboard();
    const { page } = dashboard;
    await dashboard.start('main');
    await dashboard.start('main', { kind: 'agent', label: 'research' });
    await dashboard.start('main', { kind: 'monitor', label: 'watch logs', cancellable: false });
    await dashboard.start('child', { kind: 'workflow', label: 'deploy' });
    await eventually(() => page.locator('#badge').textContent()).toBe('3 running');
    expect(await page.locator('#badge').isVisible()).toBe(true);

    const extra = await dashboard.start('idle', { kind: 'pty', label: 'top' });
    await eventually(() => page.locator('#badge').textContent()).toBe('4 running');

    extra.task.settle({ status: 'completed' });
    await eventually(() => page.locator('#badge').textContent()).toBe('3 running');
  });

  it('marks sessions with running work in the session list', async () => {
    const dashboard = await openDashboard();
    const { page } = dashboard;
    const work = await dashboard.start('child');
    await eventually(() => sessionButton(page, 'child').getAttribute('class')).toBe('session active');
    expect(await sessionButton(page, 'idle').getAttribute('class')).toBe('session');
    work.task.settle({ status: 'failed' });
    await eventually(() => sessionButton(page, 'child').getAttribute('class')).toBe('session');
  });

  it('shows status changes live, and a result no longer pending in its final state', async () => {
    const dashboard = await openDashboard();
    const { page } = dashboard;
    const build = await dashboard.start('main', { label: 'npm run build' });
    const lint = await dashboard.start('main', { label: 'npm run lint' });
    await eventually(() => stateOf(page, build.id)).toBe('running');

    build.task.settle({ status: 'completed', detail: { exitCode: 0 } });
    await eventually(() => stateOf(page, build.id)).toBe('result pending');
    await expect
      .poll(() => row(page, build.id).locator('[data-cell="details"]').textContent())
      .toContain('exit code 0');
    lint.task.settle({ status: 'failed', detail: { exitCode: 1 }, error: 'lint errors' });
    await eventually(() => stateOf(page, lint.id)).toBe('result pending');
    await expect
      .poll(() => row(page, lint.id).locator('[data-cell="details"]').textContent())
      .toContain('failed · exit code 1');
    // A bare task service knows no ledger: the claim a notifier takes is what ends a pending result.
    dashboard.service.claim(lint.id, dashboard.owner('main'));
    await eventually(() => stateOf(page, lint.id)).toBe('failed');

    // Stop is offered only while running.
    expect(await row(page, build.id).locator('button.stop').count()).toBe(0);
    expect(await row(page, lint.id).locator('button.stop').count()).toBe(0);

    dashboard.service.claim(build.id, dashboard.owner('main'));
    await eventually(() => stateOf(page, build.id)).toBe('completed');
    expect(await row(page, build.id).locator('[data-cell="details"]').textContent()).toBe('exit code 0');
  });

  it('drops a work the runtime no longer keeps (an ended task evicted by a later one)', async () => {
    const dashboard = await openDashboard({ retained: 1 });
    const { page } = dashboard;
    const first = await dashboard.start('main', { label: 'first' });
    const second = await dashboard.start('main', { label: 'second' });
    first.task.settle({ status: 'completed' });
    await eventually(() => stateOf(page, first.id)).toBe('result pending');
    // The second ending makes the service forget the first: its row goes, the second's stays.
    second.task.settle({ status: 'completed' });
    await eventually(() => row(page, first.id).count()).toBe(0);
    expect(await stateOf(page, second.id)).toBe('result pending');
  });

  it('offers no Stop for work its producer cannot cancel', async () => {
    const dashboard = await openDashboard();
    const { page } = dashboard;
    const monitor = await dashboard.start('main', { kind: 'monitor', label: 'watch', cancellable: false });
    await eventually(() => stateOf(page, monitor.id)).toBe('running');
    expect(await row(page, monitor.id).locator('button.stop').count()).toBe(0);
  });

  it('stops a running task from the keyboard', async () => {
    const dashboard = await openDashboard();
    const { page } = dashboard;
    const { task, id } = await dashboard.start('main', { label: 'sleep 600' });
    const stop = row(page, id).locator('button.stop');
    await stop.waitFor();
    await stop.focus();
    expect(await stop.evaluate((element) => element.matches(':focus-visible'))).toBe(true);

    // Live updates land while the button has focus; they must not take it away.
    task.context?.updateDetail({ pid: 31337 });
    const other = await dashboard.start('main', { label: 'another' });
    await expect
      .poll(() => row(page, id).locator('[data-cell="details"]').textContent())
      .toContain('pid 31337');
    await row(page, other.id).waitFor();
    expect(await stop.evaluate((element) => element === document.activeElement)).toBe(true);
    await page.keyboard.press('Enter');

    // A person's stop is told to the model: pending until then.
    await eventually(() => stateOf(page, id)).toBe('result pending');
    dashboard.service.claim(id, dashboard.owner('main'));
    await eventually(() => stateOf(page, id)).toBe('cancelled');
    expect(task.cancelReasons).toEqual(['stopped from the dashboard']);
    const snapshot = dashboard.service.get(id, dashboard.owner('main'));
    expect(snapshot).toMatchObject({ status: 'killed', stopInitiator: 'user' });
    expect(await row(page, id).locator('button.stop').count()).toBe(0);
    expect(await row(page, id).locator('.row-error').count()).toBe(0);
  });

  it('shows a rejected stop as an error on its row, and the work keeps running', async () => {
    const dashboard = await openDashboard();
    const { page } = dashboard;
    const { id } = await dashboard.start('main', { kind: 'workflow', label: 'legacy workflow' });
    dashboard.refusedStops.set(id, { ok: false, reason: 'background_task_cancel_not_supported' });
    await row(page, id).locator('button.stop').click();

    const error = row(page, id).locator('.row-error');
    await error.waitFor();
    expect(await error.getAttribute('role')).toBe('alert');
    expect(await error.textContent()).toContain(
      'fault.command.backgroundWorkCancelRejected.cancel_not_supported',
    );
    expect(await stateOf(page, id)).toBe('running');
    expect(dashboard.service.get(id, dashboard.owner('main')).status).toBe('running');
    // The browser logs the refusal's HTTP status; that one is expected.
    const expected = 'console: Failed to load resource: the server responded with a status of 409 (Conflict)';
    expect(dashboard.pageProblems).toEqual([expected]);
    dashboard.pageProblems.length = 0;
  });

  it('follows a bash work live, and pages back through everything its output holds', async () => {
    const dashboard = await openDashboard();
    const { page } = dashboard;
    const { task, id } = await dashboard.start('main', { label: 'npm test' });
    // 200 numbered lines of 1 KiB: more than the view starts with (the newest 64 KiB).
    const line = (index: number) => `${String(index).padStart(4, '0')} ${'é'.repeat(509)}\n`;
    let all = '';
    for (let index = 0; index < 200; index += 1) all += line(index);
    task.push(all);
    await row(page, id).locator('button.view-output').click();
    const text = () => page.locator('#output-text').textContent();
    await eventually(text).toContain(line(199));
    const first = Number(await page.locator('#output').getAttribute('data-first-offset'));
    expect(first).toBeGreaterThan(0);
    expect(all.endsWith((await text()) ?? '')).toBe(true);
    expect(await page.locator('#output-meta').textContent()).toMatch(/· live$/);

    // New output arrives on the stream, without a refresh.
    task.push('Tests: 200 passed\n');
    await eventually(text).toContain('Tests: 200 passed');

    // Scrolling back brings in what the file holds, page by page, up to its start.
    const earlier = page.locator('#output-earlier');
    while (Number(await page.locator('#output').getAttribute('data-first-offset')) > 0) {
      const before = await page.locator('#output').getAttribute('data-first-offset');
      await earlier.click();
      await eventually(() => page.locator('#output').getAttribute('data-first-offset')).not.toBe(before);
    }
    expect(await earlier.isDisabled()).toBe(true);
    expect(await text()).toBe(`${all}Tests: 200 passed\n`);

    task.settle();
    await eventually(() => page.locator('#output-meta').textContent()).toMatch(/· ended$/);
    await page.keyboard.press('Escape');
    await eventually(() => page.locator('#output').isVisible()).toBe(false);
  });

  it('without live readers, shows an output snapshot of at most 8192 bytes, refreshed as it grows', async () => {
    const dashboard = await openDashboard({ live: false });
    const { page } = dashboard;
    const { task, id } = await dashboard.start('child', { label: 'npm test' });
    // The subagent's bash output is held by its parent's runtime: the server walks up to it.
    dashboard.outputs.set(`main/${id}`, 'PASS src/a.test.ts\n');
    await sessionButton(page, 'child').click();
    await row(page, id).locator('button.view-output').click();
    await eventually(() => page.locator('#output-text').textContent()).toBe('PASS src/a.test.ts\n');
    expect(await page.locator('#output').isVisible()).toBe(true);

    const long = `${'PASS src/b.test.ts\n'.repeat(1000)}Tests: 1001 passed\n`;
    dashboard.outputs.set(`main/${id}`, long);
    task.context?.updateDetail({ outputBytes: Buffer.byteLength(long) });
    await eventually(() => page.locator('#output-text').textContent()).toContain('Tests: 1001 passed');
    const shown = (await page.locator('#output-text').textContent()) ?? '';
    expect(Buffer.byteLength(shown)).toBeLessThanOrEqual(8192);
    expect(long.endsWith(shown)).toBe(true);
    expect(await page.locator('#output-meta').textContent()).toMatch(/^last 8\.0 KiB of 18\.6 KiB$/);

    await page.keyboard.press('Escape');
    await eventually(() => page.locator('#output').isVisible()).toBe(false);
    // The refused live stream is the browser's to log; the fallback is the page's answer to it.
    expect(dashboard.pageProblems.every((problem) => problem.includes('404 (Not Found)'))).toBe(true);
    dashboard.pageProblems.length = 0;
  });

  it('is usable with the keyboard: the session list moves with arrow keys, and keeps focus as it reorders', async () => {
    const dashboard = await openDashboard();
    const { page } = dashboard;
    const order = () =>
      page.evaluate(() =>
        Array.from(document.querySelectorAll('#sessions button.session')).map((button) =>
          button.getAttribute('data-session-id'),
        ),
      );
    const focused = () => page.evaluate(() => document.activeElement?.getAttribute('data-session-id'));
    await eventually(order).toEqual(['main', 'child', 'idle']);
    // Running work moves a session to the top.
    await dashboard.start('idle', { label: 'idle work' });
    await eventually(order).toEqual(['idle', 'main', 'child']);
    await sessionButton(page, 'main').focus();
    await page.keyboard.press('ArrowDown');
    expect(await focused()).toBe('child');
    // Activity in another session reorders the list; focus stays on the same entry.
    await dashboard.start('main', { label: 'busy' });
    await eventually(order).toEqual(['main', 'idle', 'child']);
    expect(await focused()).toBe('child');
    await page.keyboard.press('Home');
    expect(await focused()).toBe('main');
    await page.keyboard.press('ArrowDown');
    expect(await focused()).toBe('idle');
    expect(await page.evaluate(() => document.activeElement?.matches(':focus-visible'))).toBe(true);
    await page.keyboard.press('Enter');
    await expect
      .poll(() => page.locator('#panel-heading').textContent())
      .toBe('Background work of Idle session');
    expect(await sessionButton(page, 'idle').getAttribute('aria-current')).toBe('true');
    await expect
      .poll(() => page.locator('tr[data-work-id] [data-cell="work"]').first().textContent())
      .toContain('idle work');
  });

  it('catches up after the server restarts, without showing a stale "running"', async () => {
    const dashboard = await openDashboard();
    const { page } = dashboard;
    const { task, id } = await dashboard.start('main', { label: 'long build' });
    await eventually(() => stateOf(page, id)).toBe('running');
    const { port } = dashboard.server.address!;
    await dashboard.server.close();
    await eventually(() => page.locator('#connection').textContent()).toBe('Reconnecting…');

    task.settle({ status: 'failed', detail: { exitCode: 2 } });
    const restarted = createDashboardServer({
      backend: dashboard.backend,
      port,
      token: dashboard.server.token,
      logger: { warn: vi.fn() },
    });
    await restarted.listen();
    restartedServers.push(restarted);
    // The browser reconnects on its own (after the stream's retry delay) and resumes from its last event id.
    await eventually(() => stateOf(page, id)).toBe('result pending');
    expect(await page.locator('#connection').textContent()).toBe('Live');
  });

  it('says which limit refused its event stream when too many pages are open', async () => {
    const dashboard = await openDashboard({ maxEventClients: 1 });
    const page = await context.newPage();
    try {
      await page.goto(dashboard.server.address!.url);
      await page.locator('#fatal').waitFor();
      expect(await page.locator('#fatal').textContent()).toBe(
        'The live event stream was refused: This dashboard already serves 1 live event stream, its limit (the server option maxEventClients, or --max-event-clients): close other dashboard pages, or restart it with a higher limit',
      );
      expect(await page.locator('#connection').textContent()).toBe('Disconnected');
    } finally {
      await page.close();
    }
  });

  it('says so when the token is wrong, and shows no data', async () => {
    const dashboard = await openDashboard();
    await dashboard.start('main');
    const page = await context.newPage();
    try {
      await page.goto(`${dashboard.server.address!.origin}/?token=${'x'.repeat(43)}`);
      await page.locator('#fatal').waitFor();
      expect(await page.locator('#fatal').textContent()).toMatch(/not valid|refused/);
      expect(await page.locator('button.session').count()).toBe(0);
      expect(await page.locator('tr[data-work-id]').count()).toBe(0);
    } finally {
      await page.close();
    }
  });
});
