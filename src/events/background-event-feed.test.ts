import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createTaskService } from '../registry/index.js';
import { createOwner, type Owner, type TaskService, type TaskSnapshot } from '../tasks/index.js';
import { type ScriptedTask, type ScriptedTaskOptions, scriptedTask } from '../testing/index.js';
import { type BackgroundEventFeed, createBackgroundEventFeed } from './background-event-feed.js';
import type { BackgroundEvent, BackgroundTaskEvent } from './background-events.js';
import { EMPTY_BACKGROUND_WORKS, reduceBackgroundWorks } from './background-works.js';
import type { BackgroundEventFeedOptions } from './feed-options.js';

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

function silentLogger() {
  return { warn: vi.fn() };
}

interface Harness {
  readonly service: TaskService;
  readonly feed: BackgroundEventFeed;
  readonly events: BackgroundEvent[];
  readonly owner: Owner;
  start(options?: ScriptedTaskOptions): Promise<{ task: ScriptedTask; snapshot: TaskSnapshot }>;
  taskEvents(): BackgroundTaskEvent[];
}

let harnesses: Harness[] = [];

function createHarness(
  feedOptions: Partial<BackgroundEventFeedOptions> = {},
  serviceOptions: Parameters<typeof createTaskService>[0] = {},
): Harness {
  let clock = 1_000;
  const service = createTaskService({ logger: silentLogger(), now: () => clock++, ...serviceOptions });
  service.attachController('test');
  const feed = createBackgroundEventFeed({
    tasks: service,
    logger: silentLogger(),
    now: () => clock,
    ...feedOptions,
  });
  const events: BackgroundEvent[] = [];
  feed.subscribe((event) => events.push(event));
  const owner = createOwner('session-1');
  const harness: Harness = {
    service,
    feed,
    events,
    owner,
    async start(options = {}) {
      const task = scriptedTask({ kind: 'bash', label: 'npm test', owner, ...options });
      const snapshot = await service.start(task.spec);
      return { task, snapshot };
    },
    taskEvents: () =>
      events.filter((event): event is BackgroundTaskEvent => event.type !== 'BackgroundWorksLevel'),
  };
  harnesses.push(harness);
  return harness;
}

afterEach(async () => {
  for (const harness of harnesses) {
    harness.feed.dispose();
    await harness.service.dispose();
  }
  harnesses = [];
});

