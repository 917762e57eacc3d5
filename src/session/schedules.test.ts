/**
 * Scheduled tasks against a real session: the schedule's clock is a manual one (no test waits on wall
 * time), the turns are real turns of the session on the scripted model, and the tool gate is the one a
 * runtime wraps its tools in.
 */

import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { runtimeForTest, settleEventLoop } from '../../test/support/session.js';
import { ScheduleProducer } from '../producers/schedule/index.js';
import { createMemorySessionStore, type SessionStore, taskRecordInput } from '../store/index.js';
import { createManualClock, createTrustedCaller, type ManualClock } from '../tasks/index.js';
import type { ScriptedStep } from '../testing/index.js';
import {
  AutomatedTurns,
  createTaskTools,
  defineTool,
  executeTool,
  type TaskListValue,
} from '../tools/index.js';
import { scheduleSessionPort } from './schedule-session-port.js';
import type { Session } from './session.js';

const trusted = createTrustedCaller('test');
let cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

function setup(steps: ScriptedStep[], clock: ManualClock = createManualClock(1_800_000_000_000)) {
  const automated = new AutomatedTurns();
  let held: Promise<void> = Promise.resolve();
  const ran: string[] = [];
  const hold = defineTool({
    name: 'hold',
    description: 'Holds the turn until the test lets go.',
    inputSchema: z.object({}),
    async execute() {
      ran.push('hold');
      await held;
      return { text: 'released', isError: false };
    },
  });
  const danger = defineTool({
    name: 'task_kill',
    description: 'Stands for a tool that changes the world.',
    inputSchema: z.object({ task_id: z.string() }),
    async execute() {
      ran.push('task_kill');
      return { text: 'killed', isError: false };
    },
  });
  let sessionTools: ReturnType<typeof createTaskTools> | undefined;
  const { runtime, model } = runtimeForTest(steps, {
    tools: () => automated.gateAll([hold, danger, ...(sessionTools?.tools ?? [])]),
  });
  sessionTools = createTaskTools({ tasks: runtime.tasks, controllerName: 'schedule-test' });
  const session: Session = runtime.createSession();
  const schedules = new ScheduleProducer({
    tasks: runtime.tasks,
    sessionOf: (owner) => (owner === session.owner ? scheduleSessionPort(session, automated) : undefined),
    minIntervalMs: 1000,
    clock,
  });
  cleanups.push(
    () => runtime.dispose(),
    () => sessionTools?.dispose(),
  );
  const holdTurn = () => {
    let release!: () => void;
    held = new Promise<void>((resolve) => {
      release = resolve;
    });
    return release;
  };
  const taskList = async () => {
    const tool = sessionTools!.tools.find((candidate) => candidate.name === 'task_list')!;
    return executeTool(
      tool,
      {},
      { caller: session.owner, toolCallId: 'list', signal: new AbortController().signal },
    );
  };
  return { runtime, model, session, schedules, clock, ran, holdTurn, taskList };
}

const automatedPrompts = (session: Session) =>
  session
    .messages()
    .filter(
      (message) => message.role === 'user' && JSON.stringify(message.content).includes('[automated turn: '),
    );

/**
 * Moves the manual clock, then waits until the automated turns number `turns` (when given) and the session
 * is idle again; without `turns`, lets the event loop run so a firing that wrongly came due would show.
 */
async function advance(clock: ManualClock, session: Session, ms: number, turns?: number) {
  clock.advance(ms);
  await settleEventLoop(10);
  if (turns !== undefined) await vi.waitFor(() => expect(automatedPrompts(session)).toHaveLength(turns));
  await vi.waitFor(() => expect(session.state).toBe('idle'));
  await settleEventLoop(10);
}

