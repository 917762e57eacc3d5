/**
 * `errand mcp` killed with SIGKILL while a schedule it set is waiting, then started again by the same
 * client in the same directory on the same data directory: the new server resumes the session, re-arms the
 * schedule from the store, and delivers its firing — which came due while no server ran — to the client
 * once, with the missed-firing policy told beside it.
 */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type McpCli, startMcpCli, textBlocks } from '../../test/support/mcp-client.js';
import { openSqliteSessionStore } from '../store/index.js';

const directories: string[] = [];
const clis: McpCli[] = [];
const WAIT = { timeout: 60_000, interval: 50 };

afterEach(async () => {
  for (const cli of clis.splice(0)) await cli.client.close().catch(() => {});
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function temporaryDirectory(prefix: string): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  directories.push(directory);
  return directory;
}

async function start(home: string, cwd: string): Promise<McpCli> {
  const cli = await startMcpCli({ args: ['--home', home], cwd });
  clis.push(cli);
  return cli;
}

describe('errand mcp: a schedule across a SIGKILL of the server', () => {
  it('is re-armed by the next server for the same client and directory, and its firing delivered once', async () => {
    const home = temporaryDirectory('errand-mcp-schedule-');
    const cwd = temporaryDirectory('errand-mcp-schedule-cwd-');
    const first = await start(home, cwd);
    const [scheduled] = textBlocks(
      await first.call('schedule', { prompt: 'Check the deploy.', in_ms: 1500 }),
    );
    expect(scheduled).toMatch(/^Scheduled schedule-1: once at /);
    const store = openSqliteSessionStore({ home });
    try {
      const [row] = store.listSchedules();
      expect(row).toMatchObject({ id: 'schedule-1', fired: 0, definition: { in_ms: 1500 } });
      process.kill(first.pid, 'SIGKILL');
      await first.exited;
      // Down past the due time: the firing is missed for certain, and the policy (run once) applies.
      await vi.waitFor(() => expect(Date.now()).toBeGreaterThan(row!.nextAt! + 200), WAIT);

      const second = await start(home, cwd);
      await vi.waitFor(
        () => expect(store.getTask('schedule-1', row!.sessionId)?.status).toBe('completed'),
        WAIT,
      );
      const seen: string[] = [];
      await vi.waitFor(async () => {
        seen.push(...textBlocks(await second.call('task_list')));
        expect(seen.join('\n')).toContain('<status>fired</status>');
      }, WAIT);
      // Asked again: nothing is told twice.
      seen.push(...textBlocks(await second.call('task_list')), ...textBlocks(await second.call('task_list')));
      const text = seen.join('\n');
      expect(text.match(/<status>fired<\/status>/g)).toHaveLength(1);
      expect(text.match(/missed-firing policy "run_once": ran once now/g)).toHaveLength(1);
      expect(text).toContain('<summary>Check the deploy.</summary>');
      expect(store.getTask('schedule-1', row!.sessionId)).toMatchObject({ detail: { fired: 1 } });
      expect(store.listSchedules()).toEqual([]);
    } finally {
      store.close();
    }
  });
});