describe('background event derivation', () => {
  it('emits Started for background work with its display kind and facts', async () => {
    const harness = createHarness();
    const { snapshot } = await harness.start({ spec: { detail: { pid: 4242 } } });
    expect(harness.events).toEqual([
      expect.objectContaining({
        type: 'BackgroundTaskStarted',
        id: 1,
        sessionId: 'session-1',
        taskId: snapshot.id,
        taskKind: 'bash',
        kind: 'bash',
        label: 'npm test',
        status: 'running',
        cancellable: true,
        pid: 4242,
        cancelRequestedAt: null,
        resultDelivered: false,
      }),
    ]);
  });

  it('carries the tool-use id of the call that started the work, so a viewer finds its card', async () => {
    const harness = createHarness();
    await harness.start({ spec: { detail: { toolUseId: 'call_7' } } });
    await harness.start({ spec: { detail: { toolUseId: 42 } } });
    await harness.start();
    expect(harness.taskEvents().map((event) => event.toolUseId)).toEqual(['call_7', null, null]);
    expect(harness.feed.level().tasks.map((facts) => facts.toolUseId)).toEqual(['call_7', null, null]);
  });

  it('carries the sandbox a confined command runs in, in words, and null for an unconfined one', async () => {
    const harness = createHarness();
    await harness.start({ spec: { detail: { sandbox: { profile: 'workspace-write', network: false } } } });
    await harness.start();
    expect(harness.taskEvents().map((event) => event.sandbox)).toEqual([
      'workspace-write, network off',
      null,
    ]);
    const works = harness.events.reduce(
      (state, event) => reduceBackgroundWorks(state, event),
      EMPTY_BACKGROUND_WORKS,
    );
    expect([...works.works.values()].map((work) => work.sandbox)).toEqual([
      'workspace-write, network off',
      null,
    ]);
  });

  it('decides the display kind once, where the event is emitted', async () => {
    const harness = createHarness();
    for (const kind of ['bash', 'pty', 'agent', 'workflow', 'monitor', 'custom_probe']) {
      await harness.start({ kind });
    }
    expect(harness.taskEvents().map((event) => [event.taskKind, event.kind])).toEqual([
      ['bash', 'bash'],
      ['pty', 'bash'],
      ['agent', 'subagent'],
      ['workflow', 'workflow'],
      ['monitor', 'monitor'],
      ['custom_probe', 'other'],
    ]);
  });

  it('reports a task its producer cannot cancel as not cancellable', async () => {
    const harness = createHarness();
    await harness.start({ kind: 'monitor', cancellable: false });
    expect(harness.taskEvents()[0]).toMatchObject({ cancellable: false, status: 'running' });
  });

  it('ignores foreground work, and starts it once it is moved to the background', async () => {
    const harness = createHarness();
    const { task, snapshot } = await harness.start({ background: false });
    task.context?.updateDetail({ pid: 7 });
    expect(harness.events).toEqual([]);

    harness.service.requestBackground(snapshot.id, harness.owner);
    expect(harness.events).toEqual([
      expect.objectContaining({ type: 'BackgroundTaskStarted', taskId: snapshot.id, pid: 7 }),
    ]);
  });

  it('never shows foreground work that ends in the foreground', async () => {
    const harness = createHarness();
    const { task } = await harness.start({ background: false });
    task.settle({ status: 'completed' });
    await flush();
    expect(harness.events).toEqual([]);
    expect(harness.feed.level().tasks).toEqual([]);
  });

  it('emits Updated only when pid, output bytes or tail change', async () => {
    const harness = createHarness();
    const { task, snapshot } = await harness.start();
    const context = task.context!;
    context.updateDetail({ pid: 10 });
    context.updateDetail({ pid: 10 });
    context.updateDetail({ outputFile: '/tmp/x', internal: 1 });
    context.updateDetail({ outputBytes: 5 });
    context.updateDetail({ outputBytes: 5 });
    context.updateDetail({ tail: 'hello' });
    context.updateDetail({ tail: 'hello' });
    harness.service.setStopInitiator(snapshot.id, 'user', harness.owner);

    expect(
      harness.taskEvents().map((event) => [event.type, event.pid, event.outputBytes, event.tail]),
    ).toEqual([
      ['BackgroundTaskStarted', null, null, null],
      ['BackgroundTaskUpdated', 10, null, null],
      ['BackgroundTaskUpdated', 10, 5, null],
      ['BackgroundTaskUpdated', 10, 5, 'hello'],
    ]);
  });

  it('clips the tail to its byte budget, keeping the end on a character boundary', async () => {
    const harness = createHarness({ tailMaxBytes: 8 });
    const { task } = await harness.start();
    // 7 ASCII bytes and three 3-byte characters: the last 8 bytes start inside the first euro sign.
    task.context?.updateDetail({ tail: 'abcdefg€€€' });
    expect(harness.taskEvents().at(-1)?.tail).toBe('€€');
  });

  it('announces a stop request before the task ends, then completes it', async () => {
    const harness = createHarness();
    const { snapshot } = await harness.start();
    await harness.service.kill(snapshot.id, harness.owner, 'stop', { initiator: 'user' });
    await flush();
    const [, stopping, completed] = harness.taskEvents();
    expect(stopping).toMatchObject({
      type: 'BackgroundTaskUpdated',
      status: 'stopping',
      cancellable: false,
      cancelRequestedAt: expect.any(Number),
    });
    expect(completed).toMatchObject({
      type: 'BackgroundTaskCompleted',
      status: 'killed',
      cancellable: false,
      reason: 'cancelled',
    });
    expect(harness.taskEvents()).toHaveLength(3);
  });

  it('completes with exit facts, then updates once the result is delivered or returned', async () => {
    const harness = createHarness();
    const { task, snapshot } = await harness.start();
    task.settle({ status: 'completed', detail: { exitCode: 0, reason: 'completed' } });
    await flush();
    harness.service.claim(snapshot.id, harness.owner);
    harness.service.claim(snapshot.id, harness.owner);
    harness.service.releaseClaim(snapshot.id, harness.owner);

    expect(
      harness.taskEvents().map((event) => [event.type, event.status, event.exitCode, event.resultDelivered]),
    ).toEqual([
      ['BackgroundTaskStarted', 'running', null, false],
      ['BackgroundTaskCompleted', 'completed', 0, false],
      ['BackgroundTaskUpdated', 'completed', 0, true],
      ['BackgroundTaskUpdated', 'completed', 0, false],
    ]);
  });

  it('starts a resumed id again as a new attempt', async () => {
    const harness = createHarness();
    const first = await harness.start({ kind: 'workflow' });
    first.task.settle({ status: 'failed', error: 'boom' });
    await flush();
    await harness.start({ kind: 'workflow', spec: { resumeId: first.snapshot.id } });
    expect(harness.taskEvents().map((event) => [event.type, event.attempt, event.status])).toEqual([
      ['BackgroundTaskStarted', 1, 'running'],
      ['BackgroundTaskCompleted', 1, 'failed'],
      ['BackgroundTaskStarted', 2, 'running'],
    ]);
  });

  it('emits a session level when tasks disappear from the registry', async () => {
    const harness = createHarness({}, { maxRetainedTasksPerOwner: 1 });
    const first = await harness.start({ label: 'first' });
    const second = await harness.start({ label: 'second' });
    first.task.settle();
    second.task.settle();
    await flush();
    const level = harness.events.find((event) => event.type === 'BackgroundWorksLevel');
    expect(level).toMatchObject({ type: 'BackgroundWorksLevel', scope: 'session', sessionId: 'session-1' });
    expect(level?.type === 'BackgroundWorksLevel' && level.tasks.map((facts) => facts.label)).toEqual([
      'second',
    ]);
    expect(harness.feed.find(first.snapshot.id)).toBeUndefined();
  });

  it('numbers events consecutively and replays the missed ones after a reconnect', async () => {
    const harness = createHarness();
    const { task } = await harness.start();
    task.context?.updateDetail({ pid: 1 });
    const seen = harness.feed.latestId;
    task.context?.updateDetail({ outputBytes: 10 });
    task.settle();
    await flush();

    expect(harness.events.map((event) => event.id)).toEqual([1, 2, 3, 4]);
    const replay = harness.feed.since(seen);
    expect(replay).toEqual({ kind: 'events', events: harness.events.slice(2) });
    expect(harness.feed.since(harness.feed.latestId)).toEqual({ kind: 'events', events: [] });
  });

  it('resets a viewer that is too far behind the ring, or holds an id the feed never issued', async () => {
    const harness = createHarness({ ringSize: 2 });
    const { task } = await harness.start();
    task.context?.updateDetail({ pid: 1 });
    task.context?.updateDetail({ pid: 2 });
    task.context?.updateDetail({ pid: 3 });
    expect(harness.feed.since(1)).toEqual({ kind: 'reset', reason: 'too_far_behind' });
    expect(harness.feed.since(2)).toMatchObject({ kind: 'events', events: [{ id: 3 }, { id: 4 }] });
    expect(harness.feed.since(99)).toEqual({ kind: 'reset', reason: 'unknown_id' });
    expect(harness.feed.since(-1)).toEqual({ kind: 'reset', reason: 'unknown_id' });
  });

  it('builds the level signal from the registry, per session or for all', async () => {
    const harness = createHarness();
    await harness.start({ label: 'mine' });
    await harness.service.start(
      scriptedTask({ kind: 'bash', label: 'other', owner: createOwner('session-2') }).spec,
    );
    await harness.start({ label: 'foreground', background: false });

    const all = harness.feed.level();
    expect(all).toMatchObject({ type: 'BackgroundWorksLevel', scope: 'all', id: harness.feed.latestId });
    expect(all.tasks.map((facts) => facts.label)).toEqual(['mine', 'other']);
    expect(harness.feed.level('session-2').tasks.map((facts) => facts.label)).toEqual(['other']);
    expect(harness.feed.level(null).tasks).toEqual([]);
  });

  it('knows work that existed before it was created, without inventing history', async () => {
    const service = createTaskService({ logger: silentLogger() });
    service.attachController('test');
    const owner = createOwner('early');
    const early = await service.start(scriptedTask({ kind: 'bash', owner }).spec);
    const feed = createBackgroundEventFeed({ tasks: service, logger: silentLogger() });
    try {
      expect(feed.latestId).toBe(0);
      expect(feed.find(early.id)).toMatchObject({ status: 'running' });
      expect(feed.level().tasks).toHaveLength(1);
    } finally {
      feed.dispose();
      await service.dispose();
    }
  });

  it('isolates a failing listener and logs it', async () => {
    const logger = silentLogger();
    const harness = createHarness({ logger });
    harness.feed.subscribe(() => {
      throw new Error('viewer broke');
    });
    const later: BackgroundEvent[] = [];
    harness.feed.subscribe((event) => later.push(event));
    await harness.start();
    expect(later).toHaveLength(1);
    expect(logger.warn).toHaveBeenCalledWith('a background event listener failed', {
      eventId: 1,
      error: 'viewer broke',
    });
  });

  it('stops emitting once disposed', async () => {
    const harness = createHarness();
    harness.feed.dispose();
    harness.feed.dispose();
    await harness.start();
    expect(harness.events).toEqual([]);
  });

  it('validates its options before subscribing', () => {
    const service = createTaskService({ logger: silentLogger() });
    expect(() => createBackgroundEventFeed({ tasks: service, ringSize: 0 })).toThrow(
      'Expected `ringSize` to be a positive integer, got 0 (number)',
    );
    expect(() => createBackgroundEventFeed({ tasks: service, streamId: 'a b' })).toThrow(/streamId/);
    expect(() => createBackgroundEventFeed({ tasks: undefined as unknown as TaskService })).toThrow(/tasks/);
  });
});

