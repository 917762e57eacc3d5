/**
 * `createErrandMcpServer` in process, over the SDK's in-memory transport, with real bash commands:
 * the per-result notification limit, the queue-only session (no model turn), and option validation.
 */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import {
  type CallToolResult,
  CallToolResultSchema,
  CreateTaskResultSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { capturingLogger } from '../../test/support/registry.js';
import { createErrandRuntime, type ErrandRuntime } from '../host/index.js';
import { createMemorySessionStore } from '../store/index.js';
import { scriptedModel } from '../testing/index.js';
import { createErrandMcpServer, type ErrandMcpServer } from './errand-mcp-server.js';
import { createMcpRuntime } from './mcp-runtime.js';

let runtime: ErrandRuntime | undefined;
let server: ErrandMcpServer | undefined;
const directories: string[] = [];

afterEach(async () => {
  const [closing, disposing] = [server, runtime];
  server = undefined;
  runtime = undefined;
  await closing?.close();
  await disposing?.dispose();
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

async function connect(options: { maxNotificationsPerResult?: number } = {}) {
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'errand-mcp-inproc-')));
  directories.push(cwd);
  const logger = capturingLogger();
  runtime = await createMcpRuntime({ store: createMemorySessionStore(), pty: false, logger });
  server = createErrandMcpServer({ runtime, launchDirectory: cwd, logger, ...options });
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: 'in-process', version: '1' });
  const logged: string[] = [];
  const logWaiters: Array<() => void> = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    logged.push((notification.params.data as { taskId: string }).taskId);
    for (const wake of logWaiters.splice(0)) wake();
  });
  await Promise.all([server.connect(serverTransport), client.connect(clientTransport)]);
  const call = async (name: string, args: Record<string, unknown> = {}) => {
    const result = (await client.callTool({ name, arguments: args }, CallToolResultSchema)) as CallToolResult;
    return result.content.flatMap((block) => (block.type === 'text' ? [block.text] : []));
  };
  const waitForLogs = async (count: number) => {
    while (logged.length < count) await new Promise<void>((resolve) => logWaiters.push(resolve));
  };
  return { client, call, waitForLogs, logger, cwd };
}

