/**
 * In-band delivery against a real SDK client over the in-memory transport: a notification counts as
 * delivered only once the tool result carrying it was handed to the transport, and the ledger records
 * each one once, whatever happens to the connection or the store in between.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import {
  type CallToolResult,
  CallToolResultSchema,
  LoggingMessageNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { capturingLogger } from '../../test/support/registry.js';
import { settleEventLoop, switchableStore } from '../../test/support/session.js';
import { deferred } from '../../test/support/waiting.js';
import type { ErrandRuntime } from '../host/index.js';
import { defineTool } from '../tools/index.js';
import { createErrandMcpServer, type ErrandMcpServer } from './errand-mcp-server.js';
import { MCP_TOOL_RESULT_SOURCE } from './in-band-notifications.js';
import { createMcpRuntime } from './mcp-runtime.js';

let runtime: ErrandRuntime | undefined;
let server: ErrandMcpServer | undefined;

afterEach(async () => {
  const [closing, disposing] = [server, runtime];
  server = undefined;
  runtime = undefined;
  await closing?.close();
  await disposing?.dispose();
});

type Send = InMemoryTransport['send'];

/** A server transport whose send can be made to fail, or to close the connection before it sends. */
function linkedPair() {
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  const send: Send = serverTransport.send.bind(serverTransport);
  const control = {
    /** Called for a tools/call response before it is sent. */
    beforeResponse: undefined as ((message: JSONRPCMessage) => Promise<void>) | undefined,
  };
  serverTransport.send = async (message, options) => {
    if ('id' in message && 'result' in message && control.beforeResponse) {
      const hook = control.beforeResponse;
      control.beforeResponse = undefined;
      await hook(message);
    }
    return send(message, options);
  };
  return { clientTransport, serverTransport, control };
}

async function connectClient(mcp: ErrandMcpServer) {
  const pair = linkedPair();
  const client = new Client({ name: 'in-process', version: '1' });
  const logged: string[] = [];
  const logWaiters: Array<() => void> = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    logged.push((notification.params.data as { taskId: string }).taskId);
    for (const wake of logWaiters.splice(0)) wake();
  });
  await Promise.all([mcp.connect(pair.serverTransport), client.connect(pair.clientTransport)]);
  const call = async (name: string, args: Record<string, unknown> = {}) => {
    const result = (await client.callTool({ name, arguments: args }, CallToolResultSchema)) as CallToolResult;
    return result.content.flatMap((block) => (block.type === 'text' ? [block.text] : []));
  };
  const waitForLogs = async (count: number) => {
    while (logged.length < count) await new Promise<void>((resolve) => logWaiters.push(resolve));
  };
  return { client, call, waitForLogs, ...pair };
}

async function start(store = switchableStore()) {
  const logger = capturingLogger();
  runtime = await createMcpRuntime({ store: store.store, pty: false, logger });
  server = createErrandMcpServer({ runtime, logger });
  return { runtime, server, logger, failing: store.failing };
}

/** Starts a background command and stops it as a person would: one notification queues. */
async function queueOneNotification(
  mcp: ErrandMcpServer,
  errand: ErrandRuntime,
  connection: Awaited<ReturnType<typeof connectClient>>,
) {
  await connection.call('bash', { command: 'exec sleep 600', run_in_background: true });
  await errand.stop.stopAll({ initiator: 'user', caller: mcp.session.owner });
  await connection.waitForLogs(1);
  expect(mcp.session.queuedCommands).toBe(1);
}

function ledgerStates(errand: ErrandRuntime, mcp: ErrandMcpServer): string[] {
  return errand.store
    .listLedger(mcp.session.id)
    .filter((entry) => entry.kind === 'notification')
    .map((entry) => entry.state);
}

function recordedDeliveries(mcp: ErrandMcpServer) {
  return mcp.session.messages().filter((message) => message.source === MCP_TOOL_RESULT_SOURCE);
}

