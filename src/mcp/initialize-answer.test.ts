/**
 * The `initialize` answer known without the runtime: the same as the SDK server's own for every
 * version asked, only for requests the SDK surely accepts, and the early answer's streams: the server
 * reads every byte, its own answer to that request is held back, everything else goes through.
 */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import {
  type JSONRPCMessage,
  LATEST_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { capturingLogger } from '../../test/support/registry.js';
import { createMemorySessionStore } from '../store/index.js';
import { createErrandMcpServer } from './errand-mcp-server.js';
import {
  answerInitializeEarly,
  initializeResult,
  plainInitializeRequest,
  SDK_INITIALIZE_VERSIONS,
} from './initialize-answer.js';
import { createMcpRuntime } from './mcp-runtime.js';
import { MCP_SERVER_DEFAULTS, packageVersion } from './mcp-server-options.js';

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

const initialize = (id: string | number, protocolVersion: string, extra: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: {
    protocolVersion,
    capabilities: { roots: { listChanged: true }, elicitation: {} },
    clientInfo: { name: 'client', version: '1.0' },
    ...extra,
  },
});

/** The SDK server's own answer to `request`, from a real Errand MCP server. */
async function serverAnswer(request: object, tasks: boolean): Promise<JSONRPCMessage> {
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'errand-mcp-init-')));
  directories.push(cwd);
  const runtime = await createMcpRuntime({ store: createMemorySessionStore(), pty: false });
  const server = createErrandMcpServer({
    runtime,
    launchDirectory: cwd,
    logger: capturingLogger(),
    ...(tasks ? {} : { tasks: false }),
  });
  const [client, serverSide] = InMemoryTransport.createLinkedPair();
  try {
    const answered = new Promise<JSONRPCMessage>((resolve) => {
      client.onmessage = resolve;
    });
    await server.connect(serverSide);
    await client.start();
    await client.send(request as JSONRPCMessage);
    return await answered;
  } finally {
    await server.close();
    await runtime.dispose();
  }
}

describe('the initialize answer known without the runtime', () => {
  it("negotiates the versions the SDK's server negotiates", () => {
    expect(SDK_INITIALIZE_VERSIONS).toEqual(SUPPORTED_PROTOCOL_VERSIONS);
    expect(SDK_INITIALIZE_VERSIONS[0]).toBe(LATEST_PROTOCOL_VERSION);
  });

  it.each([
    ['2025-06-18', true],
    ['2025-11-25', true],
    ['2024-11-05', false],
    ['1999-01-01', true],
  ])('is what the server itself answers to version %s (MCP Tasks %s)', async (version, tasks) => {
    const request = initialize(7, version);
    const facts = { name: MCP_SERVER_DEFAULTS.name, version: packageVersion(), tasks };
    expect(await serverAnswer(request, tasks)).toEqual({
      result: initializeResult(version, facts),
      jsonrpc: '2.0',
      id: 7,
    });
  });

  it('takes only requests the SDK surely accepts', () => {
    const line = (message: unknown) => JSON.stringify(message);
    expect(plainInitializeRequest(line(initialize('a', '2025-06-18')))).toEqual({
      id: 'a',
      version: '2025-06-18',
    });
    expect(plainInitializeRequest(line(initialize(1.5, '2025-06-18')))).toBeUndefined();
    expect(plainInitializeRequest(line({ ...initialize(1, '2025-06-18'), extra: 1 }))).toBeUndefined();
    expect(plainInitializeRequest(line({ ...initialize(1, 'x'), method: 'tools/list' }))).toBeUndefined();
    expect(plainInitializeRequest(line(initialize(1, '2025-06-18', { _meta: {} })))).toBeUndefined();
    expect(
      plainInitializeRequest(
        line(initialize(1, '2025-06-18', { capabilities: { roots: { listChanged: 1 } } })),
      ),
    ).toBeUndefined();
    expect(
      plainInitializeRequest(line(initialize(1, '2025-06-18', { clientInfo: { name: 'c', version: 2 } }))),
    ).toBeUndefined();
    expect(
      plainInitializeRequest(
        line(initialize(1, '2025-06-18', { clientInfo: { name: 'c', version: '1', icons: [] } })),
      ),
    ).toBeUndefined();
    expect(plainInitializeRequest('{"jsonrpc":"2.0",')).toBeUndefined();
  });
});

describe('answerInitializeEarly', () => {
  const facts = { name: 'errand', version: '9.9.9', tasks: true };

  function harness() {
    const input = new PassThrough();
    const output = new PassThrough();
    const written: string[] = [];
    output.on('data', (chunk: Buffer) => written.push(chunk.toString()));
    const mismatches: string[] = [];
    const early = answerInitializeEarly(input, output, facts, (_sent, server) => mismatches.push(server));
    const read: string[] = [];
    early.input.on('data', (chunk: Buffer) => read.push(chunk.toString()));
    return { input, written, mismatches, early, read };
  }

  const settle = () => new Promise((resolve) => setImmediate(resolve));

  it('answers the first request at once, relays it, holds back the server answer and relays the rest after it', async () => {
    const { input, written, mismatches, early, read } = harness();
    const request = `${JSON.stringify(initialize(1, '2025-06-18'))}\n`;
    input.write(request.slice(0, 20));
    await settle();
    expect(written).toEqual([]);
    input.write(`${request.slice(20)}{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n`);
    await settle();
    const answer = { result: initializeResult('2025-06-18', facts), jsonrpc: '2.0', id: 1 };
    expect(written).toEqual([`${JSON.stringify(answer)}\n`]);
    // The server reads the request now, and what followed it only once it has answered it too.
    expect(read.join('')).toBe(request);
    expect(early.output.write(`${JSON.stringify(answer)}\n`)).toBe(true);
    await settle();
    expect(read.join('')).toBe(`${request}{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n`);
    input.write('{"jsonrpc":"2.0","id":3,"method":"ping"}\n');
    await settle();
    expect(read.join('')).toContain('"id":3');
    // The server's own answer to it was not sent again; the next answers go out.
    early.output.write('{"result":{"tools":[]},"jsonrpc":"2.0","id":2}\n');
    early.output.write(`${JSON.stringify(answer)}\n`);
    await settle();
    expect(written.slice(1)).toEqual([
      '{"result":{"tools":[]},"jsonrpc":"2.0","id":2}\n',
      `${JSON.stringify(answer)}\n`,
    ]);
    expect(mismatches).toEqual([]);
    input.end();
  });

  it('reports a server answer that differs, and leaves a first line that is no plain initialize alone', async () => {
    const first = harness();
    first.input.write(`${JSON.stringify(initialize(3, '2025-06-18'))}\n`);
    await settle();
    first.early.output.write('{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"no"}}\n');
    expect(first.mismatches).toEqual(['{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"no"}}']);
    first.input.end();

    const second = harness();
    second.input.write(`${JSON.stringify(initialize(4, '2025-06-18', { _meta: { x: 1 } }))}\n`);
    await settle();
    expect(second.written).toEqual([]);
    const own = '{"result":{},"jsonrpc":"2.0","id":4}\n';
    second.early.output.write(own);
    await settle();
    expect(second.written).toEqual([own]);
    second.input.end();
  });

  it('ends the relay with its input, and lets go of the input when the server closes the relay', async () => {
    const { input, early } = harness();
    const ended = new Promise((resolve) => early.input.once('end', resolve));
    input.end();
    await ended;

    const other = harness();
    other.early.input.destroy();
    await settle();
    expect(other.input.destroyed).toBe(true);
  });
});
