/**
 * The dashboard page's browser notifications in Chromium: the permission is asked only when the person
 * clicks "Notify me" (granted here through the browser context), a notice shows a real Notification while
 * the tab is in the background and none while it is in front, and the "Sent notifications" panel says what
 * each sink did. The page's visibility is the browser's `document.visibilityState`, which a headless
 * Chromium always reports as visible: the test's init script lets it say "hidden" and fires the
 * `visibilitychange` a browser fires when a tab goes to the background.
 */
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { findBrowser, type LaunchedBrowser, launchBrowser } from '../../test/support/browser.js';
import { capturingLogger } from '../../test/support/registry.js';
import { createDashboardServer } from '../server/index.js';
import { createMemorySessionStore } from '../store/index.js';
import { scriptedModel } from '../testing/index.js';
import { createErrandRuntime, type ErrandRuntime } from './errand-runtime.js';

const browserPath = findBrowser();
let browser: LaunchedBrowser | undefined;
const cleanups: Array<() => unknown> = [];

beforeAll(async () => {
  if (browserPath) browser = await launchBrowser(browserPath);
});
afterAll(async () => {
  await browser?.close();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Records permission requests and shown notifications; lets the test put the tab in the background. */
const INIT_SCRIPT = `
  window.__permissionRequests = 0;
  window.__shown = [];
  window.__hidden = false;
  const RealNotification = window.Notification;
  const request = RealNotification.requestPermission.bind(RealNotification);
  class RecordingNotification extends RealNotification {
    constructor(title, options) {
      super(title, options);
      window.__shown.push({ title, body: options && options.body });
    }
  }
  RecordingNotification.requestPermission = (...args) => {
    window.__permissionRequests += 1;
    return request(...args);
  };
  Object.defineProperty(RecordingNotification, 'permission', { get: () => RealNotification.permission });
  window.Notification = RecordingNotification;
  Object.defineProperty(Document.prototype, 'visibilityState', {
    configurable: true,
    get: () => (window.__hidden ? 'hidden' : 'visible'),
  });
  Object.defineProperty(Document.prototype, 'hidden', { configurable: true, get: () => window.__hidden });
`;

async function setHidden(page: Page, hidden: boolean): Promise<void> {
  await page.evaluate((value) => {
    (window as unknown as { __hidden: boolean }).__hidden = value;
    document.dispatchEvent(new Event('visibilitychange'));
  }, hidden);
}

const shown = (page: Page) =>
  page.evaluate(() => (window as unknown as { __shown: { title: string; body: string }[] }).__shown);

describe.skipIf(!browserPath)('browser notifications on the dashboard page', () => {
  it('asks on a click, notifies while the tab is in the background, and lists what was sent', async () => {
    const model = scriptedModel([]);
    for (let index = 0; index < 10; index += 1) model.push({ text: 'Noted.' });
    const runtime: ErrandRuntime = await createErrandRuntime({
      model,
      store: createMemorySessionStore(),
      pty: false,
      logger: capturingLogger(),
      notifyPerson: {},
    });
    cleanups.push(() => runtime.dispose());
    const session = runtime.createSession({ id: 'main' });
    const server = createDashboardServer({
      backend: runtime.dashboard,
      notices: runtime.personNotifier!,
      logger: { warn: vi.fn() },
    });
    const address = await server.listen();
    cleanups.push(() => server.close());
    const page = await browser!.context.newPage();
    cleanups.push(() => page.close());
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    await page.addInitScript(INIT_SCRIPT);
    await page.goto(address.url);
    await page.locator('#connection', { hasText: 'Live' }).waitFor();
    const toggle = page.locator('#notify-toggle');
    await toggle.waitFor({ state: 'visible' });
    // Loading the page asked nothing.
    expect(await toggle.textContent()).toBe('Notify me');
    expect(
      await page.evaluate(() => (window as unknown as { __permissionRequests: number }).__permissionRequests),
    ).toBe(0);
    expect(await page.evaluate(() => Notification.permission)).toBe('default');

    await browser!.context.grantPermissions(['notifications'], { origin: address.origin });
    await toggle.click();
    await page.locator('#notify-toggle', { hasText: 'Notifications on' }).waitFor();
    expect(
      await page.evaluate(() => (window as unknown as { __permissionRequests: number }).__permissionRequests),
    ).toBe(1);

    // In front: the end is listed, no notification pops up.
    const front = await runtime.bash.start({ command: 'true', owner: session.owner, background: true });
    await page.locator('#notices-list li', { hasText: front.taskId }).waitFor({ state: 'attached' });
    expect(await shown(page)).toEqual([]);

    // In the background: a failure pops up with its task and status.
    await setHidden(page, true);
    const back = await runtime.bash.start({
      command: 'exit 4',
      description: 'nightly tests',
      owner: session.owner,
      background: true,
    });
    await vi.waitFor(async () => expect(await shown(page)).toHaveLength(1), { timeout: 10_000 });
    expect((await shown(page))[0]).toEqual({
      title: `Errand: ${back.taskId} failed`,
      body: `${back.taskId} "nightly tests" failed with exit code 4`,
    });
    await setHidden(page, false);
    // The panel opens on a click and lists the failure with what the page's sink did.
    await page.locator('#notices summary').click();
    const item = page.locator('#notices-list li', { hasText: back.taskId });
    await item.waitFor();
    expect(await item.textContent()).toContain('browser: delivered');
    expect(await page.locator('#notices').getAttribute('hidden')).toBeNull();
    expect(problems).toEqual([]);
  }, 120_000);
});
