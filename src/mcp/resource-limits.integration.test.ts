/**
 * A command killed for a resource limit, end to end through the MCP server: `task_list` shows the limits
 * and their mechanism while it runs, and the model is told once, with the limit as the reason.
 */
import { existsSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import {
  type CallToolResult,
  CallToolResultSchema,
  LoggingMessageNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { cgroupSkipReason } from '../../test/support/cgroups.js';
import { capturingLogger } from '../../test/support/registry.js';
import { switchableStore } from '../../test/support/session.js';
import type { ErrandRuntime } from '../host/index.js';
import { createErrandMcpServer, type ErrandMcpServer } from './errand-mcp-server.js';
import { createMcpRuntime } from './mcp-runtime.js';

const skip = cgroupSkipReason();

let runtime: ErrandRuntime | undefined;
let server: ErrandMcpServer | undefined;

afterEach(async () => {
  await server?.close();
  await runtime?.dispose();
  server = undefined;
  runtime = undefined;
});

async function connect(mcp: ErrandMcpServer) {
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: 'in-process', version: '1' });
  const logged: string[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    logged.push((notification.params.data as { taskId: string }).taskId);
  });
  await Promise.all([mcp.connect(serverTransport), client.connect(clientTransport)]);
  const call = async (name: string, args: Record<string, unknown> = {}) => {
    const result = (await client.callTool({ name, arguments: args }, CallToolResultSchema)) as CallToolResult;
    return result.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('\n');
  };
  return { call, logged };
}

const occurrences = (text: string, part: string) => text.split(part).length - 1;

describe.skipIf(skip !== undefined)('resource limits through the MCP server', () => {
  it('tells the model once that a memory hog was killed with memory_limit', async () => {
    runtime = await createMcpRuntime({
      store: switchableStore().store,
      pty: false,
      logger: capturingLogger(),
      resourceLimits: { task: { memoryBytes: 64 * 1024 * 1024 } },
    });
    server = createErrandMcpServer({ runtime, logger: capturingLogger() });
    const { call, logged } = await connect(server);
    const started = await call('bash', {
      command: `sleep 0.5; python3 -c 'a = []\nwhile True: a.append(bytearray(1 << 20))'`,
      run_in_background: true,
    });
    expect(started).toContain('bash-1');
    const listed = await call('task_list');
    expect(listed).toMatch(/bash-1 \[bash\] running — .*\(limits: cgroup-v[12]: memory 64 MiB\)/);
    await expect.poll(() => logged.length, { timeout: 20_000 }).toBe(1);
    let told = '';
    for (let round = 0; round < 3; round += 1) told += await call('task_list');
    expect(occurrences(told, '<task-notification>')).toBe(1);
    expect(told).toContain('<status>killed</status>');
    expect(told).toContain('was stopped (memory_limit)');
    expect(told).toContain('exceeding its memory limit of 64 MiB');
    expect(await call('task_output', { task_id: 'bash-1' })).toContain('[status: killed');
    // The runtime's groups go with it: nothing is left under the cgroup hierarchies.
    const directories = runtime.bash.executor.resourceLimiter?.directories ?? [];
    expect(directories.length).toBeGreaterThan(0);
    await server.close();
    await runtime.dispose();
    server = undefined;
    runtime = undefined;
    for (const dir of directories) expect(existsSync(dir)).toBe(false);
  });
});