describe('in-band notifications on a dying connection', () => {
  it('a result that never reaches the transport leaves its notifications queued for the next result', async () => {
    const { runtime: errand, server: mcp } = await start();
    const first = await connectClient(mcp);
    await queueOneNotification(mcp, errand, first);

    // The connection dies between the tool's answer and its send: the result never leaves the server.
    let carried = '';
    first.control.beforeResponse = async (message) => {
      carried = JSON.stringify(message);
      await first.serverTransport.close();
    };
    await expect(first.call('task_list')).rejects.toThrow(/Connection closed/);
    expect(carried).toContain('<task-notification>');
    expect(ledgerStates(errand, mcp)).toEqual(['queued']);
    expect(recordedDeliveries(mcp)).toEqual([]);
    expect(mcp.session.queuedCommands).toBe(1);

    // The client reconnects: its next tool result carries the notification, recorded once.
    const second = await connectClient(mcp);
    const texts = await second.call('task_list');
    expect(texts[1]).toContain('<task-id>bash-1</task-id>');
    // The commit follows the send; the client may read the answer first.
    await expect.poll(() => ledgerStates(errand, mcp)).toEqual(['delivered']);
    expect(recordedDeliveries(mcp)).toHaveLength(1);
    expect(await second.call('task_list')).toHaveLength(1);
  });

  it('a send the transport refuses leaves them queued for the next result on the same connection', async () => {
    const { runtime: errand, server: mcp, logger } = await start();
    const connection = await connectClient(mcp);
    await queueOneNotification(mcp, errand, connection);
    connection.control.beforeResponse = async () => {
      throw new Error('write EPIPE');
    };
    // The client never gets an answer to this call; it is not awaited.
    void connection.call('task_list').catch(() => {});
    await expect.poll(() => logger.warnings.length).toBe(1);
    expect(mcp.session.queuedCommands).toBe(1);
    expect(ledgerStates(errand, mcp)).toEqual(['queued']);
    expect(logger.warnings).toEqual([
      expect.objectContaining({
        message: expect.stringContaining('was not sent'),
        context: expect.objectContaining({ error: 'write EPIPE', taskIds: ['bash-1'] }),
      }),
    ]);
    const texts = await connection.call('task_list');
    expect(texts[1]).toContain('<task-id>bash-1</task-id>');
    await expect.poll(() => ledgerStates(errand, mcp)).toEqual(['delivered']);
    expect(recordedDeliveries(mcp)).toHaveLength(1);
  });

  it('a store that fails to record a delivery that was sent records it at the next result, without sending it again', async () => {
    const { runtime: errand, server: mcp, failing, logger } = await start();
    const connection = await connectClient(mcp);
    await queueOneNotification(mcp, errand, connection);
    failing.add('commitDelivery');
    const texts = await connection.call('task_list');
    expect(texts[1]).toContain('<task-id>bash-1</task-id>');
    await expect.poll(() => logger.warnings.length).toBe(1);
    expect(ledgerStates(errand, mcp)).toEqual(['queued']);
    expect(mcp.session.queuedCommands).toBe(0);
    expect(logger.warnings.map((warning) => String(warning.context?.error))).toEqual([
      expect.stringContaining('store unavailable (commitDelivery)'),
    ]);
    failing.delete('commitDelivery');
    expect(await connection.call('task_list')).toHaveLength(1);
    expect(ledgerStates(errand, mcp)).toEqual(['delivered']);
    expect(recordedDeliveries(mcp)).toHaveLength(1);
  });

  it('an ordinary bash call (answered through the SDK’s task polling) commits what its result carried', async () => {
    const { runtime: errand, server: mcp } = await start();
    const connection = await connectClient(mcp);
    await queueOneNotification(mcp, errand, connection);
    const texts = await connection.call('bash', { command: 'echo hi' });
    expect(texts[0]).toContain('hi\n[exit code: 0]');
    expect(texts[1]).toContain('<task-id>bash-1</task-id>');
    await expect.poll(() => ledgerStates(errand, mcp)).toEqual(['delivered']);
    expect(recordedDeliveries(mcp)).toHaveLength(1);
  });
});

describe('an end read in a result that is never sent', () => {
  it('a cancelled call whose result shows how a task ended does not discard that task’s notification', async () => {
    const logger = capturingLogger();
    const entered = deferred();
    // Like task_output whose wait was interrupted: it answers with the task's terminal status anyway.
    const lateRead = defineTool({
      name: 'late_read',
      description: 'Reports how a task ended once the call is cancelled.',
      inputSchema: z.object({ task_id: z.string() }),
      execute: async (input, context) => {
        entered.resolve();
        await new Promise<void>((resolve) => context.signal.addEventListener('abort', () => resolve()));
        return {
          text: '[status: killed]',
          isError: false,
          value: { taskId: input.task_id, status: 'killed', attempt: 1 },
        };
      },
    });
    runtime = await createMcpRuntime({
      store: switchableStore().store,
      pty: false,
      logger,
      tools: () => [lateRead],
    });
    server = createErrandMcpServer({ runtime, logger });
    const connection = await connectClient(server);
    await queueOneNotification(server, runtime, connection);

    const abort = new AbortController();
    const cancelled = connection.client.callTool(
      { name: 'late_read', arguments: { task_id: 'bash-1' } },
      CallToolResultSchema,
      { signal: abort.signal },
    );
    await entered.promise;
    abort.abort();
    await expect(cancelled).rejects.toThrow();
    await settleEventLoop();
    // The client never got that answer: the notification is still the model's to read.
    expect(server.session.queuedCommands).toBe(1);
    const texts = await connection.call('task_list');
    expect(texts[1]).toContain('<task-id>bash-1</task-id>');
  });
});
