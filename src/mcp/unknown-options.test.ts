import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createErrandMcpServer } from './errand-mcp-server.js';
import { createErrandTaskStore } from './errand-task-store.js';
import { createMcpRuntime } from './mcp-runtime.js';
import { forwardNotificationsAsLogs } from './notification-log.js';
import { startStdioMcpServer } from './stdio-server.js';
import { WorkingDirectory } from './working-directory.js';

const home = mkdtempSync(join(tmpdir(), 'errand-mcp-options-'));

afterAll(() => {
  rmSync(home, { recursive: true, force: true });
});

/** Passes the server's runtime check; nothing past the option checks is reached. */
const runtime = { createSession: () => undefined, tasks: { get: () => undefined } };

describe('unknown option keys of the MCP server', () => {
  it.each([
    [
      'createErrandTaskStore',
      () => createErrandTaskStore({} as never, { maxTask: 5 } as never),
      'Unknown option `maxTask` for createErrandTaskStore (did you mean `maxTasks`?)',
    ],
    [
      'createErrandMcpServer',
      () => createErrandMcpServer({ runtime, sesionTitle: 'x' } as never),
      'Unknown option `sesionTitle` for createErrandMcpServer (did you mean `sessionTitle`?)',
    ],
    [
      'createErrandMcpServer tasks',
      () => createErrandMcpServer({ runtime, tasks: { ttlMs: 5 } } as never),
      'Unknown option `tasks.ttlMs` for createErrandMcpServer',
    ],
    [
      'WorkingDirectory',
      () =>
        new WorkingDirectory({
          fallback: home,
          timeoutMs: 1,
          logger: { warn: () => {} },
          timeout: 1,
        } as never),
      'Unknown option `timeout` for WorkingDirectory (did you mean `timeoutMs`?)',
    ],
    [
      'forwardNotificationsAsLogs',
      () =>
        forwardNotificationsAsLogs({ session: {}, store: {}, send: () => {}, onErorr: () => {} } as never),
      'Unknown option `onErorr` for forwardNotificationsAsLogs (did you mean `onError`?)',
    ],
  ])('%s rejects an unknown key', (_name, create, message) => {
    expect(create).toThrow(expect.objectContaining({ code: 'UNKNOWN_OPTION', fault: 'caller' }));
    expect(create).toThrow(message);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['hmoe', { hmoe: home }, 'Unknown option `hmoe` for createMcpRuntime (did you mean `home`?)'],
    // The client is the model: the runtime's `model` is not an option here.
    ['model', { model: {} }, 'Unknown option `model` for createMcpRuntime; known options:'],
    // Subagents without a model of their own are left out, but their options are still checked.
    ['subagents.maxDepht', { subagents: { maxDepht: 2 } }, 'did you mean `subagents.maxDepth`?'],
    ['pty.maxRuntimeMs', { pty: { maxRuntimeMs: 5 } }, 'did you mean `pty.runtimeCapMs`?'],
    ['maxTask', { maxTask: 5 }, 'did you mean `maxTasks`?'],
  ])('createMcpRuntime rejects %s before opening the store', async (_key, options, message) => {
    const creating = createMcpRuntime({ home, ...options } as never);
    await expect(creating).rejects.toMatchObject({ code: 'UNKNOWN_OPTION' });
    await expect(creating).rejects.toThrow(message);
    expect(readdirSync(home)).toEqual([]);
  });

  it.each<[string, Record<string, unknown>, string]>([
    [
      'stdn',
      { stdn: process.stdin },
      'Unknown option `stdn` for startStdioMcpServer (did you mean `stdin`?)',
    ],
    ['runtime.hmoe', { runtime: { hmoe: home } }, 'Unknown option `runtime.hmoe` for startStdioMcpServer'],
    ['runtime.model', { runtime: { model: {} } }, 'Unknown option `runtime.model` for startStdioMcpServer'],
    ['dashboard.prot', { dashboard: { prot: 0 } }, 'did you mean `dashboard.port`?'],
    ['tasks.maxTask', { tasks: { maxTask: 0 } }, 'did you mean `tasks.maxTasks`?'],
    ['hooks.leaseMS', { hooks: { leaseMS: 5 } }, 'did you mean `hooks.leaseMs`?'],
  ])('startStdioMcpServer rejects %s before creating the runtime', async (_key, options, message) => {
    const starting = startStdioMcpServer({ runtime: { home }, ...options } as never);
    await expect(starting).rejects.toMatchObject({ code: 'UNKNOWN_OPTION' });
    await expect(starting).rejects.toThrow(message);
    expect(readdirSync(home)).toEqual([]);
  });

  it('createMcpRuntime checks maxTasks before opening the store', async () => {
    await expect(createMcpRuntime({ home, maxTasks: 0 })).rejects.toThrow(
      'Expected `maxTasks` to be a positive integer, got 0 (number)',
    );
    await expect(createMcpRuntime({ home, maxTasks: 5, tasks: { maxLiveTasksPerOwner: 5 } })).rejects.toThrow(
      /maxTasks/,
    );
    expect(readdirSync(home)).toEqual([]);
  });

  it('startStdioMcpServer checks the hook endpoint options before creating the runtime', async () => {
    await expect(startStdioMcpServer({ runtime: { home }, hooks: { leaseMs: 0 } })).rejects.toThrow(
      /`hooks.leaseMs` to be a positive integer no greater than 3600000/,
    );
    expect(readdirSync(home)).toEqual([]);
  });
});
