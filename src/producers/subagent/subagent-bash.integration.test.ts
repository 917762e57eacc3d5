import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isAlive } from '../../../test/fixtures/bash/index.js';
import { deferred, settled } from '../../../test/support/waiting.js';
import { createTaskService } from '../../registry/index.js';
import { createSessionRuntime, type SessionRuntime } from '../../session/index.js';
import { createMemorySessionStore, type SessionStore } from '../../store/index.js';
import { createTrustedCaller, type Logger, type TaskService, type TaskSnapshot } from '../../tasks/index.js';
import { type ScriptedStep, scriptedModel } from '../../testing/index.js';
import { BashExecutor, createBashProducer } from '../bash/index.js';
import { createSubagentProducer, type SubagentProducer, type SubagentProducerOptions } from './index.js';

const logger: Logger = { warn() {} };
const everything = createTrustedCaller('test');
const cleanups: Array<() => Promise<void>> = [];
const directories: string[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

interface Harness {
  readonly store: SessionStore;
  readonly tasks: TaskService;
  readonly runtime: SessionRuntime;
  readonly subagents: SubagentProducer;
  readonly dir: string;
}

function harness(childSteps: ScriptedStep[], options: Partial<SubagentProducerOptions> = {}): Harness {
  const store = createMemorySessionStore();
  const tasks = createTaskService({ logger });
  const executor = new BashExecutor();
  const bash = createBashProducer({ tasks, executor });
  let runtime: SessionRuntime | undefined;
  const subagents = createSubagentProducer({
    tasks,
    store,
    model: scriptedModel(childSteps),
    bash,
    logger,
    policyOf: (id) => runtime?.policyOf(id),
    ...options,
  });
  runtime = createSessionRuntime({ store, tasks, model: scriptedModel([]), logger });
  // The test collects the parent's subagents; the children's own task tools serve the children.
  tasks.attachController('parent-test', {
    serves: (owner) => runtime?.getSession(owner.sessionId)?.owner === owner,
  });
  const dir = mkdtempSync(join(tmpdir(), 'errand-subagent-'));
  directories.push(dir);
  cleanups.push(async () => {
    await subagents.dispose();
    await runtime.dispose();
    bash.dispose();
    await executor.dispose();
    await tasks.dispose();
  });
  return { store, tasks, runtime, subagents, dir };
}

function bashTasks(tasks: TaskService): TaskSnapshot[] {
  return tasks.list(everything).filter((task) => task.kind === 'bash');
}

function notificationEntries(store: SessionStore, sessionId: string) {
  return store.listLedger(sessionId).filter((entry) => entry.kind === 'notification');
}

/** A background command that waits for `<dir>/go`, then ends on its own. */
function waitForGo(dir: string): string {
  return `while [ ! -f "${join(dir, 'go')}" ]; do sleep 0.05; done; echo finished`;
}

describe('a subagent and its own background bash', () => {
  it('cancelling the subagent cancels its running background command; nothing of the child is notified', async () => {
    const blocked = deferred();
    const h = harness([
      {
        toolCalls: [
          {
            name: 'bash',
            input: { command: 'exec sleep 600', run_in_background: true, description: 'server' },
          },
        ],
      },
      async () => {
        blocked.resolve();
        return new Promise(() => {});
      },
    ]);
    const parent = h.runtime.createSession({ id: 'parent' });
    const started = await h.subagents.start({
      prompt: 'start a server',
      description: 'server work',
      owner: parent.owner,
    });
    await blocked.promise;
    const [server] = bashTasks(h.tasks);
    expect(server).toMatchObject({
      status: 'running',
      ownerSessionId: h.subagents.childSessionOf(started.taskId),
    });
    const pid = server!.detail.pid as number;
    expect(isAlive(pid)).toBe(true);

    const serverEnded = settled(h.tasks, (snapshot) => snapshot.id === server!.id);
    const agentEnded = settled(h.tasks, (snapshot) => snapshot.id === started.taskId);
    await h.tasks.kill(started.taskId, parent.owner, 'not needed', { initiator: 'user' });
    expect(await serverEnded).toMatchObject({ status: 'killed', stopInitiator: 'system' });
    expect(isAlive(pid)).toBe(false);
    expect(await agentEnded).toMatchObject({ status: 'killed' });
    const childId = h.subagents.childSessionOf(started.taskId)!;
    expect(h.store.getSession(childId)?.state).toBe('closed');
    expect(notificationEntries(h.store, childId)).toEqual([]);
  });

  it('a completed run stops what it left running (by default), quietly', async () => {
    const h = harness([
      { toolCalls: [{ name: 'bash', input: { command: 'exec sleep 600', run_in_background: true } }] },
      { text: 'started it' },
    ]);
    const parent = h.runtime.createSession({ id: 'parent' });
    const commandEnded = settled(h.tasks, (snapshot) => snapshot.kind === 'bash');
    const started = await h.subagents.start({ prompt: 'start it', owner: parent.owner });
    const result = await started.result;
    expect(result).toMatchObject({ status: 'completed', text: 'started it', lingering: false });
    // Closing the child stopped the command before the run's result was settled.
    const command = await commandEnded;
    expect(command).toMatchObject({ status: 'killed', stopInitiator: 'system' });
    expect(isAlive(command.detail.pid as number)).toBe(false);
    expect(h.store.getSession(result.childSessionId!)?.state).toBe('closed');
    expect(notificationEntries(h.store, result.childSessionId!)).toEqual([]);
  });

  it('with keepBackgroundWork, the sealed child keeps its command; its completion after the seal is not notified', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'errand-subagent-go-'));
    directories.push(dir);
    const h = harness(
      [
        { toolCalls: [{ name: 'bash', input: { command: waitForGo(dir), run_in_background: true } }] },
        { text: 'the watcher runs' },
      ],
      { keepBackgroundWork: true },
    );
    const parent = h.runtime.createSession({ id: 'parent' });
    const started = await h.subagents.start({ prompt: 'start the watcher', owner: parent.owner });
    const result = await started.result;
    expect(result).toMatchObject({ status: 'completed', lingering: true });
    const childId = result.childSessionId!;
    const child = h.subagents.childRuntime.getSession(childId)!;
    expect(child.sealed).toBe(true);
    expect(h.subagents.childRuntime.policyOf(childId)?.sealed).toBe(true);
    const [watcher] = bashTasks(h.tasks);
    expect(watcher).toMatchObject({ status: 'running' });

    const closed = new Promise<void>((resolve) => {
      h.subagents.childRuntime.onSessionEvent((sessionId, event) => {
        if (sessionId === childId && event.type === 'state' && event.state === 'closed') resolve();
      });
    });
    const watcherEnded = settled(h.tasks, (snapshot) => snapshot.id === watcher!.id);
    writeFileSync(join(dir, 'go'), '');
    expect(await watcherEnded).toMatchObject({ status: 'completed', detail: { exitCode: 0 } });
    // The child closes once its last command ended; the completion never reached its ledger or a turn.
    await closed;
    expect(notificationEntries(h.store, childId)).toEqual([]);
    expect(h.store.listMessages(childId).filter((message) => message.role === 'assistant')).toHaveLength(2);
    expect(existsSync(join(dir, 'go'))).toBe(true);
  });

  it('a resume that is closing its lingering child when the producer is disposed runs nothing', async () => {
    const h = harness(
      [
        { toolCalls: [{ name: 'bash', input: { command: 'exec sleep 600', run_in_background: true } }] },
        { text: 'the watcher runs' },
        { text: 'resumed' },
      ],
      { keepBackgroundWork: true },
    );
    const parent = h.runtime.createSession({ id: 'parent' });
    const ended = settled(h.tasks, (snapshot) => snapshot.kind === 'agent');
    const started = await h.subagents.start({ prompt: 'start the watcher', owner: parent.owner });
    expect(await started.result).toMatchObject({ status: 'completed', lingering: true });
    expect(await ended).toMatchObject({ status: 'completed' });
    const [watcher] = bashTasks(h.tasks);
    const resuming = h.subagents.resume(started.taskId, 'one more thing', { caller: parent.owner });
    await h.subagents.dispose();
    await expect(resuming).rejects.toMatchObject({ code: 'SUBAGENT_PRODUCER_DISPOSED' });
    expect(h.tasks.get(started.taskId, parent.owner)).toMatchObject({ status: 'completed', attempt: 1 });
    // The lingering child was closed: its command is gone, and so is its task.
    expect(isAlive(watcher!.detail.pid as number)).toBe(false);
    expect(bashTasks(h.tasks)).toEqual([]);
  });

  it('background bash of a subagent gets the runtime cap', async () => {
    const blocked = deferred();
    const h = harness(
      [
        { toolCalls: [{ name: 'bash', input: { command: 'exec sleep 600', run_in_background: true } }] },
        async () => {
          blocked.resolve();
          return new Promise(() => {});
        },
      ],
      { backgroundBashRuntimeCapMs: 200 },
    );
    const parent = h.runtime.createSession({ id: 'parent' });
    await h.subagents.start({ prompt: 'run long', owner: parent.owner });
    await blocked.promise;
    const [command] = bashTasks(h.tasks);
    const ended = await settled(h.tasks, (snapshot) => snapshot.id === command!.id);
    expect(ended).toMatchObject({ status: 'killed', detail: { reason: 'timed_out' } });
  });
});
