import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isAlive } from '../../../test/fixtures/bash/index.js';
import { nextEvent, settled } from '../../../test/support/waiting.js';
import { createTaskService } from '../../registry/index.js';
import { createSessionRuntime, type SessionRuntime } from '../../session/index.js';
import { createMemorySessionStore, openSqliteSessionStore, type SessionStore } from '../../store/index.js';
import type { Logger } from '../../tasks/index.js';
import { scriptedModel } from '../../testing/index.js';
import { BashExecutor, systemClock } from '../bash/index.js';
import { createSubagentProducer, type SubagentProducer } from '../subagent/index.js';
import { createWorkflowProducer, type WorkflowProducer } from './index.js';

const fixtures = new URL('../../../test/fixtures/workflows/', import.meta.url).pathname;
const crashChild = join(fixtures, 'crash-child.mjs');

const logger: Logger = { warn() {} };
const cleanups: Array<() => Promise<void> | void> = [];
const directories: string[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function temporaryDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'errand-workflow-it-'));
  directories.push(directory);
  return directory;
}

function count(dir: string, step: string): number {
  const file = join(dir, `${step}.count`);
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).length : 0;
}

/** Resolves once `file` exists (a fixture signals readiness by writing it). */
async function fileAppears(file: string): Promise<void> {
  while (!existsSync(file)) await new Promise((resolve) => setTimeout(resolve, 10));
}

/** Runs the crash child until it prints READY, then kills it with SIGKILL. */
async function runAndKill(file: string, dir: string): Promise<void> {
  const child = spawn(process.execPath, [crashChild, file, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('READY')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`the crash child exited early (${code}): ${stderr}`)));
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

interface Setup {
  readonly store: SessionStore;
  readonly runtime: SessionRuntime;
  readonly workflows: WorkflowProducer;
  readonly subagents: SubagentProducer;
}

describe('ctx.bash', () => {
  it('runs a real command as a step; cancelling the run kills its process group', async () => {
    const store = createMemorySessionStore();
    const tasks = createTaskService({ logger });
    tasks.attachController('test');
    const executor = new BashExecutor();
    const runtime = createSessionRuntime({ store, tasks, model: scriptedModel([{ text: 'ok' }]), logger });
    const workflows = createWorkflowProducer({
      tasks,
      store,
      directory: fixtures,
      executor,
      logger,
      policyOf: (id) => runtime.policyOf(id),
    });
    cleanups.push(async () => {
      await workflows.dispose();
      await runtime.dispose();
      await executor.dispose();
      await tasks.dispose();
    });
    const session = runtime.createSession({ id: 'main' });
    const dir = temporaryDirectory();
    await workflows.start({ script: 'slow-command.mjs', owner: session.owner, args: { dir } });
    await fileAppears(join(dir, 'pid'));
    const pid = Number(readFileSync(join(dir, 'pid'), 'utf8'));
    expect(isAlive(pid)).toBe(true);
    const ended = settled(tasks, 'workflow-1');
    await workflows.cancel('workflow-1', { caller: session.owner, initiator: 'user' });
    expect(await ended).toMatchObject({ status: 'killed', stopInitiator: 'user' });
    // done settled only after the command's process group was gone.
    expect(isAlive(pid)).toBe(false);
    expect(store.getStep('workflow-1', 'slow')).toMatchObject({ state: 'failed' });
    expect(store.getRun('workflow-1')).toMatchObject({ status: 'killed', stopInitiator: 'user' });
  });

  it('a replayed command step does not run the command again', async () => {
    const store = createMemorySessionStore();
    const tasks = createTaskService({ logger });
    tasks.attachController('test');
    const runtime = createSessionRuntime({ store, tasks, model: scriptedModel([]), logger });
    const workflows = createWorkflowProducer({ tasks, store, directory: fixtures, logger });
    cleanups.push(async () => {
      await workflows.dispose();
      await runtime.dispose();
      await tasks.dispose();
    });
    const session = runtime.createSession({ id: 'main' });
    const dir = temporaryDirectory();
    const failed = settled(tasks, 'workflow-1');
    await workflows.start({
      script: 'counted.mjs',
      owner: session.owner,
      args: { dir, viaBash: true, requireFlag: true },
    });
    expect(await failed).toMatchObject({ status: 'failed' });
    expect(store.getStep('workflow-1', 'second')).toMatchObject({
      state: 'done',
      result: expect.objectContaining({ exitCode: 0 }),
    });
    writeFileSync(join(dir, 'flag'), '');
    const completed = settled(tasks, 'workflow-1');
    await workflows.resume('workflow-1', { caller: session.owner });
    expect(await completed).toMatchObject({ status: 'completed' });
    expect([count(dir, 'first'), count(dir, 'second'), count(dir, 'third')]).toEqual([1, 1, 1]);
  });
});

