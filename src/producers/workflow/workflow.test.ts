import {
  copyFileSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { nextEvent, notifications, settled } from '../../../test/support/waiting.js';
import { WORKFLOW_NEXT_STEPS, WORKFLOW_PROGRESS_NEXT_STEPS } from '../../notifications/index.js';
import { createTaskService } from '../../registry/index.js';
import {
  createSessionRuntime,
  type Session,
  type SessionEvent,
  type SessionRuntime,
} from '../../session/index.js';
import { createMemorySessionStore, type SessionStore } from '../../store/index.js';
import {
  ErrandError,
  type ErrandErrorCode,
  type Logger,
  type Owner,
  type TaskService,
} from '../../tasks/index.js';
import { scriptedModel } from '../../testing/index.js';
import { createTaskTools, executeTool, type ToolContext } from '../../tools/index.js';
import { createManualClock, type ManualClock } from '../bash/index.js';
import { createSubagentProducer, type SubagentProducer } from '../subagent/index.js';
import {
  createWorkflowProducer,
  createWorkflowTools,
  type WorkflowProducer,
  type WorkflowProducerOptions,
  type WorkflowTools,
  workflowShutdownSweep,
} from './index.js';

const fixtures = new URL('../../../test/fixtures/workflows/', import.meta.url).pathname;

const logger: Logger & { warnings: string[] } = {
  warnings: [],
  warn(message) {
    this.warnings.push(message);
  },
};

interface Harness {
  readonly store: SessionStore;
  readonly tasks: TaskService;
  readonly runtime: SessionRuntime;
  readonly workflows: WorkflowProducer;
  readonly tools: WorkflowTools;
  readonly taskTools: ReturnType<typeof createTaskTools>;
  readonly session: Session;
  readonly model: ReturnType<typeof scriptedModel>;
  readonly clock: ManualClock;
  readonly dir: string;
  readonly subagents: SubagentProducer | undefined;
}

const opened: Harness[] = [];
const directories: string[] = [];

afterEach(async () => {
  for (const harness of opened.splice(0)) {
    await harness.workflows.dispose();
    await harness.subagents?.dispose();
    await harness.runtime.dispose();
    harness.taskTools.dispose();
    await harness.tasks.dispose();
  }
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function temporaryDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'errand-workflow-'));
  directories.push(directory);
  return directory;
}

function harness(
  options: {
    readonly producer?: Partial<WorkflowProducerOptions>;
    readonly notifyModelStops?: boolean;
    readonly childModel?: ReturnType<typeof scriptedModel>;
  } = {},
): Harness {
  const store = createMemorySessionStore();
  const tasks = createTaskService({ logger });
  const clock = createManualClock(1_000_000);
  const model = scriptedModel([]);
  const taskTools = createTaskTools({ tasks });
  let runtime: SessionRuntime | undefined;
  const subagents = options.childModel
    ? createSubagentProducer({ tasks, store, model: options.childModel, logger })
    : undefined;
  const workflows = createWorkflowProducer({
    tasks,
    store,
    directory: fixtures,
    clock,
    logger,
    policyOf: (id) => runtime?.policyOf(id),
    ...(subagents ? { subagents } : {}),
    ...options.producer,
  });
  const tools = createWorkflowTools({ producer: workflows });
  runtime = createSessionRuntime({
    store,
    tasks,
    model,
    logger,
    tools: () => [...tools.tools, ...taskTools.tools],
    onSessionShutdown: workflowShutdownSweep(workflows),
    ...(options.notifyModelStops ? { notifications: { notifyModelStops: ['workflow'] } } : {}),
  });
  const session = runtime.createSession({ id: 'main' });
  const created: Harness = {
    store,
    tasks,
    runtime,
    workflows,
    tools,
    taskTools,
    session,
    model,
    clock,
    dir: temporaryDirectory(),
    subagents,
  };
  opened.push(created);
  return created;
}

function context(owner: Owner, id = 'call_1'): ToolContext {
  return { caller: owner, toolCallId: id, signal: new AbortController().signal };
}

