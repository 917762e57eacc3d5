/**
 * The data directory fills up while background commands run (a real SQLite file on a 2 MiB tmpfs, real
 * processes, the MCP server in process): the endings are kept, the model is told once that the store is
 * failing, new background work is refused, nothing already written is damaged, and once space is back
 * every ending is recorded and told, once.
 */
import { closeSync, mkdtempSync, openSync, realpathSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { type CallToolResult, CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { capturingLogger } from '../../test/support/registry.js';
import { mountTmpfs, type Tmpfs, tmpfsSkipReason } from '../../test/support/tmpfs.js';
import type { ErrandRuntime } from '../host/index.js';
import { openSqliteSessionStore, type SqliteSessionStore } from '../store/index.js';
import { isTerminalStatus } from '../tasks/index.js';
import { createErrandMcpServer, type ErrandMcpServer } from './errand-mcp-server.js';
import { createMcpRuntime } from './mcp-runtime.js';

const skip = tmpfsSkipReason();
let mounted: Tmpfs | undefined;
let runtime: ErrandRuntime | undefined;
let server: ErrandMcpServer | undefined;
let store: SqliteSessionStore | undefined;
const directories: string[] = [];

afterEach(async () => {
  await server?.close();
  await runtime?.dispose();
  store?.close();
  mounted?.dispose();
  [server, runtime, store, mounted] = [undefined, undefined, undefined, undefined];
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

/** Writes a file until the file system has no byte left; returns its path. */
function fillUp(directory: string): string {
  const path = join(directory, 'filler');
  const descriptor = openSync(path, 'w');
  try {
    for (const size of [1 << 16, 1 << 12, 1 << 9, 1]) {
      const chunk = Buffer.alloc(size, 1);
      try {
        for (;;) writeSync(descriptor, chunk);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
      }
    }
  } finally {
    closeSync(descriptor);
  }
  return path;
}

describe.skipIf(skip !== undefined)(`a full data directory${skip ? ` (skipped: ${skip})` : ''}`, () => {
  it('keeps the endings, says so once, refuses new work, and tells every ending once space is back', async () => {
    mounted = mountTmpfs('2m');
    const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'errand-full-')));
    directories.push(cwd);
    store = openSqliteSessionStore({ home: join(mounted.path, 'home') });
    const logger = capturingLogger();
    runtime = await createMcpRuntime({
      store,
      pty: false,
      logger,
      commandPollMs: false,
      limits: { deliveryRetryMs: 20, deliveryRetryMaxMs: 100 },
    });
    server = createErrandMcpServer({ runtime, launchDirectory: cwd, logger });
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    const client = new Client({ name: 'full-disk', version: '1' });
    await Promise.all([server.connect(serverTransport), client.connect(clientTransport)]);
    const call = async (name: string, args: Record<string, unknown> = {}) => {
      const result = (await client.callTool(
        { name, arguments: args },
        CallToolResultSchema,
      )) as CallToolResult;
      const text = result.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('\n');
      return { text, isError: result.isError === true };
    };
    const session = server.session;
    const ids: string[] = [];
    for (let index = 0; index < 3; index += 1) {
      const started = await call('bash', { command: `exec sleep ${600 + index}`, run_in_background: true });
      ids.push(/bash-\d+/.exec(started.text)![0]);
    }
    const before = store.listTasks({ sessionId: session.id });
    expect(before.map((task) => task.status)).toEqual(['running', 'running', 'running']);

    const filler = fillUp(mounted.path);
    // A person stops all three: their endings happen while the store cannot be written.
    await runtime.stop.stopAll({ initiator: 'user', caller: session.owner });
    await vi.waitFor(() => {
      for (const id of ids) expect(isTerminalStatus(runtime!.tasks.get(id, session.owner).status)).toBe(true);
    });
    await vi.waitFor(() => expect(runtime!.sessions.persistence).toBeDefined());
    expect(runtime.sessions.persistence?.error).toMatchObject({ code: 'STORE_UNAVAILABLE' });

    const warned = await call('task_list');
    expect(warned.text).toContain(
      '[errand: the session store cannot be written (the disk is full, SQLITE_FULL)',
    );
    expect(warned.text).not.toContain('<task-notification>');
    // Said once.
    expect((await call('task_list')).text).not.toContain('[errand:');
    // New background work is refused while the endings of the old cannot be recorded.
    const refused = await call('bash', { command: 'true', run_in_background: true });
    expect(refused.isError).toBe(true);
    expect(refused.text).toContain('PERSISTENCE_FAILING');
    expect(runtime.tasks.list(session.owner)).toHaveLength(3);
    // Foreground work still runs: its result goes back in the call.
    expect((await call('bash', { command: 'echo still-here' })).text).toContain('still-here');
    // Nothing written before was touched: the store still says running.
    expect(store.listTasks({ sessionId: session.id }).map((task) => task.status)).toEqual([
      'running',
      'running',
      'running',
    ]);

    rmSync(filler);
    await vi.waitFor(() => expect(runtime!.sessions.persistence).toBeUndefined(), { timeout: 10_000 });
    const told = await call('task_list');
    expect(told.text).toContain('[errand: the session store can be written again');
    for (const id of ids) expect(told.text.split(`<task-id>${id}</task-id>`)).toHaveLength(2);
    const again = await call('task_list');
    expect(again.text).not.toContain('<task-notification>');
    expect(again.text).not.toContain('[errand:');

    await vi.waitFor(() => {
      const records = store!.listTasks({ sessionId: session.id });
      expect(records.map((task) => [task.isBackgrounded, task.status, task.reported])).toEqual([
        [true, 'killed', true],
        [true, 'killed', true],
        [true, 'killed', true],
        // The foreground command run while the disk was full is recorded too, its result (which went back
        // in its call) as reported.
        [false, 'completed', true],
      ]);
    });
    const entries = store.listLedger(session.id);
    expect(entries.map((entry) => entry.state)).toEqual(['delivered', 'delivered', 'delivered']);
    // The file is intact.
    const check = new Database(store.file, { readonly: true });
    try {
      expect(check.pragma('integrity_check', { simple: true })).toBe('ok');
    } finally {
      check.close();
    }
  });
});