describe('resume after a crash', () => {
  it('a run killed with SIGKILL resumes from the SQLite journal without re-running finished steps', async () => {
    const home = temporaryDirectory();
    const dir = temporaryDirectory();
    const file = join(home, 'errand.sqlite');
    await runAndKill(file, dir);

    const store = openSqliteSessionStore({ file });
    cleanups.push(() => store.close());
    expect(store.getRun('workflow-1')).toMatchObject({
      status: 'running',
      sessionId: 's1',
      taskId: 'workflow-1',
    });
    expect(store.getSteps('workflow-1').map((step) => [step.name, step.state])).toEqual([
      ['first', 'done'],
      ['review', 'done'],
      ['second', 'done'],
      ['pause@until', 'done'],
    ]);
    expect([count(dir, 'first'), count(dir, 'second'), count(dir, 'third')]).toEqual([1, 1, 0]);

    // A new process: a minute later than the wake-up time, so the journaled sleep has nothing left to wait.
    const later = { now: () => Date.now() + 120_000, schedule: systemClock.schedule };
    const parentModel = scriptedModel([{ text: 'the run finished' }]);
    const childModel = scriptedModel([], { whenExhausted: 'throw' });
    const runtime = createSessionRuntime({ store, model: parentModel, logger });
    runtime.tasks.attachController('test');
    const subagents = createSubagentProducer({ tasks: runtime.tasks, store, model: childModel, logger });
    const workflows = createWorkflowProducer({
      tasks: runtime.tasks,
      store,
      directory: fixtures,
      subagents,
      logger,
      clock: later,
      policyOf: (id) => runtime.policyOf(id),
    });
    const setup: Setup = { store, runtime, workflows, subagents };
    cleanups.push(async () => {
      await setup.workflows.dispose();
      await setup.subagents.dispose();
      await setup.runtime.dispose();
    });
    const session = runtime.resumeSession('s1');
    expect(store.getTask('workflow-1', 's1')).toMatchObject({ status: 'lost' });

    const ended = settled(runtime.tasks, 'workflow-1');
    const woke = nextEvent(session, (event) => event.type === 'turn-end');
    const started = Date.now();
    const resumed = await workflows.resume('workflow-1', { caller: session.owner });
    expect(resumed.runId).toBe('workflow-1');
    const snapshot = await ended;
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(snapshot).toMatchObject({
      id: 'workflow-1',
      status: 'completed',
      // first, review and second are replayed; the sleep finishes on its stored deadline; third runs.
      detail: { stepsReplayed: 3, stepsDone: 2 },
    });
    expect(JSON.parse(snapshot.resultText!)).toEqual({
      first: 'first',
      review: 'the plan looks sound',
      second: 'second',
      third: 'third',
    });
    // Finished steps were not run again: their counters still say 1, and the subagent's model was never asked.
    expect([count(dir, 'first'), count(dir, 'second'), count(dir, 'third')]).toEqual([1, 1, 1]);
    expect(childModel.requests).toHaveLength(0);
    expect(store.getRun('workflow-1')).toMatchObject({ status: 'completed' });
    expect(store.getTask('workflow-1', 's1')).toMatchObject({ status: 'completed' });
    await woke;
    const notification = store
      .listMessages('s1')
      .map((message) => message.content.text ?? '')
      .find((text) => text.includes('<task-id>workflow-1</task-id>'));
    expect(notification).toContain('Workflow "durable run" completed');
  });
});
