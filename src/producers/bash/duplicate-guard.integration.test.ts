/** The bash tool's duplicate guard with real processes: identical starts answer with the running id. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { capturingLogger } from '../../../test/fixtures/bash/index.js';
import { createTaskService } from '../../registry/index.js';
import { createOwner, createTrustedCaller, type Owner, type TaskService } from '../../tasks/index.js';
import { executeTool, type ToolContext } from '../../tools/index.js';
import { BashProducer } from './bash-producer.js';
import { type BashToolOptions, type BashToolValue, createBashTool } from './bash-tool.js';
import { normalizeCommand } from './duplicate-guard.js';
import { BashExecutor } from './executor.js';

const trusted = createTrustedCaller('test');
let cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

const { spawn: realSpawn } = await import('node:child_process');

function setup(tool: Omit<BashToolOptions, 'producer'> = {}) {
  const tasks: TaskService = createTaskService({ logger: capturingLogger() });
  tasks.attachController('test');
  let spawns = 0;
  const executor = new BashExecutor({
    logger: capturingLogger(),
    killGraceMs: 300,
    spawn: (file, args, options) => {
      spawns += 1;
      return realSpawn(file, args, options);
    },
  });
  const producer = new BashProducer({ tasks, executor });
  const bash = createBashTool({ producer, ...tool });
  const directory = mkdtempSync(join(tmpdir(), 'errand-dup-'));
  cleanups.push(
    () => rmSync(directory, { recursive: true, force: true }),
    () => tasks.dispose(),
    () => executor.dispose(),
    () => producer.dispose(),
  );
  return { tasks, bash, directory, spawns: () => spawns };
}

function context(caller: Owner | undefined, cwd: string, toolCallId = 'call_1'): ToolContext {
  return { caller, cwd, toolCallId, signal: new AbortController().signal };
}

function value(result: { value?: unknown }): BashToolValue {
  return result.value as BashToolValue;
}

describe('normalizeCommand', () => {
  it('collapses whitespace runs and trims', () => {
    expect(normalizeCommand('  npm\trun   dev\n')).toBe('npm run dev');
    expect(normalizeCommand('a b')).not.toBe(normalizeCommand('ab'));
  });
});

describe('the duplicate guard', () => {
  it('answers an identical background start with the running task id, and starts nothing', async () => {
    const { bash, directory, spawns, tasks } = setup();
    const owner = createOwner('s1');
    const first = await executeTool(
      bash,
      { command: 'sleep 30', run_in_background: true },
      context(owner, directory),
    );
    expect(value(first)).toEqual({ kind: 'background', taskId: 'bash-1' });
    const second = await executeTool(
      bash,
      { command: '  sleep   30 \n', run_in_background: true },
      context(owner, directory, 'call_2'),
    );
    expect(second.isError).toBe(false);
    expect(value(second)).toEqual({ kind: 'duplicate', taskId: 'bash-1' });
    expect(second.text).toContain('bash-1');
    expect(second.text).toContain('task_output');
    expect(second.text).toContain('task_kill');
    expect(second.text).toContain('allow_duplicate: true');
    expect(spawns()).toBe(1);
    expect(tasks.list(trusted)).toHaveLength(1);
  });

  it('starts a second copy with allow_duplicate, in another directory, or for another session', async () => {
    const { bash, directory, spawns } = setup();
    const owner = createOwner('s1');
    const command = { command: 'sleep 30', run_in_background: true };
    await executeTool(bash, command, context(owner, directory));
    const allowed = await executeTool(
      bash,
      { ...command, allow_duplicate: true },
      context(owner, directory, 'c2'),
    );
    expect(value(allowed)).toEqual({ kind: 'background', taskId: 'bash-2' });
    const elsewhere = await executeTool(bash, { ...command, workdir: '/' }, context(owner, directory, 'c3'));
    expect(value(elsewhere)).toEqual({ kind: 'background', taskId: 'bash-3' });
    const otherSession = await executeTool(bash, command, context(createOwner('s2'), directory, 'c4'));
    expect(value(otherSession)).toEqual({ kind: 'background', taskId: 'bash-4' });
    // The same directory named relatively is the same directory.
    const relative = await executeTool(bash, { ...command, workdir: '.' }, context(owner, directory, 'c5'));
    expect(value(relative)).toEqual({ kind: 'duplicate', taskId: 'bash-1' });
    expect(spawns()).toBe(4);
  });

  it('starts the command again once the running copy has ended', async () => {
    const { bash, directory, tasks } = setup();
    const owner = createOwner('s1');
    const command = { command: 'sleep 30', run_in_background: true };
    await executeTool(bash, command, context(owner, directory));
    await tasks.kill('bash-1', trusted, 'test');
    await tasks.wait('bash-1', 10_000, trusted);
    const again = await executeTool(bash, command, context(owner, directory, 'c2'));
    expect(value(again)).toEqual({ kind: 'background', taskId: 'bash-2' });
  });

  it('lets only one of two identical calls in the same tick start', async () => {
    const { bash, directory, spawns } = setup();
    const owner = createOwner('s1');
    const command = { command: 'sleep 30', run_in_background: true };
    const results = await Promise.all([
      executeTool(bash, command, context(owner, directory, 'c1')),
      executeTool(bash, command, context(owner, directory, 'c2')),
      executeTool(bash, command, context(owner, directory, 'c3')),
    ]);
    const kinds = results.map((result) => value(result).kind).sort();
    expect(kinds).toEqual(['background', 'duplicate', 'duplicate']);
    expect(spawns()).toBe(1);
  });

  it('leaves foreground calls alone, and is off with duplicateGuard: false', async () => {
    const { bash, directory } = setup();
    const owner = createOwner('s1');
    await executeTool(bash, { command: 'sleep 30', run_in_background: true }, context(owner, directory));
    const foreground = await executeTool(bash, { command: 'true' }, context(owner, directory, 'c2'));
    expect(value(foreground).kind).toBe('foreground');

    const off = setup({ duplicateGuard: false });
    const properties = (off.bash.jsonSchema as { properties: Record<string, unknown> }).properties;
    expect(properties.allow_duplicate).toBeUndefined();
    const command = { command: 'sleep 30', run_in_background: true };
    await executeTool(off.bash, command, context(owner, off.directory));
    const twice = await executeTool(off.bash, command, context(owner, off.directory, 'c2'));
    expect(value(twice)).toEqual({ kind: 'background', taskId: 'bash-2' });
    expect(off.spawns()).toBe(2);
    const refused = await executeTool(
      off.bash,
      { ...command, allow_duplicate: true },
      context(owner, off.directory, 'c3'),
    );
    expect(refused.isError).toBe(true);
    expect(refused.text).toContain('allow_duplicate');
  });
});
