import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { flushMicrotasks, serviceForTest } from '../../test/support/registry.js';
import { createOwner } from '../tasks/index.js';
import { scriptedTask } from '../testing/index.js';
import { createTaskTools } from '../tools/index.js';
import { registerMcpTools } from './index.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function connected() {
  const { tasks } = serviceForTest();
  const tools = createTaskTools({ tasks });
  const owner = createOwner('mcp-session');
  const server = new McpServer({ name: 'errand-test', version: '0.0.0' });
  const registered = registerMcpTools(server, tools.tools, { caller: () => owner });
  const client = new Client({ name: 'test-client', version: '0.0.0' });
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await Promise.all([server.connect(serverTransport), client.connect(clientTransport)]);
  cleanups.push(async () => {
    await client.close();
    await server.close();
  });
  return { tasks, owner, client, registered };
}

describe('MCP registration', () => {
  it('lists every definition with its schema', async () => {
    const { client, registered } = await connected();
    expect(registered).toHaveLength(4);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['task_output', 'task_list', 'task_kill', 'task_digest']);
    const output = tools.find((tool) => tool.name === 'task_output');
    expect(output?.inputSchema).toMatchObject({
      type: 'object',
      properties: { task_id: { type: 'string' }, wait: { type: 'boolean' }, timeout_ms: { type: 'number' } },
      required: ['task_id'],
    });
  });

  it('calls a tool as the mapped session and answers with text content and isError', async () => {
    const { client, tasks, owner } = await connected();
    const task = scriptedTask({ owner, label: 'npm test' });
    const { id } = await tasks.start(task.spec);
    task.push('ok\n');
    task.settle({ status: 'completed', detail: { exitCode: 0 } });
    await flushMicrotasks();
    expect(await client.callTool({ name: 'task_list', arguments: {} })).toEqual({
      content: [{ type: 'text', text: `${id} [scripted] completed — npm test` }],
      isError: false,
    });
    expect(await client.callTool({ name: 'task_output', arguments: { task_id: id } })).toEqual({
      content: [{ type: 'text', text: 'ok\n[status: completed (exit code 0)]' }],
      isError: false,
    });
    expect(await client.callTool({ name: 'task_kill', arguments: { task_id: 'bash-404' } })).toEqual({
      content: [
        {
          type: 'text',
          text: 'Error [TASK_NOT_FOUND]: No task with id "bash-404". Check the id; task_list shows the tasks you can use.',
        },
      ],
      isError: true,
    });
  });

  it('reports arguments the schema rejects as an error result', async () => {
    const { client } = await connected();
    const result = await client.callTool({ name: 'task_output', arguments: { task_id: 7 } });
    expect(result.isError).toBe(true);
  });
});
