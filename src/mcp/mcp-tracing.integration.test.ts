/**
 * Tracing through the MCP server, with a real SDK client over the in-memory transport and the
 * OpenTelemetry SDK's in-memory exporter: each request is a `tools/call <name>` span with the tool's
 * `execute_tool` inside it; the background task started by one request is a child of that call; the
 * notification carried by a later request's answer is delivered in that request's span, linked to the task.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { type CallToolResult, CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { capturingLogger } from '../../test/support/registry.js';
import { parentSpanId, startTestTracing, type TestTracing } from '../../test/support/tracing.js';
import type { ErrandRuntime } from '../host/index.js';
import { createMemorySessionStore } from '../store/index.js';
import { createErrandMcpServer, type ErrandMcpServer } from './errand-mcp-server.js';
import { MCP_TOOL_RESULT_SOURCE } from './in-band-notifications.js';
import { createMcpRuntime } from './mcp-runtime.js';

let runtime: ErrandRuntime | undefined;
let server: ErrandMcpServer | undefined;
let telemetry: TestTracing | undefined;

afterEach(async () => {
  await server?.close();
  await runtime?.dispose();
  await telemetry?.close();
  server = undefined;
  runtime = undefined;
  telemetry = undefined;
});

describe('tracing through the MCP server', () => {
  it('delivers a notification in the span of the request whose answer carries it, linked to the task', async () => {
    telemetry = startTestTracing();
    runtime = await createMcpRuntime({
      store: createMemorySessionStore(),
      pty: false,
      tracing: telemetry.tracing,
      logger: capturingLogger(),
    });
    server = createErrandMcpServer({ runtime, logger: capturingLogger() });
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    const client = new Client({ name: 'in-process', version: '1' });
    await Promise.all([server.connect(serverTransport), client.connect(clientTransport)]);
    const call = async (name: string, args: Record<string, unknown> = {}) =>
      (await client.callTool({ name, arguments: args }, CallToolResultSchema)) as CallToolResult;

    await call('bash', { command: 'exec sleep 600', run_in_background: true });
    const mcp = server;
    await runtime.stop.stopAll({ initiator: 'user', caller: mcp.session.owner });
    await expect.poll(() => mcp.session.queuedCommands).toBe(1);
    const listed = await call('task_list');
    expect(JSON.stringify(listed.content)).toContain('<task-id>bash-1</task-id>');
    const errand = runtime;
    await expect
      .poll(
        () => errand.store.listLedger(mcp.session.id).filter((entry) => entry.state === 'delivered').length,
      )
      .toBe(1);

    const bashCall = telemetry.only('tools/call bash');
    expect(bashCall.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'bash',
    });
    const bashTool = telemetry.only('execute_tool bash');
    expect(parentSpanId(bashTool)).toBe(bashCall.spanContext().spanId);
    const task = telemetry.only('task bash');
    expect(parentSpanId(task)).toBe(bashTool.spanContext().spanId);
    expect(task.attributes).toMatchObject({
      'errand.task.status': 'killed',
      'errand.task.stop_initiator': 'user',
    });

    const listCall = telemetry.only('tools/call task_list');
    const delivery = telemetry.only('deliver_notifications');
    expect(parentSpanId(delivery)).toBe(listCall.spanContext().spanId);
    expect(delivery.spanContext().traceId).toBe(listCall.spanContext().traceId);
    expect(delivery.attributes).toMatchObject({
      'errand.notification.source': MCP_TOOL_RESULT_SOURCE,
      'errand.notification.delivered': 1,
    });
    expect(delivery.links.map((link) => link.context.spanId)).toEqual([task.spanContext().spanId]);
    await client.close();
  });
});