describe('createErrandMcpServer', () => {
  it('appends at most maxNotificationsPerResult notifications and says how many wait', async () => {
    const { call, waitForLogs } = await connect({ maxNotificationsPerResult: 2 });
    for (let index = 0; index < 3; index += 1) {
      await call('bash', { command: `exec sleep ${600 + index}`, run_in_background: true });
    }
    // A person stops all three at once: three notifications queue before the next tool call.
    await runtime!.stop.stopAll({ initiator: 'user', caller: server!.session.owner });
    await waitForLogs(3);
    const first = await call('task_list');
    expect(first).toHaveLength(2);
    expect(first[1]?.match(/<task-notification>/g)).toHaveLength(2);
    expect(first[1]).toMatch(/\(1 more task notification will follow the next tool result\)$/);
    const second = await call('task_list');
    expect(second[1]?.match(/<task-notification>/g)).toHaveLength(1);
    const ids = [...`${first[1]}${second[1]}`.matchAll(/<task-id>(bash-\d+)<\/task-id>/g)].map(
      (match) => match[1],
    );
    expect(ids.sort()).toEqual(['bash-1', 'bash-2', 'bash-3']);
    expect(await call('task_list')).toHaveLength(1);
  });

  it('rejects an unknown argument key of task_output, task_list and task_kill, naming it, as it does for bash', async () => {
    const { client, call } = await connect();
    const [started] = await call('bash', { command: 'exec sleep 600', run_in_background: true });
    const id = /bash-\d+/.exec(started ?? '')![0];
    for (const [name, args] of [
      ['bash', { command: 'true', bogus: 1 }],
      ['task_output', { task_id: id, bogus: 1 }],
      ['task_list', { bogus: 1 }],
      ['task_kill', { task_id: id, bogus: 1 }],
    ] as const) {
      const result = (await client.callTool(
        { name, arguments: args },
        CallToolResultSchema,
      )) as CallToolResult;
      const text = result.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('\n');
      expect(result.isError, name).toBe(true);
      expect(text, name).toContain('bogus');
    }
    // The refused task_kill stopped nothing.
    expect(runtime!.tasks.get(id, server!.session.owner).status).toBe('running');
  });

  it('does not append the notification of a task whose end the client already read with task_output', async () => {
    const { call, waitForLogs } = await connect();
    const [started] = await call('bash', { command: 'exec sleep 600', run_in_background: true });
    const id = /bash-\d+/.exec(started ?? '')![0];
    await runtime!.stop.stopAll({ initiator: 'user', caller: server!.session.owner });
    await waitForLogs(1);
    expect(server!.session.queuedCommands).toBe(1);
    const read = await call('task_output', { task_id: id });
    // The answer shows the end itself; the notification queued for it is discarded, not appended.
    expect(read).toHaveLength(1);
    expect(read[0]).toContain('[status: killed');
    expect(server!.session.queuedCommands).toBe(0);
    expect(await call('task_list')).toHaveLength(1);
  });

  it('keeps the session queue-only: a notification never starts a model turn', async () => {
    const { call, waitForLogs, logger } = await connect();
    const turns: string[] = [];
    server!.session.on((event) => {
      if (event.type === 'turn-start') turns.push(event.title);
    });
    await call('bash', { command: 'exec sleep 600', run_in_background: true });
    await runtime!.stop.stopAll({ initiator: 'user', caller: server!.session.owner });
    await waitForLogs(1);
    await server!.session.whenIdle();
    expect(turns).toEqual([]);
    expect(server!.session.queuedCommands).toBe(1);
    expect(logger.warnings).toEqual([]);
  });

  it('warns when its runtime is not queue-only and a notification starts a model turn', async () => {
    const logger = capturingLogger();
    runtime = await createErrandRuntime({
      model: scriptedModel([{ text: 'a turn nobody asked for' }]),
      store: createMemorySessionStore(),
      pty: false,
      logger,
    });
    server = createErrandMcpServer({ runtime, logger });
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    const client = new Client({ name: 'in-process', version: '1' });
    await Promise.all([server.connect(serverTransport), client.connect(clientTransport)]);
    const turnEnded = new Promise<void>((resolve) => {
      server!.session.on((event) => {
        if (event.type === 'turn-end') resolve();
      });
    });
    await client.callTool({
      name: 'bash',
      arguments: { command: 'exec sleep 600', run_in_background: true },
    });
    await runtime.stop.stopAll({ initiator: 'user', caller: server.session.owner });
    await turnEnded;
    expect(logger.warnings.map((warning) => warning.message)).toContain(
      'the MCP session started a model turn; create its runtime with createMcpRuntime',
    );
  });

  it('offers no subagent tools by default: no model in the loop could run them', async () => {
    const { client } = await connect();
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      'bash',
      'schedule',
      'task_digest',
      'task_kill',
      'task_list',
      'task_monitor',
      'task_output',
    ]);
    expect(runtime!.subagents).toBeUndefined();
  });

  it("delivers a schedule's firing to the client like any other notification, once per firing", async () => {
    const { call } = await connect();
    const [scheduled] = await call('schedule', { prompt: 'Check the deploy.', in_ms: 0 });
    expect(scheduled).toMatch(/^Scheduled schedule-1: once at /);
    await vi.waitFor(() =>
      expect(runtime!.tasks.get('schedule-1', server!.session.owner).detail).toMatchObject({
        fired: 1,
        lastOutcome: 'delivered to the client as a notification',
      }),
    );
    const text = (await call('task_list')).join('\n');
    expect(text).toContain('<task-id>schedule-1</task-id>');
    expect(text.match(/<status>fired<\/status>/g)).toHaveLength(1);
    expect(text).toContain('<summary>Check the deploy.</summary>');
    const later = (await call('task_list')).join('\n');
    expect(later).not.toContain('<status>fired</status>');
  });

  it('offers subagent tools when the runtime is given a model for them', async () => {
    const logger = capturingLogger();
    runtime = await createMcpRuntime({
      store: createMemorySessionStore(),
      pty: false,
      logger,
      subagents: { model: scriptedModel([{ text: 'the subagent answers' }]) },
    });
    server = createErrandMcpServer({ runtime, logger });
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    const client = new Client({ name: 'in-process', version: '1' });
    await Promise.all([server.connect(serverTransport), client.connect(clientTransport)]);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['agent', 'agent_message']));
    const result = (await client.callTool(
      { name: 'agent', arguments: { prompt: 'answer', description: 'a question' } },
      CallToolResultSchema,
    )) as CallToolResult;
    expect(result.isError).toBe(false);
    expect(result.content[0]).toMatchObject({
      type: 'text',
      text: expect.stringContaining('the subagent answers'),
    });
  });

  it('runs commands in the launch directory when the client offers no roots', async () => {
    const { call, cwd } = await connect();
    expect(await call('bash', { command: 'pwd' })).toEqual([`${cwd}\n[exit code: 0]`]);
    expect(server!.workingDirectory.source).toBe('launch');
  });

  it('runs a task-augmented bash call in the client root too, once the roots are known', async () => {
    const launch = realpathSync(mkdtempSync(join(tmpdir(), 'errand-mcp-launch-')));
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'errand-mcp-root-')));
    directories.push(launch, root);
    const logger = capturingLogger();
    runtime = await createMcpRuntime({ store: createMemorySessionStore(), pty: false, logger });
    server = createErrandMcpServer({ runtime, launchDirectory: launch, logger });
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    const client = new Client({ name: 'in-process', version: '1' }, { capabilities: { roots: {} } });
    // The client answers roots/list a little after the first tool call went out.
    client.setRequestHandler(ListRootsRequestSchema, async () => {
      await new Promise((resolve) => setTimeout(resolve, 100));
      return { roots: [{ uri: pathToFileURL(root).href }] };
    });
    await Promise.all([server.connect(serverTransport), client.connect(clientTransport)]);
    const created = await client.request(
      {
        method: 'tools/call',
        params: { name: 'bash', arguments: { command: 'pwd' }, task: { ttl: 60_000 } },
      },
      CreateTaskResultSchema,
    );
    const result = (await client.experimental.tasks.getTaskResult(
      created.task.taskId,
      CallToolResultSchema,
    )) as CallToolResult;
    const [text] = result.content.flatMap((block) => (block.type === 'text' ? [block.text] : []));
    expect(text?.startsWith(`${root}\n[exit code: 0]`)).toBe(true);
  });

  it("returns up to tasks.maxResultBytes of a task-augmented command's output, the newest kept", async () => {
    const { client } = await connect();
    // 20000 bytes of output, one line: all of it fits the default budget of 30000 bytes.
    const command = "head -c 19999 /dev/zero | tr '\\0' a; echo; echo the-end >&2";
    const created = await client.request(
      { method: 'tools/call', params: { name: 'bash', arguments: { command }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    const result = (await client.experimental.tasks.getTaskResult(
      created.task.taskId,
      CallToolResultSchema,
    )) as CallToolResult;
    const [text = ''] = result.content.flatMap((block) => (block.type === 'text' ? [block.text] : []));
    expect(text).toContain(`${'a'.repeat(19_999)}\nthe-end\n[exit code: 0]`);
    expect(text).not.toContain('bytes skipped');

    // 40000 bytes: the newest 30000 are kept, after a marker for the 10000 before them.
    const longer = await client.request(
      {
        method: 'tools/call',
        params: {
          name: 'bash',
          arguments: { command: "head -c 39991 /dev/zero | tr '\\0' b; echo; echo the-end" },
          task: { ttl: 60_000 },
        },
      },
      CreateTaskResultSchema,
    );
    const cut = (await client.experimental.tasks.getTaskResult(
      longer.task.taskId,
      CallToolResultSchema,
    )) as CallToolResult;
    const [cutText = ''] = cut.content.flatMap((block) => (block.type === 'text' ? [block.text] : []));
    expect(cutText).toMatch(/^\[\.\.\. 10000 bytes skipped; full output: [^\n]+ \.\.\.\]\n/);
    expect(cutText).toContain(`\n${'b'.repeat(29_991)}\nthe-end\n[exit code: 0]`);
  });

  it('validates its options, naming the field', async () => {
    runtime = await createMcpRuntime({
      store: createMemorySessionStore(),
      pty: false,
      logger: capturingLogger(),
    });
    expect(() => createErrandMcpServer({ runtime: runtime!, maxNotificationsPerResult: 0 })).toThrow(
      'Expected `maxNotificationsPerResult` to be a positive integer, got 0 (number)',
    );
    expect(() => createErrandMcpServer({ runtime: runtime!, tasks: { pollIntervalMs: -5 } })).toThrow(
      'Expected `tasks.pollIntervalMs` to be a positive integer no greater than 2147483647, got -5 (number)',
    );
    expect(() => createErrandMcpServer({ runtime: {} as ErrandRuntime })).toThrow(
      'Expected `runtime` to be an ErrandRuntime, got an object',
    );
  });
});