describe('scheduled tasks', () => {
  it('"every 2 s, 3 times" fires three times, each once, then completes', async () => {
    const { session, schedules, clock, model, taskList } = setup([
      { text: 'one' },
      { text: 'two' },
      { text: 'three' },
    ]);
    const snapshot = await schedules.start(
      { prompt: 'Check the deploy.', every_ms: 2000, times: 3 },
      { owner: session.owner },
    );
    expect(snapshot.id).toBe('schedule-1');
    expect(snapshot.detail.summary).toMatch(/every 2 s, 3 times; fired 0 of 3; next at/);
    await advance(clock, session, 1999);
    expect(model.requests).toHaveLength(0);
    await advance(clock, session, 1, 1);
    // task_list shows where it stands: the firings, the next due time, the missed-firing policy.
    const listed = await taskList();
    expect(listed.text).toBe(
      `schedule-1 [schedule] running — schedule: Check the deploy. (every 2 s, 3 times; fired 1 of 3; next at ${new Date(1_800_000_004_000).toISOString()}; missed firings: run once)`,
    );
    expect((listed.value as TaskListValue | undefined)?.tasks[0]?.schedule).toEqual({
      when: 'every 2 s, 3 times',
      fired: 1,
      times: 3,
      nextAt: 1_800_000_004_000,
      missed: 'run_once',
    });
    await advance(clock, session, 2000, 2);
    await advance(clock, session, 2000, 3);
    // Nothing more comes due.
    await advance(clock, session, 20_000);
    const prompts = automatedPrompts(session).map((message) => JSON.stringify(message.content));
    expect(prompts).toHaveLength(3);
    for (const [index, prompt] of prompts.entries()) {
      expect(prompt).toContain(`schedule-1 fired (${index + 1} of 3`);
      expect(prompt).toContain('Check the deploy.');
    }
    const done = await session.tasks.wait('schedule-1', 1000, trusted);
    expect(done.status).toBe('completed');
    expect(done.detail).toMatchObject({ fired: 3, lastOutcome: 'turn completed: three' });
  });

  it('an idle-time schedule fires only once the session has been idle that long, never during a turn', async () => {
    const { session, schedules, clock, holdTurn, model } = setup([
      { toolCalls: [{ name: 'hold', input: {} }] },
      { text: 'person done' },
      { text: 'summary of the day' },
    ]);
    await schedules.start(
      { prompt: 'Summarise the day.', idle_ms: 600_000, times: 1 },
      { owner: session.owner },
    );
    // A person's turn that is still running when the idle time has long passed.
    const release = holdTurn();
    const turn = session.send('do something long');
    await vi.waitFor(() => expect(session.state).toBe('running'));
    clock.advance(599_999);
    await settleEventLoop(5);
    clock.advance(5_000_000);
    await settleEventLoop(5);
    expect(automatedPrompts(session)).toHaveLength(0);
    release();
    await turn;
    await vi.waitFor(() => expect(session.state).toBe('idle'));
    // The idle time counts from the end of that turn.
    await advance(clock, session, 599_999);
    expect(automatedPrompts(session)).toHaveLength(0);
    await advance(clock, session, 1, 1);
    expect(model.requests).toHaveLength(3);
    expect((await session.tasks.wait('schedule-1', 1000, trusted)).status).toBe('completed');
  });

  it('an automated turn cannot call a tool its schedule forbids, and the model is told why', async () => {
    const { session, schedules, clock, ran, model } = setup([
      {
        toolCalls: [
          { name: 'task_kill', input: { task_id: 'bash-1' }, id: 'k1' },
          { name: 'task_list', input: {}, id: 'l1' },
        ],
      },
      { text: 'reported instead' },
    ]);
    await schedules.start({ prompt: 'Tidy up.', in_ms: 1000 }, { owner: session.owner });
    await advance(clock, session, 1000, 1);
    await vi.waitFor(() => expect(model.requests).toHaveLength(2));
    expect(ran).not.toContain('task_kill');
    const toolResults = JSON.stringify(model.requests.at(-1)?.messages ?? []);
    expect(toolResults).toContain('TOOL_NOT_ALLOWED_IN_AUTOMATED_TURN');
    expect(toolResults).toContain('task_kill is not allowed in this automated turn (started by schedule-1)');
    // The allowed read-only tool ran: it lists the schedule itself.
    expect(toolResults).toContain('schedule-1 [schedule] running');
    // Outside the automated turn the same tool works.
    model.push({ toolCalls: [{ name: 'task_kill', input: { task_id: 'bash-1' } }] }, { text: 'ok' });
    await session.send('stop it');
    expect(ran).toContain('task_kill');
  });

  it('is stopped with kill, and is bounded per session with a minimum interval', async () => {
    const { session, schedules, clock, runtime } = setup([]);
    await schedules.start({ prompt: 'Ping.', every_ms: 1000 }, { owner: session.owner });
    await session.tasks.kill('schedule-1', session.owner, 'no longer needed');
    expect((await session.tasks.wait('schedule-1', 1000, trusted)).status).toBe('killed');
    await advance(clock, session, 10_000);
    expect(automatedPrompts(session)).toHaveLength(0);
    await expect(
      schedules.start({ prompt: 'Too often.', every_ms: 10 }, { owner: session.owner }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('every_ms') });
    await expect(
      schedules.start({ prompt: 'Two kinds.', every_ms: 1000, in_ms: 5 }, { owner: session.owner }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    const limited = new ScheduleProducer({
      tasks: runtime.tasks,
      sessionOf: () => ({ state: () => 'idle', onState: () => () => {}, runAutomatedTurn: async () => 'ok' }),
      maxSchedulesPerSession: 1,
      minIntervalMs: 1000,
      clock,
    });
    await limited.start({ prompt: 'a', every_ms: 5000 }, { owner: session.owner });
    await expect(
      limited.start({ prompt: 'b', every_ms: 5000 }, { owner: session.owner }),
    ).rejects.toMatchObject({
      code: 'SCHEDULE_LIMIT',
    });
  });

  it('applies the missed-firing policy on a resume and tells the model', async () => {
    const start = 1_800_000_000_000;
    const clock = createManualClock(start + 9_000);
    const { session, schedules } = setup([{ text: 'caught up' }, { text: 'last' }], clock);
    // Fired once at +2 s, then the runtime was down until +9 s: the firings due at +4 s and +6 s were missed.
    await schedules.start(
      { prompt: 'Check.', every_ms: 2000, times: 3, missed: 'run_once' },
      {
        owner: session.owner,
        resume: { id: 'schedule-7', fired: 1, lastDueAt: start + 2000, createdAt: start },
      },
    );
    await settleEventLoop(5);
    await vi.waitFor(() => expect(automatedPrompts(session)).toHaveLength(1));
    await vi.waitFor(() => expect(session.state).toBe('idle'));
    const [caughtUp] = automatedPrompts(session).map((message) => JSON.stringify(message.content));
    expect(caughtUp).toContain(
      '2 firings came due while the runtime was down; missed-firing policy \\"run_once\\": ran once now',
    );
    expect(caughtUp).toContain('schedule-7 fired (2 of 3');

    const skipping = setup([], createManualClock(start + 9_000));
    await skipping.schedules.start(
      { prompt: 'Check.', every_ms: 2000, times: 3, missed: 'skip' },
      {
        owner: skipping.session.owner,
        resume: { id: 'schedule-8', fired: 1, lastDueAt: start + 2000, createdAt: start },
      },
    );
    const skipped = await skipping.session.tasks.wait('schedule-8', 1000, trusted);
    expect(skipped.status).toBe('completed');
    expect(skipped.detail.summary).toContain('missed-firing policy "skip": skipped');
    expect(automatedPrompts(skipping.session)).toHaveLength(0);
  });
});

describe('scheduled tasks across a restart (definitions in the store)', () => {
  const start = 1_800_000_000_000;

  /** A runtime on `store` whose sessions' schedules live in it, and resume from it. */
  function runtimeOn(store: SessionStore, clock: ManualClock, steps: ScriptedStep[]) {
    const automated = new AutomatedTurns();
    let schedules: ScheduleProducer | undefined;
    const { runtime, model, logger } = runtimeForTest(steps, {
      store,
      tools: () => automated.gateAll([]),
      reconcile: { adoptSchedule: (record, owner) => schedules?.resume(record, owner) ?? false },
    });
    schedules = new ScheduleProducer({
      tasks: runtime.tasks,
      sessionOf: (owner) => {
        const session = runtime.getSession(owner.sessionId);
        return session?.owner === owner ? scheduleSessionPort(session, automated) : undefined;
      },
      minIntervalMs: 1000,
      clock,
      store,
      logger,
    });
    cleanups.push(() => runtime.dispose());
    return { runtime, model, schedules, logger };
  }

  it('keeps the definition in the store while it runs, resumes it after a clean exit, and removes it at the end', async () => {
    const store = createMemorySessionStore();
    const clock = createManualClock(start);
    const first = runtimeOn(store, clock, [{ text: 'one' }]);
    const session = first.runtime.createSession();
    await first.schedules.start(
      { prompt: 'Check the deploy.', every_ms: 2000, times: 3 },
      { owner: session.owner },
    );
    expect(store.getSchedule(session.id, 'schedule-1')).toMatchObject({
      fired: 0,
      nextAt: start + 2000,
      firing: undefined,
      definition: { prompt: 'Check the deploy.', every_ms: 2000, times: 3 },
    });
    await advance(clock, session, 2000, 1);
    expect(store.getSchedule(session.id, 'schedule-1')).toMatchObject({ fired: 1, nextAt: start + 4000 });
    // A clean exit lets go of the schedule: its record stays live, its definition stays.
    await first.runtime.dispose();
    expect(store.getTask('schedule-1', session.id)?.status).toBe('running');

    const second = runtimeOn(store, clock, [{ text: 'two' }, { text: 'three' }]);
    const resumed = second.runtime.resumeSession(session.id);
    await settleEventLoop(5);
    expect(second.runtime.tasks.list(trusted).find((task) => task.id === 'schedule-1')?.status).toBe(
      'running',
    );
    await advance(clock, resumed, 2000, 2);
    await advance(clock, resumed, 2000, 3);
    const prompts = automatedPrompts(resumed).map((message) => JSON.stringify(message.content));
    expect(prompts.map((prompt) => /fired \((\d) of 3/.exec(prompt)?.[1])).toEqual(['1', '2', '3']);
    const done = await resumed.tasks.wait('schedule-1', 1000, trusted);
    expect(done).toMatchObject({ status: 'completed', detail: { fired: 3 } });
    await vi.waitFor(() => expect(store.getSchedule(session.id, 'schedule-1')).toBeUndefined());
    expect(second.model.requests).toHaveLength(2);
  });

  it('tells a firing its runtime died in as interrupted, once, and never runs it again', async () => {
    const store = createMemorySessionStore();
    const clock = createManualClock(start + 2500);
    // What a runtime killed during firing 1 (due at +2 s) left: the record live, the firing in progress.
    store.createSession({ id: 'session-died', cwd: '/' });
    store.upsertTask({
      id: 'schedule-1',
      sessionId: 'session-died',
      kind: 'schedule',
      label: 'schedule: Check.',
      status: 'running',
      detail: {},
      isBackgrounded: true,
      branchGeneration: 0,
      startedAt: start,
      reported: false,
    });
    store.saveSchedule({
      sessionId: 'session-died',
      id: 'schedule-1',
      definition: { prompt: 'Check.', every_ms: 2000, times: 3 },
      fired: 0,
      firing: 1,
      lastDueAt: start + 2000,
      nextAt: start + 4000,
      createdAt: start,
    });
    const { runtime, model } = runtimeOn(store, clock, [{ text: 'two' }, { text: 'three' }]);
    const session = runtime.resumeSession('session-died');
    await settleEventLoop(5);
    expect(store.getSchedule('session-died', 'schedule-1')).toMatchObject({
      fired: 1,
      firing: undefined,
      note: expect.stringContaining('Firing 1 was interrupted'),
    });
    await advance(clock, session, 1500, 1);
    await advance(clock, session, 2000, 2);
    const prompts = automatedPrompts(session).map((message) => JSON.stringify(message.content));
    expect(prompts.map((prompt) => /fired \((\d) of 3/.exec(prompt)?.[1])).toEqual(['2', '3']);
    expect(prompts[0]).toContain('Firing 1 was interrupted');
    expect(prompts[1]).not.toContain('interrupted');
    expect(model.requests).toHaveLength(2);
    expect((await session.tasks.wait('schedule-1', 1000, trusted)).status).toBe('completed');
  });

  it('does not resume a schedule that was killed, nor one being stopped while no runtime held it', async () => {
    const store = createMemorySessionStore();
    const clock = createManualClock(start);
    const first = runtimeOn(store, clock, []);
    const session = first.runtime.createSession();
    await first.schedules.start({ prompt: 'Ping.', every_ms: 1000 }, { owner: session.owner });
    await first.schedules.start({ prompt: 'Pong.', every_ms: 1000 }, { owner: session.owner });
    await session.tasks.kill('schedule-1', session.owner, 'no longer needed');
    await vi.waitFor(() => expect(store.getSchedule(session.id, 'schedule-1')).toBeUndefined());
    await first.runtime.dispose();
    // A person's Stop from another process while no runtime held the session.
    const record = store.getTask('schedule-2', session.id)!;
    store.upsertTask({ ...taskRecordInput(record), status: 'stopping' });

    const second = runtimeOn(store, clock, []);
    const resumed = second.runtime.resumeSession(session.id);
    await vi.waitFor(() => expect(store.getTask('schedule-2', session.id)?.status).toBe('killed'));
    expect(store.getTask('schedule-1', session.id)?.status).toBe('killed');
    await advance(clock, resumed, 10_000);
    expect(automatedPrompts(resumed)).toHaveLength(0);
    await vi.waitFor(() => expect(store.listSchedules(session.id)).toEqual([]));
  });

  it('killed while a firing runs: its definition goes and stays gone, and a restart does not resume it', async () => {
    const store = createMemorySessionStore();
    const clock = createManualClock(start);
    let answer!: (reply: { text: string }) => void;
    const held = new Promise<{ text: string }>((resolve) => {
      answer = resolve;
    });
    const first = runtimeOn(store, clock, [() => held]);
    const session = first.runtime.createSession();
    await first.schedules.start({ prompt: 'Ping.', every_ms: 1000, times: 5 }, { owner: session.owner });
    clock.advance(1000);
    await vi.waitFor(() => expect(first.model.requests).toHaveLength(1));
    expect(store.getSchedule(session.id, 'schedule-1')).toMatchObject({ fired: 0, firing: 1 });
    await session.tasks.kill('schedule-1', session.owner, 'no longer needed');
    // The turn goes on after the kill (it is the session's), and ends after the definition went.
    await vi.waitFor(() => expect(store.getSchedule(session.id, 'schedule-1')).toBeUndefined());
    answer({ text: 'pong' });
    await vi.waitFor(() => expect(session.state).toBe('idle'));
    await settleEventLoop(10);
    expect(store.getSchedule(session.id, 'schedule-1')).toBeUndefined();
    expect(store.getTask('schedule-1', session.id)?.status).toBe('killed');
    await first.runtime.dispose();

    const second = runtimeOn(store, clock, []);
    const resumed = second.runtime.resumeSession(session.id);
    await advance(clock, resumed, 10_000);
    expect(second.model.requests).toHaveLength(0);
    expect(store.getTask('schedule-1', session.id)?.status).toBe('killed');
  });

  it('resumes an idle-time schedule with its count, and tells skipped firings with the next one', async () => {
    const store = createMemorySessionStore();
    const clock = createManualClock(start + 9_000);
    store.createSession({ id: 'session-down', cwd: '/' });
    const live = (id: string) =>
      store.upsertTask({
        id,
        sessionId: 'session-down',
        kind: 'schedule',
        label: `schedule: ${id}`,
        status: 'running',
        detail: {},
        isBackgrounded: true,
        branchGeneration: 0,
        startedAt: start,
        reported: false,
      });
    live('schedule-1');
    store.saveSchedule({
      sessionId: 'session-down',
      id: 'schedule-1',
      definition: { prompt: 'Summarise.', idle_ms: 5000, times: 2 },
      fired: 1,
      createdAt: start,
    });
    live('schedule-2');
    // Due at +4 s, +6 s and +8 s while down; +10 s is still to come.
    store.saveSchedule({
      sessionId: 'session-down',
      id: 'schedule-2',
      definition: { prompt: 'Check.', every_ms: 2000, times: 5, missed: 'skip' },
      fired: 1,
      lastDueAt: start + 2000,
      createdAt: start,
    });
    const { runtime } = runtimeOn(store, clock, [{ text: 'checked' }, { text: 'summary' }]);
    const session = runtime.resumeSession('session-down');
    await settleEventLoop(5);
    expect(store.getSchedule('session-down', 'schedule-2')).toMatchObject({
      fired: 4,
      nextAt: start + 10_000,
      note: '3 firings came due while the runtime was down; missed-firing policy "skip": skipped.',
    });
    await advance(clock, session, 1000, 1);
    await advance(clock, session, 5000, 2);
    const prompts = automatedPrompts(session).map((message) => JSON.stringify(message.content));
    expect(prompts[0]).toContain('schedule-2 fired (5 of 5');
    expect(prompts[0]).toContain('missed-firing policy \\"skip\\": skipped.');
    expect(prompts[1]).toContain('schedule-1 fired (2 of 2, after 5 s idle');
    expect(prompts[1]).not.toContain('skipped');
    expect((await session.tasks.wait('schedule-1', 1000, trusted)).status).toBe('completed');
    expect((await session.tasks.wait('schedule-2', 1000, trusted)).status).toBe('completed');
  });

  it('marks a live schedule lost when the resuming runtime cannot re-arm it', async () => {
    const store = createMemorySessionStore();
    const clock = createManualClock(start);
    const first = runtimeOn(store, clock, []);
    const session = first.runtime.createSession();
    await first.schedules.start({ prompt: 'Ping.', every_ms: 1000 }, { owner: session.owner });
    await first.runtime.dispose();
    // A runtime without schedules: nothing re-arms it, so it is not left running in the store.
    const { runtime } = runtimeForTest([], { store });
    cleanups.push(() => runtime.dispose());
    runtime.resumeSession(session.id);
    expect(store.getTask('schedule-1', session.id)?.status).toBe('lost');
    expect(store.prune().schedules).toBe(1);
  });
});
