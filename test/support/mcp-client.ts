/**
 * Helpers for the MCP server's end-to-end tests: the built CLI (`node dist/cli/main.js mcp`) driven by
 * the official client SDK over stdio, with its stderr and logging notifications captured and waited on
 * without sleeping, and a small HTTP client for the dashboard.
 */
import { request as httpRequest } from 'node:http';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  type CallToolResult,
  CallToolResultSchema,
  ListRootsRequestSchema,
  type LoggingMessageNotification,
  LoggingMessageNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The built CLI (`npm run build` first; `npm test` builds). */
export const CLI_PATH = join(root, 'dist', 'cli', 'main.js');

/** Collects a stream's text and resolves waiters when a pattern appears. */
export class TextCapture {
  #text = '';
  readonly #waiters = new Set<{ pattern: RegExp; resolve: (match: RegExpExecArray) => void }>();

  constructor(stream: Readable | null) {
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => {
      this.#text += chunk;
      for (const waiter of [...this.#waiters]) {
        const match = waiter.pattern.exec(this.#text);
        if (match) {
          this.#waiters.delete(waiter);
          waiter.resolve(match);
        }
      }
    });
  }

  get text(): string {
    return this.#text;
  }

  /** Resolves with the first match of `pattern` in everything captured so far or later. */
  waitFor(pattern: RegExp): Promise<RegExpExecArray> {
    const match = pattern.exec(this.#text);
    if (match) return Promise.resolve(match);
    return new Promise((resolve) => this.#waiters.add({ pattern, resolve }));
  }
}

export interface McpCliOptions {
  /** Arguments after `mcp`. */
  readonly args?: readonly string[];
  /** The server's launch directory. */
  readonly cwd?: string;
  /** Directories the client offers as MCP roots (the client declares the roots capability). */
  readonly roots?: readonly string[];
  /** Variables added to the test's environment for the server (and so for its commands). */
  readonly env?: Readonly<Record<string, string>>;
}

export interface McpCli {
  readonly client: Client;
  readonly transport: StdioClientTransport;
  /** The server process's pid. */
  readonly pid: number;
  readonly stderr: TextCapture;
  readonly logs: LoggingMessageNotification['params'][];
  /** Resolves with the first logging message (already received or later) that `predicate` accepts. */
  waitForLog(
    predicate: (params: LoggingMessageNotification['params']) => boolean,
  ): Promise<LoggingMessageNotification['params']>;
  /** Calls a tool and returns its result. */
  call(name: string, args?: Record<string, unknown>): Promise<CallToolResult>;
  /** Resolves when the server process has exited and the connection is closed. */
  readonly exited: Promise<void>;
}

/** Starts `errand mcp` with the test's environment (so the leak check finds its processes) and connects. */
export async function startMcpCli(options: McpCliOptions = {}): Promise<McpCli> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI_PATH, 'mcp', ...(options.args ?? [])],
    env: { ...(process.env as Record<string, string>), ...options.env },
    stderr: 'pipe',
    ...(options.cwd ? { cwd: options.cwd } : {}),
  });
  const stderr = new TextCapture(transport.stderr as Readable | null);
  const client = new Client(
    { name: 'errand-test-client', version: '1.0.0' },
    { capabilities: options.roots ? { roots: { listChanged: true } } : {} },
  );
  if (options.roots) {
    const roots = options.roots.map((directory) => ({ uri: pathToFileURL(directory).href }));
    client.setRequestHandler(ListRootsRequestSchema, () => ({ roots }));
  }
  const logs: LoggingMessageNotification['params'][] = [];
  const logWaiters = new Set<{
    predicate: (params: LoggingMessageNotification['params']) => boolean;
    resolve: (params: LoggingMessageNotification['params']) => void;
  }>();
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    logs.push(notification.params);
    for (const waiter of [...logWaiters]) {
      if (waiter.predicate(notification.params)) {
        logWaiters.delete(waiter);
        waiter.resolve(notification.params);
      }
    }
  });
  let markExited!: () => void;
  const exited = new Promise<void>((resolve) => {
    markExited = resolve;
  });
  client.onclose = () => markExited();
  await client.connect(transport);
  const pid = transport.pid;
  if (pid === null) throw new Error('the MCP server did not start');
  return {
    client,
    transport,
    pid,
    stderr,
    logs,
    waitForLog(predicate) {
      const seen = logs.find(predicate);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve) => logWaiters.add({ predicate, resolve }));
    },
    async call(name, args = {}) {
      return (await client.callTool({ name, arguments: args }, CallToolResultSchema)) as CallToolResult;
    },
    exited,
  };
}

/** The text blocks of a tool result. */
export function textBlocks(result: CallToolResult): string[] {
  return result.content.flatMap((block) => (block.type === 'text' ? [block.text] : []));
}

/** The ids in the `<task-id>` elements of a text. */
export function notifiedTaskIds(text: string): string[] {
  return [...text.matchAll(/<task-id>([^<]+)<\/task-id>/g)].map((match) => match[1] as string);
}

export interface HttpReply {
  readonly status: number;
  readonly body: string;
}

/** One HTTP request to the dashboard (node:http, so `Origin` is sent exactly as given). */
export function httpCall(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<HttpReply> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      url,
      {
        method: options.method ?? 'GET',
        headers: {
          ...(options.body === undefined
            ? {}
            : {
                'Content-Type': 'application/json',
                'Content-Length': String(Buffer.byteLength(options.body)),
              }),
          ...options.headers,
        },
      },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          body += chunk;
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      },
    );
    request.on('error', reject);
    if (options.body !== undefined) request.write(options.body);
    request.end();
  });
}