describe('sampling facts that have no event', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('polls running work at the configured interval and emits only real changes', async () => {
    let bytes = 0;
    const sampler = vi.fn(() => ({ outputBytes: bytes, tail: bytes > 0 ? 'ok' : undefined }));
    const harness = createHarness({ sampler, sampleIntervalMs: 500 });
    const { task } = await harness.start();
    expect(vi.getTimerCount()).toBe(1);

    await vi.advanceTimersByTimeAsync(500);
    expect(sampler).toHaveBeenCalledTimes(1);
    expect(harness.taskEvents().at(-1)).toMatchObject({ type: 'BackgroundTaskUpdated', outputBytes: 0 });

    await vi.advanceTimersByTimeAsync(500);
    expect(harness.taskEvents()).toHaveLength(2);

    bytes = 42;
    await vi.advanceTimersByTimeAsync(500);
    expect(harness.taskEvents().at(-1)).toMatchObject({ outputBytes: 42, tail: 'ok' });

    task.settle();
    await vi.advanceTimersByTimeAsync(0);
    expect(harness.taskEvents().at(-1)).toMatchObject({ type: 'BackgroundTaskCompleted', outputBytes: 42 });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('samples at most maxSampledTasks per round, round robin', async () => {
    const sampled: string[] = [];
    const harness = createHarness({
      sampler: (task) => {
        sampled.push(task.label);
        return undefined;
      },
      sampleIntervalMs: 100,
      maxSampledTasks: 2,
    });
    for (const label of ['a', 'b', 'c']) await harness.start({ label });
    await vi.advanceTimersByTimeAsync(100);
    expect(sampled).toEqual(['a', 'b']);
    await vi.advanceTimersByTimeAsync(100);
    expect(sampled).toEqual(['a', 'b', 'c', 'a']);
  });

  it('never polls without a sampler', async () => {
    const harness = createHarness();
    await harness.start();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('logs a failing sampler and keeps going', async () => {
    const logger = silentLogger();
    const harness = createHarness({
      logger,
      sampleIntervalMs: 100,
      sampler: () => {
        throw new Error('no handle');
      },
    });
    await harness.start();
    await vi.advanceTimersByTimeAsync(100);
    expect(logger.warn).toHaveBeenCalledWith(
      'task bash-1: sampling its viewer facts failed',
      expect.objectContaining({ error: 'no handle' }),
    );
    expect(vi.getTimerCount()).toBe(1);
  });
});

describe('the event stream as a whole (model-based)', () => {
  type Operation =
    | { readonly op: 'start'; readonly background: boolean }
    | { readonly op: 'detail'; readonly index: number; readonly pid: number; readonly bytes: number }
    | { readonly op: 'background'; readonly index: number }
    | { readonly op: 'kill'; readonly index: number }
    | { readonly op: 'settle'; readonly index: number; readonly status: 'completed' | 'failed' | 'lost' }
    | { readonly op: 'claim'; readonly index: number }
    | { readonly op: 'release'; readonly index: number };

  const operation: fc.Arbitrary<Operation> = fc.oneof(
    fc.record({ op: fc.constant('start' as const), background: fc.boolean() }),
    fc.record({
      op: fc.constant('detail' as const),
      index: fc.nat(7),
      pid: fc.integer({ min: 1, max: 3 }),
      bytes: fc.integer({ min: 0, max: 3 }),
    }),
    fc.record({ op: fc.constant('background' as const), index: fc.nat(7) }),
    fc.record({ op: fc.constant('kill' as const), index: fc.nat(7) }),
    fc.record({
      op: fc.constant('settle' as const),
      index: fc.nat(7),
      status: fc.constantFrom('completed' as const, 'failed' as const, 'lost' as const),
    }),
    fc.record({ op: fc.constant('claim' as const), index: fc.nat(7) }),
    fc.record({ op: fc.constant('release' as const), index: fc.nat(7) }),
  );

  it('ids are consecutive, no event repeats the facts before it, and events fold to the level', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(operation, { maxLength: 30 }), async (operations) => {
        const harness = createHarness({}, { maxRetainedTasksPerOwner: 3 });
        const tasks: { task: ScriptedTask; id: string }[] = [];
        const pick = (index: number) => tasks[index % Math.max(tasks.length, 1)];
        for (const step of operations) {
          const entry = step.op === 'start' ? undefined : pick(step.index);
          try {
            if (step.op === 'start') {
              if (tasks.length >= 8) continue;
              const started = await harness.start({ background: step.background });
              tasks.push({ task: started.task, id: started.snapshot.id });
            } else if (entry !== undefined) {
              if (step.op === 'detail')
                entry.task.context?.updateDetail({ pid: step.pid, outputBytes: step.bytes });
              if (step.op === 'background') harness.service.requestBackground(entry.id, harness.owner);
              if (step.op === 'kill') await harness.service.kill(entry.id, harness.owner);
              if (step.op === 'settle') entry.task.settle({ status: step.status });
              if (step.op === 'claim') harness.service.claim(entry.id, harness.owner);
              if (step.op === 'release') harness.service.releaseClaim(entry.id, harness.owner);
            }
          } catch {
            // Forgotten ids (retention) answer not found; that is part of the model.
          }
          await flush();
        }

        expect(harness.events.map((event) => event.id)).toEqual(harness.events.map((_, index) => index + 1));
        const lastFacts = new Map<string, string>();
        for (const event of harness.taskEvents()) {
          const { id: _id, at: _at, type: _type, ...facts } = event;
          const key = JSON.stringify(facts);
          expect(lastFacts.get(event.taskId)).not.toBe(key);
          lastFacts.set(event.taskId, key);
        }
        const folded = harness.events.reduce(reduceBackgroundWorks, EMPTY_BACKGROUND_WORKS);
        const fromLevel = reduceBackgroundWorks(EMPTY_BACKGROUND_WORKS, harness.feed.level());
        const byId = (left: { workId: string }, right: { workId: string }) =>
          left.workId.localeCompare(right.workId);
        expect([...folded.works.values()].sort(byId)).toEqual([...fromLevel.works.values()].sort(byId));
        harness.feed.dispose();
        await harness.service.dispose();
        harnesses = harnesses.filter((candidate) => candidate !== harness);
      }),
      { numRuns: 60 },
    );
  });
});