function count(dir: string, step: string): number {
  const file = join(dir, `${step}.count`);
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).length : 0;
}

function gates(): Map<string, (value: string) => void> {
  const registry = globalThis as { __errandWorkflowGates?: Map<string, (value: string) => void> };
  registry.__errandWorkflowGates ??= new Map();
  return registry.__errandWorkflowGates;
}

async function gateReady(name: string): Promise<(value: string) => void> {
  for (;;) {
    const gate = gates().get(name);
    if (gate) {
      gates().delete(name);
      return gate;
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('workflow runs', () => {
  it('runs a script to its end: journaled steps, a notification with the result and the next step', async () => {
    const h = harness();
    h.model.push({ text: 'noted' });
    const woke = nextEvent(h.session, (event) => event.type === 'turn-end');
    const started = await executeTool(
      h.tools.run,
      { script: 'counted.mjs', input: { dir: h.dir }, description: 'count things' },
      context(h.session.owner),
    );
    expect(started).toMatchObject({ isError: false, value: { kind: 'background', taskId: 'workflow-1' } });
    await woke;
    const [text] = notifications(h.session);
    expect(text).toContain('<task-id>workflow-1</task-id>');
    expect(text).toContain('Workflow "count things" completed');
    expect(text).toContain('"third": "third"');
    expect(text).toContain(WORKFLOW_NEXT_STEPS.completed);
    expect(h.store.getRun('workflow-1')).toMatchObject({
      status: 'completed',
      taskId: 'workflow-1',
      result: { first: 'first', second: 'second', third: 'third' },
    });
    expect(h.store.getSteps('workflow-1').map((step) => [step.name, step.state])).toEqual([
      ['first', 'done'],
      ['second', 'done'],
      ['pause@until', 'done'],
      ['pause', 'done'],
      ['third', 'done'],
    ]);
    const output = await executeTool(
      h.taskTools.taskOutput,
      { task_id: 'workflow-1' },
      context(h.session.owner),
    );
    expect(output.text).toContain('"first": "first"');
    expect(output.text).toMatch(/\[status: completed\]$/);
  });

  it('resume keeps the run id, skips finished steps and resets the settlement', async () => {
    const h = harness();
    h.model.push({ text: 'it failed' }, { text: 'it worked' });
    const failed = settled(h.tasks, 'workflow-1');
    const notified = nextEvent(h.session, (event) => event.type === 'turn-end');
    await h.workflows.start({
      script: 'counted.mjs',
      owner: h.session.owner,
      args: { dir: h.dir, requireFlag: true },
    });
    expect(await failed).toMatchObject({ status: 'failed', error: 'the flag file is missing' });
    await notified;
    expect(notifications(h.session)[0]).toContain(WORKFLOW_NEXT_STEPS.failed);
    expect(h.store.getRun('workflow-1')).toMatchObject({
      status: 'failed',
      error: 'the flag file is missing',
    });
    expect([count(h.dir, 'first'), count(h.dir, 'second'), count(h.dir, 'third')]).toEqual([1, 1, 0]);

    writeFileSync(join(h.dir, 'flag'), '');
    const woke = nextEvent(h.session, (event) => event.type === 'turn-end');
    const ended = settled(h.tasks, 'workflow-1');
    const resumed = await executeTool(h.tools.resume, { task_id: 'workflow-1' }, context(h.session.owner));
    expect(resumed.value).toEqual({ kind: 'background', taskId: 'workflow-1' });
    expect(h.tasks.get('workflow-1', h.session.owner)).toMatchObject({
      status: 'running',
      attempt: 2,
      reported: false,
      error: undefined,
      endedAt: undefined,
    });
    // first, second and the sleep are replayed; only third runs.
    expect(await ended).toMatchObject({ status: 'completed', detail: { stepsReplayed: 3, stepsDone: 1 } });
    await woke;
    expect([count(h.dir, 'first'), count(h.dir, 'second'), count(h.dir, 'third')]).toEqual([1, 1, 1]);
    expect(h.store.getRun('workflow-1')).toMatchObject({ status: 'completed' });
    expect(notifications(h.session)).toHaveLength(2);
    expect(h.tasks.list(h.session.owner).map((task) => task.id)).toEqual(['workflow-1']);
  });

  it('a run resumed after its session was closed and resumed in the same runtime is notified again', async () => {
    const h = harness();
    h.model.push({ text: 'it failed' }, { text: 'it worked' });
    const failed = settled(h.tasks, 'workflow-1');
    const notified = nextEvent(h.session, (event) => event.type === 'turn-end');
    await h.workflows.start({
      script: 'counted.mjs',
      owner: h.session.owner,
      args: { dir: h.dir, requireFlag: true },
    });
    expect(await failed).toMatchObject({ status: 'failed' });
    await notified;
    expect(notifications(h.session)).toHaveLength(1);

    // The conversation is closed, then re-opened by the same long-running runtime.
    await h.session.close();
    const session = h.runtime.resumeSession('main');
    writeFileSync(join(h.dir, 'flag'), '');
    const ended = settled(h.tasks, 'workflow-1');
    const resumed = await executeTool(h.tools.resume, { task_id: 'workflow-1' }, context(session.owner));
    expect(resumed.value).toEqual({ kind: 'background', taskId: 'workflow-1' });
    expect(await ended).toMatchObject({ status: 'completed' });
    // The new end is admitted to the ledger (not mistaken for the first run's notification) and delivered.
    await vi.waitFor(() =>
      expect(h.store.listLedger('main').filter((entry) => entry.kind === 'notification')).toHaveLength(2),
    );
    await session.whenIdle();
    const texts = notifications(session);
    expect(texts).toHaveLength(2);
    expect(texts[1]).toContain('completed');
    expect(
      h.store
        .listLedger('main')
        .filter((entry) => entry.kind === 'notification')
        .map((entry) => entry.state),
    ).toEqual(['delivered', 'delivered']);
  });

  it('resume refuses a changed script, a completed run and a running one', async () => {
    const directory = temporaryDirectory();
    copyFileSync(join(fixtures, 'counted.mjs'), join(directory, 'flow.mjs'));
    const h = harness({ producer: { directory } });
    const failed = settled(h.tasks, 'workflow-1');
    await h.workflows.start({
      script: 'flow.mjs',
      owner: h.session.owner,
      args: { dir: h.dir, requireFlag: true },
    });
    await failed;
    writeFileSync(
      join(directory, 'flow.mjs'),
      `${readFileSync(join(directory, 'flow.mjs'), 'utf8')}\n// edited\n`,
    );
    await expect(h.workflows.resume('workflow-1', { caller: h.session.owner })).rejects.toMatchObject({
      code: 'WORKFLOW_SCRIPT_CHANGED',
    });
    const other = harness();
    const finished = settled(other.tasks, 'workflow-1');
    await other.workflows.start({
      script: 'counted.mjs',
      owner: other.session.owner,
      args: { dir: other.dir },
    });
    await finished;
    await expect(other.workflows.resume('workflow-1', { caller: other.session.owner })).rejects.toMatchObject(
      {
        code: 'WORKFLOW_RUN_FINISHED',
      },
    );
    await other.workflows.start({
      script: 'gated.mjs',
      owner: other.session.owner,
      args: { gate: 'refuse' },
    });
    await gateReady('refuse');
    await expect(other.workflows.resume('workflow-2', { caller: other.session.owner })).rejects.toMatchObject(
      {
        code: 'WORKFLOW_RUN_ACTIVE',
      },
    );
    // Another session cannot see the run at all.
    const stranger = other.runtime.createSession({ id: 'stranger' });
    await expect(other.workflows.resume('workflow-1', { caller: stranger.owner })).rejects.toMatchObject({
      code: 'TASK_NOT_FOUND',
    });
  });

  it('amend supersedes a running run: the old one is stopped and not notified; finished steps carry over', async () => {
    const h = harness();
    h.model.push({ text: 'amended run done' });
    await h.workflows.start({
      script: 'gated.mjs',
      owner: h.session.owner,
      args: { gate: 'amend', dir: h.dir },
      description: 'deploy',
    });
    await gateReady('amend');
    // Give the superseded run a step that the amended script shares.
    h.store.recordStep('workflow-1', {
      name: 'first',
      state: 'done',
      result: 'first',
      startedAt: 1,
      endedAt: 2,
    });
    const oldEnded = settled(h.tasks, 'workflow-1');
    const newEnded = settled(h.tasks, 'workflow-2');
    const woke = nextEvent(h.session, (event) => event.type === 'turn-end');
    const amended = await executeTool(
      h.tools.amend,
      { task_id: 'workflow-1', script: 'amended.mjs' },
      context(h.session.owner),
    );
    expect(amended.isError).toBe(false);
    expect(amended.value).toEqual({ kind: 'background', taskId: 'workflow-2', superseded: 'workflow-1' });
    expect(amended.text).toContain('supersedes workflow-1, with 2 finished steps carried over');
    expect(await oldEnded).toMatchObject({ status: 'killed', detail: { supersededBy: 'workflow-2' } });
    expect(await newEnded).toMatchObject({ status: 'completed', resultText: 'first then fixed' });
    await woke;
    const delivered = notifications(h.session);
    expect(delivered).toHaveLength(1);
    expect(delivered[0]).toContain('<task-id>workflow-2</task-id>');
    expect(delivered.join('\n')).not.toContain('<task-id>workflow-1</task-id>');
    expect(h.store.getRun('workflow-1')).toMatchObject({ status: 'superseded', supersededBy: 'workflow-2' });
    expect(h.store.getRun('workflow-2')).toMatchObject({ status: 'completed', result: 'first then fixed' });
    // The carried step did not run again; the new one did.
    expect([count(h.dir, 'first'), count(h.dir, 'fixed')]).toEqual([0, 1]);
    await expect(
      h.workflows.amend('workflow-1', { caller: h.session.owner, script: 'amended.mjs' }),
    ).rejects.toMatchObject({
      code: 'WORKFLOW_RUN_SUPERSEDED',
    });
    await expect(h.workflows.resume('workflow-2', { caller: h.session.owner })).rejects.toMatchObject({
      code: 'WORKFLOW_RUN_FINISHED',
    });
  });

  it('amend of a failed run claims nothing twice and can drop the finished steps', async () => {
    const h = harness();
    h.model.push({ text: 'failed' }, { text: 'done' });
    const notified = nextEvent(h.session, (event) => event.type === 'turn-end');
    await h.workflows.start({
      script: 'counted.mjs',
      owner: h.session.owner,
      args: { dir: h.dir, requireFlag: true },
    });
    await notified;
    const woke = nextEvent(h.session, (event) => event.type === 'turn-end');
    const newEnded = settled(h.tasks, 'workflow-2');
    const result = await h.workflows.amend('workflow-1', {
      caller: h.session.owner,
      script: 'amended.mjs',
      keepFinishedSteps: false,
    });
    expect(result).toMatchObject({ runId: 'workflow-2', superseded: 'workflow-1', carriedSteps: 0 });
    await newEnded;
    await woke;
    expect(count(h.dir, 'first')).toBe(2);
    expect(notifications(h.session).map((text) => /<task-id>(.*)<\/task-id>/.exec(text)?.[1])).toEqual([
      'workflow-1',
      'workflow-2',
    ]);
  });
});

describe('stopping workflow runs', () => {
  it('a user stop records the initiator first; the notification says not to resume it', async () => {
    const h = harness();
    h.model.push({ text: 'understood' });
    await h.workflows.start({ script: 'gated.mjs', owner: h.session.owner, args: { gate: 'user-stop' } });
    await gateReady('user-stop');
    const woke = nextEvent(h.session, (event) => event.type === 'turn-end');
    const result = await h.taskTools.stop.stopBackgroundTask('workflow-1', {
      initiator: 'user',
      caller: h.session.owner,
    });
    expect(result).toMatchObject({ ok: true, snapshot: { stopInitiator: 'user' } });
    await woke;
    const [text] = notifications(h.session);
    expect(text).toContain('<status>killed</status>');
    expect(text).toContain('was stopped by the user');
    expect(text).toContain(WORKFLOW_NEXT_STEPS.stoppedByUser);
    expect(h.store.getRun('workflow-1')).toMatchObject({ status: 'killed', stopInitiator: 'user' });
  });

  it('a model stop (notified when the harness asks for it) points at amending the run', async () => {
    const h = harness({ notifyModelStops: true });
    h.model.push({ text: 'will amend' });
    await h.workflows.start({ script: 'gated.mjs', owner: h.session.owner, args: { gate: 'model-stop' } });
    await gateReady('model-stop');
    const woke = nextEvent(h.session, (event) => event.type === 'turn-end');
    const snapshot = await h.workflows.cancel('workflow-1', { caller: h.session.owner, initiator: 'model' });
    expect(snapshot).toMatchObject({ status: 'stopping', stopInitiator: 'model' });
    await woke;
    const [text] = notifications(h.session);
    expect(text).toContain('was stopped by you');
    expect(text).toContain(WORKFLOW_NEXT_STEPS.stoppedByModel);
    expect(text).not.toContain(WORKFLOW_NEXT_STEPS.stoppedByUser);
    expect(h.store.getRun('workflow-1')).toMatchObject({ status: 'killed', stopInitiator: 'model' });
  });

  it('closing the session stops its runs (initiator system) before its tasks are disposed', async () => {
    const h = harness();
    await h.workflows.start({ script: 'gated.mjs', owner: h.session.owner, args: { gate: 'shutdown' } });
    await gateReady('shutdown');
    const ended = settled(h.tasks, 'workflow-1');
    await h.session.close();
    expect(await ended).toMatchObject({ status: 'killed', stopInitiator: 'system' });
    expect(h.store.getRun('workflow-1')).toMatchObject({ status: 'killed', stopInitiator: 'system' });
  });

  it('a script that ignores its signal is abandoned after the grace period', async () => {
    const h = harness({ producer: { cancelGraceMs: 2_000 } });
    await h.workflows.start({ script: 'ignores-cancel.mjs', owner: h.session.owner });
    const ended = settled(h.tasks, 'workflow-1');
    await h.tasks.kill('workflow-1', h.session.owner, 'stop', { initiator: 'user' });
    h.clock.advance(1_999);
    await new Promise((resolve) => setImmediate(resolve));
    expect(h.tasks.get('workflow-1', h.session.owner).status).toBe('stopping');
    h.clock.advance(1);
    expect(await ended).toMatchObject({ status: 'killed', detail: { abandoned: true } });
    expect(logger.warnings.some((warning) => warning.includes('was abandoned'))).toBe(true);
  });

  it('leaves no timer behind when the producer is disposed after its runs ended', async () => {
    const h = harness();
    h.model.push({ text: 'noted' }, { text: 'noted' });
    const first = settled(h.tasks, 'workflow-1');
    await h.workflows.start({ script: 'counted.mjs', owner: h.session.owner, args: { dir: h.dir } });
    expect(await first).toMatchObject({ status: 'completed' });
    const second = settled(h.tasks, 'workflow-2');
    await h.workflows.start({ script: 'gated.mjs', owner: h.session.owner, args: { gate: 'ended' } });
    await gateReady('ended');
    await h.tasks.kill('workflow-2', h.session.owner, 'stop', { initiator: 'user' });
    expect(await second).toMatchObject({ status: 'killed', detail: { reason: 'cancelled' } });
    await h.session.whenIdle();
    expect(h.clock.pending).toBe(0);
    // Disposal stops every run it knows, ended ones included: none may arm a grace timer.
    await h.workflows.dispose();
    expect(h.clock.pending).toBe(0);
  });

  it('a start, resume or amend still loading its script when the producer is disposed runs nothing', async () => {
    const h = harness();
    const failed = settled(h.tasks, 'workflow-1');
    await h.workflows.start({
      script: 'counted.mjs',
      owner: h.session.owner,
      args: { dir: h.dir, requireFlag: true },
    });
    await failed;
    const starting = h.workflows.start({
      script: 'gated.mjs',
      owner: h.session.owner,
      args: { gate: 'late' },
    });
    const resuming = h.workflows.resume('workflow-1', { caller: h.session.owner });
    const amending = h.workflows.amend('workflow-1', { caller: h.session.owner, script: 'amended.mjs' });
    // Handled at once: each may reject while the disposal (or another of them) is still awaited.
    const outcomes = [starting, resuming, amending].map((late) =>
      late.then(
        () => undefined,
        (error: unknown) => error,
      ),
    );
    await h.workflows.dispose();
    for (const outcome of await Promise.all(outcomes)) {
      expect(outcome).toMatchObject({ code: 'WORKFLOW_PRODUCER_DISPOSED' });
    }
    expect(h.tasks.list(h.session.owner).map((task) => [task.id, task.status])).toEqual([
      ['workflow-1', 'failed'],
    ]);
    expect(h.store.getRun('workflow-1')).toMatchObject({ status: 'failed' });
  });

  it('a legacy run cannot be cancelled: the stop dispatch answers cancel_not_supported', async () => {
    const h = harness();
    h.model.push({ text: 'ok' });
    await h.workflows.start({
      script: 'gated.mjs',
      owner: h.session.owner,
      args: { gate: 'legacy' },
      legacy: true,
    });
    const gate = await gateReady('legacy');
    expect(h.tasks.get('workflow-1', h.session.owner)).toMatchObject({
      cancellable: false,
      detail: { legacy: true },
    });
    expect(
      await h.taskTools.stop.stopBackgroundTask('workflow-1', { initiator: 'user', caller: h.session.owner }),
    ).toMatchObject({
      ok: false,
      reason: 'cancel_not_supported',
    });
    const killed = await executeTool(
      h.taskTools.taskKill,
      { task_id: 'workflow-1' },
      context(h.session.owner),
    );
    expect(killed).toMatchObject({ isError: true });
    expect(killed.text).toContain('CANCEL_NOT_SUPPORTED');
    await expect(
      h.workflows.cancel('workflow-1', { caller: h.session.owner, initiator: 'user' }),
    ).rejects.toMatchObject({
      code: 'CANCEL_NOT_SUPPORTED',
    });
    expect(h.tasks.get('workflow-1', h.session.owner)).toMatchObject({
      status: 'running',
      stopInitiator: undefined,
    });
    await expect(h.workflows.resume('workflow-1', { caller: h.session.owner })).rejects.toMatchObject({
      code: 'WORKFLOW_RUN_NOT_RESUMABLE',
    });
    const ended = settled(h.tasks, 'workflow-1');
    gate('finish');
    expect(await ended).toMatchObject({ status: 'completed', resultText: 'gate opened' });
    expect(h.store.getRun('workflow-1')).toBeUndefined();
  });
});

describe('progress notifications', () => {
  it('a run without progress for stallAfterMs raises one stalled notification per stall', async () => {
    const h = harness({ producer: { stallAfterMs: 60_000 } });
    h.model.push({ text: 'checking' }, { text: 'checking again' }, { text: 'fine' });
    await h.workflows.start({
      script: 'gated.mjs',
      owner: h.session.owner,
      args: { gate: 'stall' },
      description: 'build',
    });
    const gate = await gateReady('stall');
    h.clock.advance(59_999);
    await h.session.whenIdle();
    expect(notifications(h.session)).toEqual([]);
    const woke = nextEvent(h.session, (event) => event.type === 'turn-end');
    h.clock.advance(1);
    await woke;
    let delivered = notifications(h.session);
    expect(delivered).toHaveLength(1);
    expect(delivered[0]).toContain('<event>stalled</event>');
    expect(delivered[0]).toContain('Workflow "build" has made no progress for 1 minute');
    expect(delivered[0]).toContain('waiting for the gate');
    expect(delivered[0]).toContain(WORKFLOW_PROGRESS_NEXT_STEPS.stalled);
    expect(h.tasks.get('workflow-1', h.session.owner).status).toBe('running');
    // Still stalled: no second notification.
    h.clock.advance(600_000);
    await h.session.whenIdle();
    expect(notifications(h.session)).toHaveLength(1);
    // Progress ends the stall; the next stall is reported again.
    gate('step two');
    const next = await gateReady('stall');
    const wokeAgain = nextEvent(h.session, (event) => event.type === 'turn-end');
    h.clock.advance(60_000);
    await wokeAgain;
    delivered = notifications(h.session);
    expect(delivered).toHaveLength(2);
    expect(delivered[1]).toContain('step two');
    const ended = settled(h.tasks, 'workflow-1');
    next('finish');
    await ended;
  });

  it('input needed: the question is notified, the run waits (not stalled) and continues with the answer', async () => {
    const h = harness({ producer: { stallAfterMs: 1_000 } });
    h.model.push({
      toolCalls: [{ name: 'workflow_answer', input: { task_id: 'workflow-1', answer: 'main' } }],
    });
    h.model.push({ text: 'answered' }, { text: 'deployed' });
    const asked = nextEvent(h.session, (event) => event.type === 'tool-call-end');
    await h.workflows.start({
      script: 'asks.mjs',
      owner: h.session.owner,
      args: { sleepMs: 30_000 },
      description: 'deploy',
    });
    const answered = (await asked) as Extract<SessionEvent, { type: 'tool-call-end' }>;
    expect(answered).toMatchObject({
      isError: false,
      text: 'Answered workflow run workflow-1; it continues.',
    });
    const [question] = notifications(h.session);
    expect(question).toContain('<event>input_needed</event>');
    expect(question).toContain('Which branch should be deployed?');
    expect(question).toContain('Answer it with workflow_answer (task_id "workflow-1")');
    await h.session.whenIdle();
    // It sleeps now: a sleeping run is not stalled.
    await new Promise((resolve) => setImmediate(resolve));
    h.clock.advance(29_999);
    await h.session.whenIdle();
    expect(notifications(h.session)).toHaveLength(1);
    const ended = settled(h.tasks, 'workflow-1');
    h.clock.advance(1);
    expect(await ended).toMatchObject({ status: 'completed', resultText: 'deploying main' });
    expect(h.store.getStep('workflow-1', 'input:Which branch should be deployed?')).toMatchObject({
      state: 'done',
      result: 'main',
    });
    expect(() => h.workflows.answer('workflow-1', 'late', h.session.owner)).toThrow(
      expect.objectContaining({ code: 'WORKFLOW_RUN_FINISHED' }),
    );
  });
});

describe('agent steps', () => {
  it('runs a subagent as a journaled step; a resumed run replays its answer', async () => {
    const childModel = scriptedModel([{ text: 'LGTM', usage: { inputTokens: 10, outputTokens: 2 } }], {
      whenExhausted: 'throw',
    });
    const h = harness({ childModel });
    const ended = settled(h.tasks, 'workflow-1');
    await h.workflows.start({ script: 'delegates.mjs', owner: h.session.owner });
    expect(await ended).toMatchObject({ status: 'completed' });
    expect(h.store.getRun('workflow-1')?.result).toEqual({ review: 'LGTM', tokens: 12 });
    const [child] = h.store.listSessions({ parentId: 'main' });
    expect(h.store.listMessages(child!.id).map((message) => message.content.text)).toEqual([
      'Review the change and answer in one line',
      'LGTM',
    ]);
    expect(h.store.getStep('workflow-1', 'review')).toMatchObject({ state: 'done' });
  });

  it('without a subagent producer, ctx.agent fails the run clearly', async () => {
    const h = harness();
    const ended = settled(h.tasks, 'workflow-1');
    await h.workflows.start({ script: 'delegates.mjs', owner: h.session.owner });
    expect((await ended).error).toContain('WORKFLOW_AGENT_UNAVAILABLE');
  });
});

describe('script validation', () => {
  it('loads nothing without a configured directory', async () => {
    const h = harness({ producer: { directory: undefined } });
    const result = await executeTool(h.tools.run, { script: 'counted.mjs' }, context(h.session.owner));
    expect(result.isError).toBe(true);
    expect(result.text).toContain('WORKFLOW_DIRECTORY_NOT_CONFIGURED');
    expect(h.tools.run.description).toContain('No workflow directory is configured');
  });

  it('names the problem: missing, outside the directory (also through a symlink), not JavaScript, no default export', async () => {
    const h = harness();
    const outside = temporaryDirectory();
    writeFileSync(join(outside, 'evil.mjs'), 'export default async () => "escaped";\n');
    const directory = temporaryDirectory();
    symlinkSync(join(outside, 'evil.mjs'), join(directory, 'link.mjs'));
    writeFileSync(join(directory, 'flow.ts'), 'export default async () => 1;\n');
    const linked = harness({ producer: { directory } });
    const cases: Array<[WorkflowProducer, string, ErrandErrorCode]> = [
      [h.workflows, 'missing.mjs', 'WORKFLOW_SCRIPT_NOT_FOUND'],
      [h.workflows, '../../../package.json', 'WORKFLOW_SCRIPT_OUTSIDE_DIRECTORY'],
      [h.workflows, join(outside, 'evil.mjs'), 'WORKFLOW_SCRIPT_OUTSIDE_DIRECTORY'],
      [linked.workflows, 'link.mjs', 'WORKFLOW_SCRIPT_OUTSIDE_DIRECTORY'],
      [linked.workflows, 'flow.ts', 'WORKFLOW_SCRIPT_UNSUPPORTED'],
      [h.workflows, 'not-a-workflow.mjs', 'WORKFLOW_SCRIPT_INVALID'],
    ];
    for (const [producer, script, code] of cases) {
      const error = await producer
        .start({ script, owner: h.session.owner })
        .catch((caught: unknown) => caught);
      expect(ErrandError.hasCode(error, code), `${script}: ${String(error)}`).toBe(true);
      expect((error as ErrandError).context).toMatchObject({ field: 'script' });
    }
    expect(h.tasks.list(h.session.owner)).toEqual([]);
    expect(h.store.listRuns()).toEqual([]);
  });

  it('validates options with messages naming the field', () => {
    const store = createMemorySessionStore();
    const tasks = createTaskService({ logger });
    expect(() => createWorkflowProducer({ tasks, store, stallAfterMs: -1 })).toThrow(
      'Expected `stallAfterMs` to be a positive integer no greater than 2147483647, or false, got -1 (number)',
    );
    expect(() => createWorkflowProducer({ tasks, store, commandOutputLimitBytes: 0 })).toThrow(
      'Expected `commandOutputLimitBytes` to be a positive integer, got 0 (number)',
    );
  });

  it('a step result that is not JSON fails the run', async () => {
    const directory = temporaryDirectory();
    writeFileSync(
      join(directory, 'bigint.mjs'),
      'export default async (ctx) => ctx.step("big", () => 10n);\n',
    );
    const h = harness({ producer: { directory } });
    const ended = settled(h.tasks, 'workflow-1');
    await h.workflows.start({ script: 'bigint.mjs', owner: h.session.owner });
    expect((await ended).error).toContain('WORKFLOW_RESULT_NOT_JSON');
  });

  it('two steps with the same name fail the run', async () => {
    const directory = temporaryDirectory();
    writeFileSync(
      join(directory, 'twice.mjs'),
      'export default async (ctx) => { await ctx.step("a", () => 1); await ctx.step("a", () => 2); };\n',
    );
    const h = harness({ producer: { directory } });
    const ended = settled(h.tasks, 'workflow-1');
    await h.workflows.start({ script: 'twice.mjs', owner: h.session.owner });
    expect((await ended).error).toContain('WORKFLOW_DUPLICATE_STEP');
  });
});

describe('tool schemas', () => {
  it('workflow_run, workflow_resume, workflow_amend, workflow_answer', () => {
    const h = harness();
    for (const tool of h.tools.tools) expect({ name: tool.name, schema: tool.jsonSchema }).toMatchSnapshot();
  });
});
