/** The model-facing bash tool with real processes: foreground, background, promotion, aborts, preflight. */
import { existsSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { capturingLogger, isAlive, waitForOutput } from '../../../test/fixtures/bash/index.js';
import { createTaskService } from '../../registry/index.js';
import { createManualClock } from '../../tasks/clock.js';
import { createOwner, createTrustedCaller, type TaskService } from '../../tasks/index.js';
import { executeTool, type ToolContext } from '../../tools/index.js';
import { BashProducer } from './bash-producer.js';
import { type BashToolOptions, createBashTool } from './bash-tool.js';
import { BashExecutor } from './executor.js';
import type { BashExecutorOptions } from './executor-options.js';

const trusted = createTrustedCaller('test');
let cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

interface Setup {
  tasks: TaskService;
  producer: BashProducer;
  tool: ReturnType<typeof createBashTool>;
  spawns: () => number;
}

function setup(
  options: {
    tool?: Omit<BashToolOptions, 'producer'>;
    executor?: BashExecutorOptions;
    controller?: boolean;
  } = {},
): Setup {
  const tasks = createTaskService({ logger: capturingLogger() });
  if (options.controller !== false) tasks.attachController('test');
  let spawns = 0;
  const executor = new BashExecutor({
    logger: capturingLogger(),
    killGraceMs: 300,
    ...options.executor,
    spawn: (file, args, spawnOptions) => {
      spawns += 1;
      return (options.executor?.spawn ?? defaultSpawn)(file, args, spawnOptions);
    },
  });
  const producer = new BashProducer({ tasks, executor });
  const tool = createBashTool({ producer, ...options.tool });
  cleanups.push(
    () => tasks.dispose(),
    () => executor.dispose(),
    () => producer.dispose(),
  );
  return { tasks, producer, tool, spawns: () => spawns };
}

const { spawn: defaultSpawn } = await import('node:child_process');

function onlyForegroundCall(tool: Setup['tool']): { taskId: string } {
  const calls = tool.foregroundCalls();
  expect(calls).toHaveLength(1);
  return calls[0]!;
}

function context(overrides: Partial<ToolContext> = {}): ToolContext {
  return { caller: undefined, toolCallId: 'call_1', signal: new AbortController().signal, ...overrides };
}

describe('schema', () => {
  it('offers run_in_background only when enabled, and rejects unknown keys', () => {
    const enabled = setup().tool;
    const disabled = setup({ tool: { enableRunInBackground: false } }).tool;
    expect(enabled.jsonSchema).toMatchInlineSnapshot(`
      {
        "additionalProperties": false,
        "properties": {
          "allow_duplicate": {
            "description": "Start a background command even when an identical one (same command, same directory) is still running. Default false: you get the running task id instead.",
            "type": "boolean",
          },
          "command": {
            "description": "The command to run, as \`bash -c <command>\`.",
            "minLength": 1,
            "type": "string",
          },
          "description": {
            "description": "What the command does, in a few words (shown to the user and in notifications).",
            "maxLength": 200,
            "type": "string",
          },
          "ready_when": {
            "additionalProperties": false,
            "description": "Start in the background (implies run_in_background) and answer once it is ready: an output line matches \`pattern\`, \`port\` accepts a TCP connection, or \`url\` answers \`status\` (default any 2xx); give exactly one. The answer carries the matching line or address, what was seen at its timeout_ms, or the ending if the command ends first.",
            "properties": {
              "host": {
                "description": "The host of port. Default 127.0.0.1.",
                "maxLength": 253,
                "minLength": 1,
                "type": "string",
              },
              "ignore_case": {
                "description": "Match the pattern regardless of case.",
                "type": "boolean",
              },
              "pattern": {
                "description": "A JavaScript regular expression an output line must match, for example "listening on".",
                "maxLength": 256,
                "minLength": 1,
                "type": "string",
              },
              "port": {
                "description": "A TCP port that must accept a connection.",
                "maximum": 65535,
                "minimum": 1,
                "type": "integer",
              },
              "status": {
                "description": "The HTTP status url must answer with. Default: any 2xx.",
                "maximum": 599,
                "minimum": 100,
                "type": "integer",
              },
              "timeout_ms": {
                "description": "How long to wait for readiness, in milliseconds (default 30000, at most 600000). The command keeps running after it.",
                "exclusiveMinimum": 0,
                "maximum": 600000,
                "type": "integer",
              },
              "url": {
                "description": "An http(s) URL that must answer with status.",
                "maxLength": 2048,
                "minLength": 1,
                "type": "string",
              },
            },
            "type": "object",
          },
          "run_in_background": {
            "description": "Run in the background and return a task id at once (servers, watchers, long builds). Read its output with task_output, stop it with task_kill; you are notified when it ends.",
            "type": "boolean",
          },
          "timeout_ms": {
            "description": "Kill the command after this many milliseconds (at most 600000), even once it moved to the background. Without it, a command still running after 15000 ms moves to the background and runs until it ends.",
            "exclusiveMinimum": 0,
            "maximum": 600000,
            "type": "integer",
          },
          "workdir": {
            "description": "The working directory; relative paths start from the session directory. Default: the session directory.",
            "minLength": 1,
            "type": "string",
          },
        },
        "required": [
          "command",
        ],
        "type": "object",
      }
    `);
    expect(disabled.jsonSchema).toMatchInlineSnapshot(`
      {
        "additionalProperties": false,
        "properties": {
          "command": {
            "description": "The command to run, as \`bash -c <command>\`.",
            "minLength": 1,
            "type": "string",
          },
          "description": {
            "description": "What the command does, in a few words (shown to the user and in notifications).",
            "maxLength": 200,
            "type": "string",
          },
          "timeout_ms": {
            "description": "Kill the command after this many milliseconds (default 120000, at most 600000).",
            "exclusiveMinimum": 0,
            "maximum": 600000,
            "type": "integer",
          },
          "workdir": {
            "description": "The working directory; relative paths start from the session directory. Default: the session directory.",
            "minLength": 1,
            "type": "string",
          },
        },
        "required": [
          "command",
        ],
        "type": "object",
      }
    `);
    expect(enabled.description).toContain('run_in_background');
    expect(disabled.description).not.toContain('run_in_background');
  });

  it('rejects a forced run_in_background on a disabled instance, through the validator or directly', async () => {
    const { tool, spawns } = setup({ tool: { enableRunInBackground: false } });
    for (const forced of [true, false]) {
      // executeTool is the path every adapter, the MCP server and the turn loop take.
      const validated = await executeTool(tool, { command: 'true', run_in_background: forced }, context());
      expect(validated).toMatchObject({ isError: true });
      expect(validated.text).toMatch(/^Error \[RUN_IN_BACKGROUND_DISABLED\]: /);
      expect(validated.text).toContain('call it again without `run_in_background`');
    }
    const direct = await tool.execute({ command: 'true', run_in_background: false }, context());
    expect(direct).toMatchObject({ isError: true });
    expect(direct.text).toContain('RUN_IN_BACKGROUND_DISABLED');
    expect(spawns()).toBe(0);
  });

  it('refuses a runtime cap longer than a deadline can be, naming the option', async () => {
    const { producer, spawns } = setup();
    const tooLong = 3_000_000_000;
    const refused = expect.objectContaining({
      code: 'INVALID_TIMEOUT',
      context: expect.objectContaining({ field: 'backgroundRuntimeCapMs', value: tooLong }),
    });
    expect(() => createBashTool({ producer, backgroundRuntimeCapMs: tooLong })).toThrow(refused);
    await expect(producer.start({ command: 'true', backgroundRuntimeCapMs: tooLong })).rejects.toEqual(
      refused,
    );
    await expect(
      producer.start({ command: 'true', background: false, backgroundRuntimeCapMs: tooLong }),
    ).rejects.toEqual(refused);
    expect(spawns()).toBe(0);
  });

  it('validates timeout_ms against the maximum', async () => {
    const { tool, spawns } = setup();
    const result = await executeTool(tool, { command: 'true', timeout_ms: 600_001 }, context());
    expect(result.isError).toBe(true);
    expect(result.text).toContain('timeout_ms');
    expect(spawns()).toBe(0);
  });
});

describe('foreground', () => {
  it('returns the output with stderr marked and an exit line; a non-zero exit is not an error', async () => {
    const { tool, tasks } = setup();
    const result = await tool.execute({ command: 'echo out; echo err >&2; exit 4' }, context());
    expect(result.isError).toBe(false);
    expect(result.text.split('\n')).toEqual(
      expect.arrayContaining(['out', '[stderr] err', '[exit code: 4]']),
    );
    expect(result.text.endsWith('[exit code: 4]')).toBe(true);
    expect(result.value).toMatchObject({ kind: 'foreground', reason: 'completed', exitCode: 4 });
    const task = tasks.get((result.value as { taskId: string }).taskId);
    expect(task).toMatchObject({ status: 'failed', isBackgrounded: false, reported: true });
  });

  it('returns an error result when the command cannot start', async () => {
    const { tool } = setup();
    const result = await tool.execute(
      { command: 'true', workdir: 'missing-directory' },
      context({ cwd: '/tmp' }),
    );
    expect(result.isError).toBe(true);
    expect(result.text).toContain('SPAWN_FAILED');
    expect(result.text).toContain('"/tmp/missing-directory" does not exist');
  });

  it.each([
    [undefined, 10_000],
    [2500, 2500],
  ])('waits spawnFailureWaitMs (%o) for a command that cannot start to settle', async (option, waitMs) => {
    const { tool, tasks } = setup(option === undefined ? {} : { tool: { spawnFailureWaitMs: option } });
    const waits = vi.spyOn(tasks, 'wait');
    const result = await tool.execute({ command: 'true', workdir: '/nonexistent/errand' }, context());
    expect(result.text).toContain('SPAWN_FAILED');
    expect(waits).toHaveBeenCalledWith('bash-1', waitMs, expect.anything());
  });

  it.each([
    [0, 'INVALID_ARGUMENT', 'Expected `spawnFailureWaitMs` to be a positive integer, got 0 (number)'],
    [
      3_000_000_000,
      'INVALID_TIMEOUT',
      'Expected `spawnFailureWaitMs` to be a positive finite number of milliseconds no greater than 2147483647, got 3000000000 (number)',
    ],
  ])('refuses spawnFailureWaitMs %o, naming the field and the value', (value, code, message) => {
    const { producer } = setup();
    expect(() => createBashTool({ producer, spawnFailureWaitMs: value })).toThrow(message);
    expect(() => createBashTool({ producer, spawnFailureWaitMs: value })).toThrow(
      expect.objectContaining({ code, fault: 'caller' }),
    );
  });

  it('runs in the workdir, relative to the session directory, with the session environment', async () => {
    const { tool } = setup();
    const result = await tool.execute(
      { command: 'pwd; echo "$GREETING"', workdir: '..' },
      context({ cwd: '/tmp/', env: { GREETING: 'hi', PATH: process.env.PATH ?? '' } }),
    );
    expect(result.text).toBe('/\nhi\n[exit code: 0]');
  });

  it('kills a command past its timeout with reason timed_out', async () => {
    const { tool } = setup();
    const result = await tool.execute({ command: 'sleep 1000', timeout_ms: 1 }, context());
    expect(result.isError).toBe(false);
    expect(result.value).toMatchObject({ kind: 'foreground', reason: 'timed_out' });
    expect(result.text).toBe('(no output)\n[timed out after 1 ms; the command was killed]');
  });

  it('kills the command when the foreground call is aborted', async () => {
    const { tool, producer, tasks } = setup();
    const controller = new AbortController();
    const pending = tool.execute(
      { command: 'echo ready; exec sleep 1000' },
      context({ signal: controller.signal }),
    );
    await vi.waitFor(() => expect(tool.foregroundCalls()).toHaveLength(1));
    const { taskId } = onlyForegroundCall(tool);
    await waitForOutput(producer.handleOf(taskId)!, 'ready');
    controller.abort();
    const result = await pending;
    expect(result.text).toBe('ready\n[cancelled: the tool call was aborted]');
    expect(tasks.get(taskId)).toMatchObject({ status: 'killed', stopInitiator: 'user' });
  });
});

describe('aborts while starting', () => {
  it('kills a foreground command whose call was aborted while it was starting', async () => {
    const { tool, tasks, spawns } = setup();
    const controller = new AbortController();
    const pending = tool.execute({ command: 'exec sleep 1000' }, context({ signal: controller.signal }));
    // The spawn happened synchronously; the call is still waiting for the command to be up.
    expect(spawns()).toBe(1);
    controller.abort();
    const result = await pending;
    expect(result.text).toBe('(no output)\n[cancelled: the tool call was aborted]');
    expect(tasks.get('bash-1')).toMatchObject({ status: 'killed' });
  });
});

describe('background', () => {
  it('returns the task id at once, and aborting the call afterwards does not stop it', async () => {
    const { tool, tasks, producer } = setup();
    const controller = new AbortController();
    const owner = createOwner('session-1');
    cleanups.push(() => owner.dispose());
    const result = await tool.execute(
      { command: 'echo ready; exec sleep 1000', run_in_background: true, description: 'sleeper' },
      context({ signal: controller.signal, caller: owner, toolCallId: 'call_bg' }),
    );
    expect(result.isError).toBe(false);
    expect(result.value).toEqual({ kind: 'background', taskId: 'bash-1' });
    const handle = producer.handleOf('bash-1')!;
    expect(result.text).toContain('bash-1');
    expect(result.text).toContain(`Output file: ${handle.outputFile}`);
    // The file the text names exists by the time the call returns.
    expect(existsSync(handle.outputFile!)).toBe(true);
    controller.abort();
    await waitForOutput(handle, 'ready');
    expect(tasks.get('bash-1', owner)).toMatchObject({
      status: 'running',
      isBackgrounded: true,
      label: 'sleeper',
      detail: expect.objectContaining({ toolUseId: 'call_bg' }),
    });
    expect(isAlive(handle.pid!)).toBe(true);
  });

  it('spawns nothing for a call aborted before it starts', async () => {
    const { tool, tasks, spawns } = setup();
    const controller = new AbortController();
    controller.abort();
    const result = await tool.execute(
      { command: 'true', run_in_background: true },
      context({ signal: controller.signal }),
    );
    expect(result).toMatchObject({ isError: true });
    expect(result.text).toContain('TOOL_CALL_ABORTED');
    expect(spawns()).toBe(0);
    expect(tasks.list()).toEqual([]);
  });

  it('spawns nothing when the task service preflight fails', async () => {
    const { tool, spawns } = setup({ controller: false });
    const result = await tool.execute({ command: 'true', run_in_background: true }, context());
    expect(result).toMatchObject({ isError: true });
    expect(result.text).toContain('NO_CONTROLLER');
    expect(spawns()).toBe(0);
  });

  it('reports a background command that cannot start as an error, without a second notification', async () => {
    const { tool, tasks } = setup();
    const result = await tool.execute(
      { command: 'true', run_in_background: true, workdir: '/nonexistent/errand' },
      context(),
    );
    expect(result.isError).toBe(true);
    expect(result.text).toContain('bash-1');
    expect(tasks.get('bash-1')).toMatchObject({ status: 'failed', reported: true });
  });

  it('caps the runtime of background commands when configured', async () => {
    const { tool, tasks } = setup({ tool: { backgroundRuntimeCapMs: 1 } });
    await tool.execute({ command: 'sleep 1000', run_in_background: true }, context());
    const task = await tasks.wait('bash-1', 20_000, trusted);
    expect(task).toMatchObject({
      status: 'killed',
      detail: expect.objectContaining({ reason: 'timed_out' }),
    });
  });
});

describe('promotion', () => {
  it('moves a long foreground command to the background in place: same task, same pid', async () => {
    const clock = createManualClock();
    const { tool, tasks, producer } = setup({ tool: { clock, autoBackgroundAfterMs: 5_000 } });
    const pending = tool.execute({ command: 'echo ready; exec sleep 1000' }, context());
    await vi.waitFor(() => expect(tool.foregroundCalls()).toHaveLength(1));
    const { taskId } = onlyForegroundCall(tool);
    const handle = producer.handleOf(taskId)!;
    await waitForOutput(handle, 'ready');
    const pid = tasks.get(taskId).detail.pid;
    expect(tasks.get(taskId).isBackgrounded).toBe(false);
    clock.advance(5_000);
    const result = await pending;
    expect(result.value).toEqual({ kind: 'background', taskId });
    expect(result.text).toContain('still running after 5000 ms');
    expect(result.text).toContain('Output so far:\nready');
    expect(tasks.get(taskId)).toMatchObject({ status: 'running', isBackgrounded: true });
    expect(tasks.get(taskId).detail.pid).toBe(pid);
    expect(handle.pid).toBe(pid);
    expect(isAlive(handle.pid!)).toBe(true);
    expect(tool.foregroundCalls()).toEqual([]);
    // Without an explicit timeout_ms it now runs to its end.
    expect(handle.timeoutMs).toBeUndefined();
  });

  it('keeps an explicit timeout_ms after moving to the background by itself', async () => {
    const clock = createManualClock();
    const { tool, producer } = setup({ tool: { clock, autoBackgroundAfterMs: 5_000 } });
    const pending = tool.execute({ command: 'echo ready; exec sleep 1000', timeout_ms: 600_000 }, context());
    await vi.waitFor(() => expect(tool.foregroundCalls()).toHaveLength(1));
    const handle = producer.handleOf(onlyForegroundCall(tool).taskId)!;
    expect(handle.timeoutMs).toBe(600_000);
    clock.advance(5_000);
    expect((await pending).value).toMatchObject({ kind: 'background' });
    expect(handle.timeoutMs).toBe(600_000);
  });

  it('does not move a command whose timeout_ms comes before the auto-background deadline', async () => {
    const clock = createManualClock();
    const { tool } = setup({ tool: { clock, autoBackgroundAfterMs: 5_000 } });
    const result = await tool.execute({ command: 'sleep 1000', timeout_ms: 1 }, context());
    expect(result.value).toMatchObject({ kind: 'foreground', reason: 'timed_out' });
    expect(clock.pending).toBe(0);
  });

  it('promotes a running foreground command on demand and then applies the runtime cap', async () => {
    const { tool, tasks, producer } = setup({
      tool: { autoBackgroundAfterMs: false, backgroundRuntimeCapMs: 1 },
    });
    const pending = tool.execute(
      { command: 'echo ready; exec sleep 1000' },
      context({ toolCallId: 'call_key' }),
    );
    await vi.waitFor(() => expect(tool.foregroundCalls()).toHaveLength(1));
    const { taskId } = onlyForegroundCall(tool);
    await waitForOutput(producer.handleOf(taskId)!, 'ready');
    expect(tool.promote('call_key')).toMatchObject({ id: taskId, isBackgrounded: true });
    const result = await pending;
    expect(result.value).toEqual({ kind: 'background', taskId });
    expect(result.text).toContain('moved to the background by the user');
    const task = await tasks.wait(taskId, 20_000, trusted);
    expect(task).toMatchObject({
      status: 'killed',
      detail: expect.objectContaining({ reason: 'timed_out' }),
    });
    expect(tool.promote('call_key')).toBeUndefined();
  });
});
