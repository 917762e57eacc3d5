/**
 * The dashboard of `errand mcp --dashboard` in Chromium, over the built CLI driven by the MCP client
 * SDK: a background command's card and row go from running to "result pending" when it ends — its
 * notification waits for the client's next tool call — and to completed, "told the model", once that
 * call's result carried it.
 */
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { findBrowser, type LaunchedBrowser, launchBrowser } from '../../test/support/browser.js';
import { httpCall, type McpCli, startMcpCli, textBlocks } from '../../test/support/mcp-client.js';

const browserPath = findBrowser();
let browser: LaunchedBrowser | undefined;
const cleanups: Array<() => unknown> = [];

const eventually = <Value>(read: () => Value | Promise<Value>) => expect.poll(read, { timeout: 15_000 });

describe.skipIf(browserPath === undefined)('the dashboard of errand mcp, in Chromium', () => {
  beforeAll(async () => {
    browser = await launchBrowser(browserPath!);
  });
  afterAll(() => browser?.close());
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it("follows a background command's card from running to result pending to told the model", async () => {
    const home = realpathSync(mkdtempSync(join(tmpdir(), 'errand-mcp-browser-')));
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    const cli: McpCli = await startMcpCli({ args: ['--dashboard', '--home', home] });
    cleanups.push(() => cli.client.close());
    const [, url] = (await cli.stderr.waitFor(
      /dashboard at (http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)\n/,
    )) as unknown as [string, string];
    const origin = new URL(url).origin;
    const headers = { Authorization: `Bearer ${new URL(url).searchParams.get('token')}` };

    const page: Page = await browser!.context.newPage();
    cleanups.push(() => page.close());
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`);
    });
    await page.goto(url);
    await page.locator('#connection', { hasText: 'Live' }).waitFor();

    const gate = join(home, 'gate');
    const started = textBlocks(
      await cli.call('bash', {
        command: `while [ ! -e ${gate} ]; do sleep 0.02; done; echo built`,
        run_in_background: true,
        description: 'build the site',
      }),
    )[0]!;
    const taskId = /Started (bash-\d+)/.exec(started)![1]!;
    const { sessions } = JSON.parse((await httpCall(`${origin}/api/sessions`, { headers })).body) as {
      sessions: { id: string }[];
    };
    const { backgroundWorks } = JSON.parse(
      (
        await httpCall(`${origin}/api/sessions/${encodeURIComponent(sessions[0]!.id)}/background-works`, {
          headers,
        })
      ).body,
    ) as { backgroundWorks: { workId: string; toolUseId: string }[] };
    const toolUseId = backgroundWorks.find((work) => work.workId === taskId)!.toolUseId;
    const card = page.locator(`li.card[data-tool-call-id="${toolUseId}"]`);
    const row = page.locator(`tr[data-work-id="${taskId}"]`);

    await eventually(() => card.getAttribute('data-card-state')).toBe('running');
    expect(await row.locator('[data-cell="state"]').textContent()).toBe('running');

    writeFileSync(gate, '');
    await eventually(() => card.getAttribute('data-card-state')).toBe('resultPending');
    expect(await card.locator('.card-state').textContent()).toBe(
      `ended, result not yet told to the model · exit code 0 · ${taskId}`,
    );
    expect(await card.getAttribute('data-notified')).toBe('false');
    expect(await row.locator('[data-cell="state"]').textContent()).toBe('result pending');
    expect(await row.locator('[data-cell="details"]').textContent()).toMatch(
      /^completed · pid \d+ · 6 B · exit code 0$/,
    );

    // The client's next tool call carries the notification: the model is told.
    const next = textBlocks(await cli.call('task_list'));
    expect(next[1]).toContain(`<task-id>${taskId}</task-id>`);
    await eventually(() => card.getAttribute('data-notified')).toBe('true');
    expect(await card.getAttribute('data-card-state')).toBe('completed');
    expect(await card.locator('.card-state').textContent()).toBe('completed · exit code 0 · told the model');
    await eventually(() => row.locator('[data-cell="state"]').textContent()).toBe('completed');
    expect(problems).toEqual([]);
  });
});
