/**
 * Readiness in one call with real processes: `task_output`'s `wait_for` and the bash tool's `ready_when`
 * answer when a line matches, a port accepts or a URL answers — or at their bound, or at the task's end.
 */
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { capturingLogger } from '../../../test/fixtures/bash/index.js';
import { createTaskService } from '../../registry/index.js';
import { createOwner, createTrustedCaller, type TaskService } from '../../tasks/index.js';
import {
  createTaskTools,
  executeTool,
  type TaskOutputValue,
  type TaskTools,
  type ToolContext,
} from '../../tools/index.js';
import { BashProducer } from './bash-producer.js';
import { type BashToolOptions, createBashTool } from './bash-tool.js';
import { BashExecutor } from './executor.js';

const trusted = createTrustedCaller('test');
const owner = createOwner('s1');
let cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

function setup(tool: Omit<BashToolOptions, 'producer'> = {}, taskTools: { readinessHosts?: 'any' } = {}) {
  const tasks: TaskService = createTaskService({ logger: capturingLogger() });
  const tools: TaskTools = createTaskTools({ tasks, ...taskTools });
  const executor = new BashExecutor({ logger: capturingLogger(), killGraceMs: 300 });
  const producer = new BashProducer({ tasks, executor });
  const bash = createBashTool({ producer, ...tool });
  cleanups.push(
    () => tasks.dispose(),
    () => tools.dispose(),
    () => executor.dispose(),
    () => producer.dispose(),
  );
  const context = (id = 'call'): ToolContext => ({
    caller: owner,
    toolCallId: id,
    signal: new AbortController().signal,
  });
  const start = async (command: string) => {
    const result = await executeTool(bash, { command, run_in_background: true }, context());
    expect(result.isError, result.text).toBe(false);
    return (result.value as { taskId: string }).taskId;
  };
  const output = (input: Record<string, unknown>) => executeTool(tools.taskOutput, input, context());
  return { tasks, bash, start, output, context };
}

/** A port nothing listens on right now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A node program that listens on `port` once it reads a line on its stdin fifo... simpler: after `delayMs`. */
function serverCommand(port: number, delayMs: number, http = false): string {
  const program = http
    ? `let n=0;setTimeout(()=>require('http').createServer((q,s)=>{n++;s.statusCode=n<3?503:200;s.end('ok')}).listen(${port},'127.0.0.1',()=>console.log('up')),${delayMs})`
    : `setTimeout(()=>require('net').createServer(s=>s.end()).listen(${port},'127.0.0.1',()=>console.log('up')),${delayMs})`;
  return `exec node -e "${program}"`;
}

