/**
 * The dashboard page in a real Chromium over the store-backed backend (what `errand serve` serves): a
 * working runtime in another process shows its running work live, a person stops it with the page's Stop
 * button, the process goes away and the page shows the work cancelled.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { isAlive } from '../../test/fixtures/bash/index.js';
import { findBrowser, type LaunchedBrowser, launchBrowser } from '../../test/support/browser.js';
import { TextCapture } from '../../test/support/mcp-client.js';
import { openSqliteSessionStore } from '../store/index.js';
import { createDashboardServer } from './dashboard-server.js';
import { createStoreDashboardBackend } from './store-dashboard-backend.js';

const browserPath = findBrowser();
const FIXTURE = resolve(import.meta.dirname, '../../test/fixtures/session/serve-child.mjs');

let home: string;
let browser: LaunchedBrowser | undefined;
let context: BrowserContext;

const eventually = <Value>(read: () => Value | Promise<Value>) => expect.poll(read, { timeout: 15_000 });
const row = (page: Page, workId: string) => page.locator(`tr[data-work-id="${workId}"]`);

describe.skipIf(browserPath === undefined)('the dashboard page over another process (errand serve)', () => {
  beforeAll(async () => {
    home = await mkdtemp(join(tmpdir(), 'errand-serve-browser-'));
    browser = await launchBrowser(browserPath!);
    context = browser.context;
  });

  afterAll(async () => {
    await browser?.close();
    if (home) await rm(home, { recursive: true, force: true });
  });

  it('shows the running work of another process live, and stops it with the Stop button', async () => {
    const child: ChildProcess = spawn(process.execPath, [FIXTURE, join(home, 'data')], {
      env: process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const stdout = new TextCapture(child.stdout!);
    const store = openSqliteSessionStore({ home: join(home, 'data') });
    const backend = createStoreDashboardBackend({ store, pollMs: 100, logger: { warn() {} } });
    const server = createDashboardServer({ backend, logger: { warn() {} } });
    let pid: number | undefined;
    try {
      const [, json] = (await stdout.waitFor(/READY (\{.*\})\n/)) as unknown as [string, string];
      const ready = JSON.parse(json) as { sessionId: string; taskId: string; pid: number };
      pid = ready.pid;
      backend.refresh();
      const address = await server.listen();
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('pageerror', (error) => problems.push(error.message));
      await page.goto(address.url);
      await page.locator(`button[data-session-id="${ready.sessionId}"]`).click();
      await eventually(() => page.locator('#badge').textContent()).toBe('1 running');
      const stop = row(page, ready.taskId).locator('button.stop');
      await stop.click();
      await eventually(() => row(page, ready.taskId).locator('[data-cell="state"]').textContent()).toBe(
        'cancelled',
      );
      await vi.waitFor(() => expect(isAlive(ready.pid)).toBe(false), { timeout: 10_000 });
      expect(store.getTask(ready.taskId, ready.sessionId)).toMatchObject({
        status: 'killed',
        stopInitiator: 'user',
      });
      expect(await row(page, ready.taskId).locator('.row-error').count()).toBe(0);
      expect(problems).toEqual([]);
      await page.close();
    } finally {
      await server.close();
      backend.dispose();
      store.close();
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((done) => child.once('exit', done));
        child.kill('SIGKILL');
        await exited;
      }
      if (pid !== undefined && isAlive(pid)) {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // Gone meanwhile.
        }
      }
    }
  });
});
