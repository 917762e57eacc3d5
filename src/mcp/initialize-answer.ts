/**
 * What Errand's MCP server answers to `initialize`, known without the runtime: the capabilities, the
 * server's name and version, the instructions, and the protocol version the SDK's server picks. The
 * server builds its SDK server from these (`createErrandMcpServer`), and `errand mcp` answers the first
 * request from them while the runtime, the store and the SDK are still loading (`answerInitializeEarly`):
 * the same answer, sent before the rest is loaded. This module imports nothing heavy, on purpose.
 */
import { PassThrough, type Readable, type Writable } from 'node:stream';
import { taskToolsPrompt } from '../tools/system-prompt.js';

/**
 * The protocol versions the SDK's server (`@modelcontextprotocol/sdk` 1.x) negotiates in `initialize`,
 * newest first: a requested one of these is answered with itself, any other with the first.
 * `initialize-answer.test.ts` checks them against the SDK's own list.
 */
export const SDK_INITIALIZE_VERSIONS: readonly string[] = [
  '2025-11-25',
  '2025-06-18',
  '2025-03-26',
  '2024-11-05',
  '2024-10-07',
];

/** What the client's model is told in the `initialize` answer. */
export function mcpInstructions(): string {
  return [
    'Errand runs shell commands for you, in the foreground or in the background, and tells you when background work ends.',
    taskToolsPrompt({ monitors: true }),
    '# Which tools own these tasks',
    "Prefer this server's bash over your client's built-in shell for any command that may run longer than a few seconds or should keep running while you work (builds, test suites, servers, watchers): start it with run_in_background: true and keep working; you are told when it ends.",
    "Task ids such as bash-3 belong to Errand: read, wait for, list and stop them only with this server's task_output, task_list and task_kill. Your client's own task tools (for example TaskOutput, TaskStop, TaskList) do not know them.",
    '# Notifications',
    "A <task-notification> for a background task that ended is appended to the result of your next tool call to this server, as a separate text block; where Errand's client hooks are installed, it also arrives after any other tool's result, with the next prompt, and when you end your turn. Each is delivered once. If you are waiting for nothing else, task_list or task_output collects them.",
  ].join('\n\n');
}

/** The capabilities the server declares before its tools are registered (`logging`, MCP Tasks). */
export function mcpServerCapabilities(tasks: boolean): Record<string, object> {
  return {
    logging: {},
    ...(tasks ? { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } } : {}),
  };
}

export interface InitializeAnswerFacts {
  readonly name: string;
  readonly version: string;
  /** MCP Tasks on (the server's `tasks` option is not false). */
  readonly tasks: boolean;
}

/** The `initialize` result the SDK's server sends for `requestedVersion` (its tools registered). */
export function initializeResult(requestedVersion: string, facts: InitializeAnswerFacts): object {
  return {
    protocolVersion: SDK_INITIALIZE_VERSIONS.includes(requestedVersion)
      ? requestedVersion
      : SDK_INITIALIZE_VERSIONS[0],
    // The SDK adds `tools` when the first tool is registered; every session has tools.
    capabilities: { ...mcpServerCapabilities(facts.tasks), tools: { listChanged: true } },
    serverInfo: { name: facts.name, version: facts.version },
    instructions: mcpInstructions(),
  };
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A record whose every value is a record, all the way down (the shape of most capability objects). */
const isRecordTree = (value: unknown): boolean =>
  isRecord(value) && Object.values(value).every((inner) => isRecordTree(inner));

/** The capability keys the SDK's schema knows, and what this module accepts for them without it. */
const KNOWN_CAPABILITIES: Record<string, (value: unknown) => boolean> = {
  experimental: isRecordTree,
  sampling: isRecordTree,
  elicitation: isRecordTree,
  tasks: isRecordTree,
  roots: (value) =>
    isRecord(value) &&
    Object.entries(value).every(([key, inner]) =>
      key === 'listChanged' ? typeof inner === 'boolean' : true,
    ),
};

const OPTIONAL_CLIENT_STRINGS = ['title', 'websiteUrl', 'description'];

/**
 * The request's id and requested version when `line` is an `initialize` request the SDK's server would
 * surely accept, else undefined (anything unusual goes to the SDK, which answers it itself): a strict
 * JSON-RPC request, a string `protocolVersion`, capabilities of the known shapes, a `clientInfo` of
 * strings, no `_meta`, no icons.
 */
export function plainInitializeRequest(line: string): { id: string | number; version: string } | undefined {
  let message: unknown;
  try {
    message = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (!isRecord(message) || message.jsonrpc !== '2.0' || message.method !== 'initialize') return undefined;
  if (Object.keys(message).some((key) => !['jsonrpc', 'id', 'method', 'params'].includes(key))) {
    return undefined;
  }
  const { id, params } = message;
  if (!(typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id)))) return undefined;
  if (!isRecord(params) || params._meta !== undefined || typeof params.protocolVersion !== 'string') {
    return undefined;
  }
  const { capabilities, clientInfo } = params;
  if (!isRecord(capabilities) || !isRecord(clientInfo)) return undefined;
  for (const [key, value] of Object.entries(capabilities)) {
    const check = KNOWN_CAPABILITIES[key];
    if (check && value !== undefined && !check(value)) return undefined;
  }
  if (typeof clientInfo.name !== 'string' || typeof clientInfo.version !== 'string') return undefined;
  if (clientInfo.icons !== undefined) return undefined;
  for (const key of OPTIONAL_CLIENT_STRINGS) {
    if (clientInfo[key] !== undefined && typeof clientInfo[key] !== 'string') return undefined;
  }
  return { id, version: params.protocolVersion };
}