describe('task_output wait_for', () => {
  it('answers with the first output line that matches, printed before or during the wait', async () => {
    const { start, output } = setup();
    const id = await start('echo booting; sleep 0.3; echo "Server listening on :4000"; sleep 30');
    const result = await output({
      task_id: id,
      wait_for: { pattern: 'listening on :(\\d+)' },
      timeout_ms: 20_000,
    });
    expect(result.isError, result.text).toBe(false);
    expect(result.text).toMatch(
      /\[ready after \d+ ms: matched \/listening on :\(\\d\+\)\/: "Server listening on :4000"\]/,
    );
    expect(result.text).toContain('booting');
    expect((result.value as TaskOutputValue).readiness).toBe('ready');
    expect(result.text).toMatch(/\[status: running/);
    // Already printed: the next wait answers at once from the start of the output.
    const again = await output({ task_id: id, wait_for: { pattern: 'LISTENING', ignore_case: true } });
    expect(again.text).toContain('matched /LISTENING/');
  });

  it('answers when a port accepts connections, and when a URL answers the wanted status', async () => {
    const { start, output } = setup();
    const port = await freePort();
    const id = await start(serverCommand(port, 300));
    const ready = await output({ task_id: id, wait_for: { port }, timeout_ms: 20_000 });
    expect(ready.text, ready.text).toContain(`ready after`);
    expect(ready.text).toContain(`127.0.0.1:${port} accepts connections`);

    const httpPort = await freePort();
    const web = await start(serverCommand(httpPort, 100, true));
    const url = `http://127.0.0.1:${httpPort}/health`;
    const answered = await output({ task_id: web, wait_for: { url, status: 200 }, timeout_ms: 20_000 });
    expect(answered.text, answered.text).toContain(`${url} answered 200`);
  });

  it('answers at its bound with what it saw, and leaves the task running', async () => {
    const { start, output, tasks } = setup();
    const id = await start('echo only-this; sleep 30');
    const line = await output({ task_id: id, wait_for: { pattern: 'never printed' }, timeout_ms: 300 });
    expect(line.text).toMatch(
      /\[not ready after \d+ ms: waited for an output line matching \/never printed\/; last line: "only-this"; the task keeps running\]/,
    );
    expect((line.value as TaskOutputValue).readiness).toBe('timeout');
    const port = await freePort();
    const closed = await output({ task_id: id, wait_for: { port }, timeout_ms: 200 });
    expect(closed.text).toContain(`127.0.0.1:${port}: ECONNREFUSED`);
    expect(tasks.get(id, trusted).status).toBe('running');
  });

  it('answers with the ending when the task ends first, and takes its notification', async () => {
    const { start, output, tasks } = setup();
    const id = await start('echo bye; sleep 0.2; exit 3');
    const result = await output({ task_id: id, wait_for: { pattern: 'never' }, timeout_ms: 20_000 });
    expect(result.text).toContain('[not ready: the task ended before an output line matching /never/');
    expect(result.text).toContain('bye');
    expect(result.text).toMatch(/\[status: failed/);
    expect((result.value as TaskOutputValue).readiness).toBe('ended');
    expect(tasks.get(id, trusted).reported).toBe(true);
  });

  it('refuses a bad condition by name before waiting', async () => {
    const { start, output } = setup();
    const id = await start('sleep 30');
    const two = await output({ task_id: id, wait_for: { port: 80, pattern: 'x' } });
    expect(two.isError).toBe(true);
    expect(two.text).toContain('exactly one of pattern, port and url');
    const remote = await output({ task_id: id, wait_for: { url: 'http://example.com/' } });
    expect(remote.text).toContain('INVALID_READINESS');
    expect(remote.text).toContain('wait_for.url');
    const unsafe = await output({ task_id: id, wait_for: { pattern: '(a+)+$' } });
    expect(unsafe.text).toContain('INVALID_MONITOR_PATTERN');
    const both = await output({ task_id: id, wait: true, wait_for: { port: 80 } });
    expect(both.text).toContain('give wait or wait_for');
  });

  it('probes any host only when configured to', async () => {
    const { start, output } = setup({}, { readinessHosts: 'any' });
    const id = await start('sleep 30');
    const result = await output({ task_id: id, wait_for: { port: 9, host: '192.0.2.1' }, timeout_ms: 100 });
    expect(result.text).toContain('not ready after');
  });
});

describe('bash ready_when', () => {
  it('starts in the background and answers once the port accepts', async () => {
    const { bash, context } = setup();
    const port = await freePort();
    const result = await executeTool(
      bash,
      { command: serverCommand(port, 200), ready_when: { port, timeout_ms: 20_000 } },
      context(),
    );
    expect(result.isError, result.text).toBe(false);
    expect(result.text).toMatch(/^Started bash-1 in the background/);
    expect(result.text).toContain(`127.0.0.1:${port} accepts connections`);
    expect(result.value).toEqual({ kind: 'background', taskId: 'bash-1' });
  });

  it('answers with the ending when the command ends first', async () => {
    const { bash, context, tasks } = setup();
    const result = await executeTool(
      bash,
      { command: 'echo "port in use"; exit 1', ready_when: { pattern: 'listening' } },
      context(),
    );
    expect(result.text).toContain('[not ready: the task ended before');
    expect(result.text).toContain('port in use');
    expect(result.text).toMatch(/\[status: failed/);
    expect(result.taskEnds).toEqual([{ taskId: 'bash-1', attempt: 1 }]);
    expect(tasks.get('bash-1', trusted).reported).toBe(true);
  });

  it('waits on the running copy when the start is a duplicate', async () => {
    const { bash, context } = setup();
    const command = 'echo ready-now; sleep 30';
    await executeTool(bash, { command, run_in_background: true }, context());
    const result = await executeTool(bash, { command, ready_when: { pattern: 'ready-now' } }, context('c2'));
    expect(result.value).toEqual({ kind: 'duplicate', taskId: 'bash-1' });
    expect(result.text).toContain('matched /ready-now/');
  });

  it('refuses a bad condition before starting anything', async () => {
    const { bash, context, tasks } = setup();
    const result = await executeTool(
      bash,
      { command: 'sleep 30', ready_when: { url: 'ftp://127.0.0.1/' } },
      context(),
    );
    expect(result.isError).toBe(true);
    expect(result.text).toContain('ready_when.url');
    const foreground = await executeTool(
      bash,
      { command: 'sleep 30', run_in_background: false, ready_when: { port: 1 } },
      context(),
    );
    expect(foreground.text).toContain('run_in_background');
    expect(tasks.list(trusted)).toHaveLength(0);
  });
});