type Listener = Parameters<Writable['on']>[1];

/** The most of the first line looked into; a longer first message goes to the SDK unanswered. */
const MAX_FIRST_LINE_BYTES = 64 * 1024;

export interface EarlyInitialize {
  /** The input the server reads: every byte of `input`, the first line included, and its end. */
  readonly input: Readable;
  /**
   * The output the server writes to: `output`, less the server's own answer to the request answered
   * early (it is the same answer; a different one is reported to `onMismatch` and dropped all the same).
   */
  readonly output: Writable;
}

/**
 * Answers the `initialize` request on the first line of `input` on `output` at once, from `facts`, and
 * hands the server streams that carry the rest as if nothing had happened: the server reads the same
 * request (so its state is what it would be), and its answer to it is held back. A first line that is
 * not a plain `initialize` request (see `plainInitializeRequest`) is answered by the server alone.
 */
export function answerInitializeEarly(
  input: Readable,
  output: Writable,
  facts: InitializeAnswerFacts,
  onMismatch: (sent: string, server: string) => void,
): EarlyInitialize {
  // The server reads a relay: the bytes looked at here go on to it untouched, and so does the end.
  const relay = new PassThrough();
  let expected: { id: string | number; text: string } | undefined;
  // The first line's bytes while it is looked for; undefined once it is known what it is.
  let first: Buffer[] | undefined = [];
  let firstBytes = 0;
  // What followed a request answered early, held (and the input paused) until the server answered it
  // too: the server then sees what it would have, the client's next messages after its answer.
  let held: Buffer[] | undefined;
  let inputEnded = false;
  const forward = (buffer: Buffer) => {
    if (buffer.length === 0 || relay.destroyed) return;
    if (!relay.write(buffer)) {
      input.pause();
      relay.once('drain', () => {
        if (held === undefined) input.resume();
      });
    }
  };
  const decide = (all: Buffer) => {
    first = undefined;
    const end = all.indexOf(10);
    const request = end < 0 ? undefined : plainInitializeRequest(all.subarray(0, end).toString('utf8'));
    if (request === undefined) {
      forward(all);
      return;
    }
    const text = JSON.stringify({
      result: initializeResult(request.version, facts),
      jsonrpc: '2.0',
      id: request.id,
    });
    expected = { id: request.id, text };
    output.write(`${text}\n`);
    forward(all.subarray(0, end + 1));
    held = [all.subarray(end + 1)];
    input.pause();
  };
  const release = () => {
    const rest = held ?? [];
    held = undefined;
    for (const buffer of rest) forward(buffer);
    if (inputEnded) relay.end();
    else input.resume();
  };
  const onData = (chunk: Buffer | string) => {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (held !== undefined) held.push(buffer);
    else if (first === undefined) forward(buffer);
    else {
      first.push(buffer);
      firstBytes += buffer.length;
      if (buffer.includes(10) || firstBytes >= MAX_FIRST_LINE_BYTES) decide(Buffer.concat(first));
    }
  };
  // A client gone before the answer is written: nothing to tell it, and no reason to crash (the server
  // listens the same way once it runs).
  output.on('error', () => {});
  input.on('data', onData);
  input.once('end', () => {
    inputEnded = true;
    if (first !== undefined) decide(Buffer.concat(first));
    if (held === undefined) relay.end();
  });
  input.once('error', (error) => relay.destroy(error));
  // The server lets go of its input (it closed): so does this, or the process stays up reading it.
  relay.once('close', () => {
    input.off('data', onData);
    if (!input.readableEnded) input.destroy();
  });

  const write = (chunk: unknown, ...rest: unknown[]): boolean => {
    if (expected !== undefined && typeof chunk === 'string') {
      const answer = answerOf(chunk, expected.id);
      if (answer !== undefined) {
        const sent = expected.text;
        expected = undefined;
        if (answer !== sent) onMismatch(sent, answer);
        // After the answer is written: what the client sent next reaches the server only now.
        queueMicrotask(release);
        const callback = rest.find((value) => typeof value === 'function') as (() => void) | undefined;
        if (callback) queueMicrotask(callback);
        return true;
      }
    }
    return (output.write as (...args: unknown[]) => boolean)(chunk, ...rest);
  };
  // Only what a stream's writer calls: the events are the real output's.
  const filtered = {
    write,
    on: (event: string, listener: Listener) => {
      output.on(event, listener);
      return filtered;
    },
    once: (event: string, listener: Listener) => {
      output.once(event, listener);
      return filtered;
    },
    off: (event: string, listener: Listener) => {
      output.off(event, listener);
      return filtered;
    },
    removeListener: (event: string, listener: Listener) => {
      output.removeListener(event, listener);
      return filtered;
    },
  };
  return { input: relay, output: filtered as unknown as Writable };
}

/** The answer (normalised JSON) when `line` is a response to request `id`, else undefined. */
function answerOf(line: string, id: string | number): string | undefined {
  try {
    const message = JSON.parse(line) as Record<string, unknown>;
    const isAnswer = message.id === id && message.method === undefined;
    return isAnswer && ('result' in message || 'error' in message) ? JSON.stringify(message) : undefined;
  } catch {
    return undefined;
  }
}
