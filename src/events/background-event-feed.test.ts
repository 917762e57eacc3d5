import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { deferred } from '../../test/support/waiting.js';
import { createDeliveryPolicy, type DeliveryPolicy } from '../notifications/index.js';
import { createTaskService } from '../registry/index.js';
import { createMemorySessionStore, type SessionStore } from '../store/index.js';
import {
  createOwner,
  type Owner,
  type TaskFacts,
  type TaskService,
  type TaskSnapshot,
} from '../tasks/index.js';
import { type ScriptedTask, type ScriptedTaskOptions, scriptedTask } from '../testing/index.js';
import { type BackgroundEventFeed, createBackgroundEventFeed } from './background-event-feed.js';
import type { BackgroundEvent, BackgroundTaskEvent } from './background-events.js';
import { readDetailFacts } from './background-task-facts.js';
import { EMPTY_BACKGROUND_WORKS, reduceBackgroundWorks } from './background-works.js';
import type { BackgroundEventFeedOptions } from './feed-options.js';
import {
  type LedgerChangeListener,
  type NotificationLedgerView,
  queuedNotificationTaskIds,
} from './notification-ledger-view.js';

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

function silentLogger() {
  return { warn: vi.fn() };
}

/** Facts of the harness's producer: the common ones and one no viewer reads. */
interface ProducerFacts extends TaskFacts {
  readonly internal?: number;
}

interface Harness {
  readonly service: TaskService;
  readonly feed: BackgroundEventFeed;
  readonly events: BackgroundEvent[];
  readonly owner: Owner;
  start(
    options?: ScriptedTaskOptions<ProducerFacts>,
  ): Promise<{ task: ScriptedTask<ProducerFacts>; snapshot: TaskSnapshot }>;
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
      const task = scriptedTask<ProducerFacts>({ kind: 'bash', label: 'npm test', owner, ...options });
      const snapshot = await service.start<ProducerFacts>(task.spec);
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
        resultPending: false,
      }),
    ]);
  });

  it('carries the tool-use id of the call that started the work, so a viewer finds its card', async () => {
    const harness = createHarness();
    await harness.start({ spec: { detail: { toolUseId: 'call_7' } } });
    // A producer outside TypeScript can publish a fact of the wrong type.
    await harness.start({ spec: { detail: { toolUseId: 42 as unknown as string } } });
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

  it('completes with exit facts; without a ledger, its result is pending while nobody holds the claim', async () => {
    const harness = createHarness();
    const { task, snapshot } = await harness.start();
    task.settle({ status: 'completed', detail: { exitCode: 0, reason: 'completed' } });
    await flush();
    harness.service.claim(snapshot.id, harness.owner);
    harness.service.claim(snapshot.id, harness.owner);
    harness.service.releaseClaim(snapshot.id, harness.owner);

    expect(
      harness.taskEvents().map((event) => [event.type, event.status, event.exitCode, event.resultPending]),
    ).toEqual([
      ['BackgroundTaskStarted', 'running', null, false],
      ['BackgroundTaskCompleted', 'completed', 0, true],
      ['BackgroundTaskUpdated', 'completed', 0, false],
      ['BackgroundTaskUpdated', 'completed', 0, true],
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

  it('tells a task that disappears from the registry in one removal event', async () => {
    const harness = createHarness({}, { maxRetainedTasksPerOwner: 1 });
    const first = await harness.start({ label: 'first' });
    const second = await harness.start({ label: 'second' });
    first.task.settle();
    second.task.settle();
    await flush();
    const removals = harness.events.filter((event) => event.type === 'BackgroundTaskRemoved');
    expect(removals).toEqual([
      expect.objectContaining({ taskId: first.snapshot.id, sessionId: 'session-1', attempt: 1 }),
    ]);
    expect(harness.events.some((event) => event.type === 'BackgroundWorksLevel')).toBe(false);
    expect(harness.feed.find(first.snapshot.id)).toBeUndefined();
    // What a viewer folds from the events is what the feed's level says.
    const folded = harness.events.reduce(reduceBackgroundWorks, EMPTY_BACKGROUND_WORKS);
    expect([...folded.works.keys()]).toEqual([second.snapshot.id]);
  });

  it('costs a removal one event and no derivation, however many tasks the session holds', async () => {
    let derived = 0;
    const harness = createHarness(
      {
        readFacts: (detail, task) => {
          derived += 1;
          return readDetailFacts(detail, task);
        },
      },
      { maxRetainedTasksPerOwner: 50 },
    );
    const other = createOwner('session-2');
    const elsewhere = scriptedTask<ProducerFacts>({ kind: 'bash', label: 'elsewhere', owner: other });
    await harness.service.start<ProducerFacts>(elsewhere.spec);
    const started = [];
    for (let index = 0; index < 50; index += 1) {
      const begun = await harness.start({ label: `t${index}` });
      begun.task.settle();
      started.push(begun);
    }
    await flush();
    // The retention is full: the next ending removes the oldest.
    const extra = await harness.start({ label: 'extra' });
    derived = 0;
    const before = harness.events.length;
    extra.task.settle();
    await flush();
    const after = harness.events.slice(before);
    expect(after.map((event) => event.type)).toEqual(['BackgroundTaskCompleted', 'BackgroundTaskRemoved']);
    expect(after[1]).toMatchObject({ taskId: started[0]!.snapshot.id, sessionId: 'session-1' });
    // The ending itself is derived once or twice; none of the 50 others is.
    expect(derived).toBeLessThan(5);
    // Folding every event gives what the feed's level of each session says.
    const folded = harness.events.reduce(reduceBackgroundWorks, EMPTY_BACKGROUND_WORKS);
    const levelled = reduceBackgroundWorks(EMPTY_BACKGROUND_WORKS, harness.feed.level());
    expect(folded.works).toEqual(levelled.works);
    expect([...folded.works.values()].filter((work) => work.sessionId === 'session-1')).toHaveLength(50);
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
    expect(() => createBackgroundEventFeed({ tasks: service, ledgerCheckMs: -1 })).toThrow(
      'Expected `ledgerCheckMs` to be a positive integer, got -1 (number)',
    );
    expect(() =>
      createBackgroundEventFeed({
        tasks: service,
        ledger: { queuedTaskIds: () => new Set() } as unknown as NotificationLedgerView,
      }),
    ).toThrow(/Expected `ledger` to be a NotificationLedgerView/);
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

/**
 * A session's ledger on a real store, its delivery policy over the real registry, and the port the feed
 * reads them through: the policy queues into the store and says so, as the session's inbox does.
 */
interface LedgerHarness extends Harness {
  readonly store: SessionStore;
  readonly policy: DeliveryPolicy;
  /** Held until released: the notifier's claim is taken, its notification not queued yet. */
  readonly tail: ReturnType<typeof deferred<string>>;
  /** The session can still be told something (false: it closes). */
  deliverable: boolean;
  clock: number;
  /** Tells the feed that the session's notifications changed (`taskId`: one task's). */
  tell(taskId?: string): void;
  /** Delivers every queued notification in one message, as a tool result carrying them would. */
  deliverQueued(options?: { tell: boolean }): void;
  pendingStates(): [string, boolean][];
}

function createLedgerHarness(feedOptions: Partial<BackgroundEventFeedOptions> = {}): LedgerHarness {
  const store = createMemorySessionStore();
  store.createSession({ id: 'session-1', cwd: '/' });
  const listeners = new Set<LedgerChangeListener>();
  const ledger: NotificationLedgerView = {
    deliverableGeneration: () => (harness.deliverable ? 0 : undefined),
    queuedTaskIds: (sessionId) => queuedNotificationTaskIds(store, sessionId),
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
  const base = createHarness({ ledger, now: () => harness.clock, ...feedOptions });
  const tail = deferred<string>();
  const tell = (taskId?: string) => {
    for (const listener of listeners) listener('session-1', taskId);
  };
  const policy = createDeliveryPolicy({
    tasks: base.service,
    owner: base.owner,
    logger: silentLogger(),
    readOutputTail: () => tail.promise,
    enqueue: (notification) => {
      store.admit({
        sessionId: 'session-1',
        kind: 'notification',
        idempotencyKey: `task:${notification.taskId}:${notification.attempt}`,
        taskId: notification.taskId,
        text: notification.text,
      });
      tell(notification.taskId);
    },
  });
  const harness: LedgerHarness = {
    ...base,
    store,
    policy,
    tail,
    deliverable: true,
    clock: 5_000,
    tell,
    deliverQueued({ tell: told } = { tell: true }) {
      const queued = store.listQueued('session-1');
      store.commitDelivery(
        'session-1',
        queued.map((entry) => entry.id),
        { role: 'user', content: { text: queued.map((entry) => entry.text).join('\n\n') }, source: 'test' },
      );
      if (told) tell();
    },
    pendingStates: () =>
      base.taskEvents().map((event) => [event.type, event.resultPending] as [string, boolean]),
  };
  return harness;
}

describe('a result pending on the ledger', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('is pending from the end, through the notifier queueing it, until it is delivered', async () => {
    const harness = createLedgerHarness();
    const { task, snapshot } = await harness.start();
    task.settle({ status: 'completed', detail: { exitCode: 0 } });
    await flush();
    // The notifier holds the claim and reads the tail: nothing is queued, and it is pending all the same.
    expect(harness.service.get(snapshot.id, harness.owner).reported).toBe(true);
    expect(harness.store.listQueued('session-1')).toEqual([]);
    expect(harness.feed.find(snapshot.id)?.resultPending).toBe(true);

    harness.tail.resolve('ok');
    await flush();
    expect(harness.store.listQueued('session-1')).toHaveLength(1);
    expect(harness.feed.level().tasks[0]?.resultPending).toBe(true);

    harness.deliverQueued();
    expect(harness.feed.find(snapshot.id)?.resultPending).toBe(false);
    // One event per visible step: no flicker while the claim is taken and the notification queued.
    expect(harness.pendingStates()).toEqual([
      ['BackgroundTaskStarted', false],
      ['BackgroundTaskCompleted', true],
      ['BackgroundTaskUpdated', false],
    ]);
    const works = harness.events.reduce(reduceBackgroundWorks, EMPTY_BACKGROUND_WORKS);
    expect(works.works.get(snapshot.id)).toMatchObject({ state: 'completed', exitCode: 0 });
  });

  it("passes failed work and a person's stop through the same pending state", async () => {
    const harness = createLedgerHarness();
    harness.tail.resolve('');
    const failed = await harness.start({ label: 'lint' });
    const stopped = await harness.start({ label: 'dev server' });
    failed.task.settle({ status: 'failed', detail: { exitCode: 1 } });
    await harness.service.kill(stopped.snapshot.id, harness.owner, 'stopped', { initiator: 'user' });
    await flush();
    const state = () => harness.events.reduce(reduceBackgroundWorks, EMPTY_BACKGROUND_WORKS);
    expect([...state().works.values()].map((work) => work.state)).toEqual(['resultPending', 'resultPending']);
    harness.deliverQueued();
    expect([...state().works.values()].map((work) => work.state)).toEqual(['failed', 'cancelled']);
  });

  it('never shows an end its own call reported (a waiter took it) as pending', async () => {
    const harness = createLedgerHarness();
    const { task, snapshot } = await harness.start();
    const waited = harness.service.wait(snapshot.id, 60_000, harness.owner);
    task.settle({ status: 'completed' });
    await waited;
    harness.tail.resolve('');
    await flush();
    expect(harness.pendingStates()).toEqual([
      ['BackgroundTaskStarted', false],
      ['BackgroundTaskCompleted', false],
    ]);
    expect(harness.store.listQueued('session-1')).toEqual([]);
  });

  it("never shows the model's own stop as pending", async () => {
    const harness = createLedgerHarness();
    const { snapshot } = await harness.start();
    await harness.service.kill(snapshot.id, harness.owner, 'not needed', { initiator: 'model' });
    await flush();
    expect(harness.pendingStates()).toEqual([
      ['BackgroundTaskStarted', false],
      ['BackgroundTaskUpdated', false],
      ['BackgroundTaskCompleted', false],
    ]);
  });

  it('ends when the notification is discarded (the model read the end), or the session closes', async () => {
    const harness = createLedgerHarness();
    harness.tail.resolve('');
    const read = await harness.start({ label: 'read' });
    const closing = await harness.start({ label: 'closing' });
    read.task.settle({ status: 'completed' });
    closing.task.settle({ status: 'completed' });
    await flush();
    const [first] = harness.store.listQueued('session-1');
    harness.store.markDiscarded([first!.id], 'result_read');
    harness.tell(read.snapshot.id);
    expect(harness.feed.find(read.snapshot.id)?.resultPending).toBe(false);
    expect(harness.feed.find(closing.snapshot.id)?.resultPending).toBe(true);

    harness.deliverable = false;
    harness.tell();
    expect(harness.feed.find(closing.snapshot.id)?.resultPending).toBe(false);
    expect(harness.store.listQueued('session-1')).toHaveLength(1);
  });

  it('sees a delivery made elsewhere, which sends no signal, within one check period', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const harness = createLedgerHarness({ ledgerCheckMs: 250 });
    harness.tail.resolve('');
    const { task, snapshot } = await harness.start();
    task.settle({ status: 'completed' });
    await flush();
    expect(vi.getTimerCount()).toBe(1);
    harness.deliverQueued({ tell: false });
    expect(harness.feed.find(snapshot.id)?.resultPending).toBe(true);
    vi.advanceTimersByTime(250);
    expect(harness.feed.find(snapshot.id)?.resultPending).toBe(false);
    // Nothing pending: nothing is read any more.
    expect(vi.getTimerCount()).toBe(0);
  });

  it('does not hold a notifier that queues nothing pending past a check period', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const harness = createLedgerHarness({ ledgerCheckMs: 250 });
    const { task, snapshot } = await harness.start();
    task.settle({ status: 'completed' });
    await flush();
    harness.clock += 249;
    vi.advanceTimersByTime(250);
    expect(harness.feed.find(snapshot.id)?.resultPending).toBe(true);
    harness.clock += 1;
    vi.advanceTimersByTime(250);
    expect(harness.feed.find(snapshot.id)?.resultPending).toBe(false);
    // When it does queue it, it is pending again until delivered.
    harness.tail.resolve('');
    await flush();
    expect(harness.feed.find(snapshot.id)?.resultPending).toBe(true);
    harness.deliverQueued();
    expect(harness.feed.find(snapshot.id)?.resultPending).toBe(false);
  });

  it('builds the level of a feed created later from the ledger', async () => {
    const harness = createLedgerHarness();
    harness.tail.resolve('');
    const { task, snapshot } = await harness.start();
    task.settle({ status: 'completed' });
    await flush();
    const listeners: LedgerChangeListener[] = [];
    const later = createBackgroundEventFeed({
      tasks: harness.service,
      logger: silentLogger(),
      ledger: {
        deliverableGeneration: () => 0,
        queuedTaskIds: (sessionId) => queuedNotificationTaskIds(harness.store, sessionId),
        subscribe: (listener) => {
          listeners.push(listener);
          return () => {};
        },
      },
    });
    try {
      expect(later.level().tasks.map((facts) => facts.resultPending)).toEqual([true]);
      harness.deliverQueued({ tell: false });
      expect(later.level().tasks.map((facts) => facts.resultPending)).toEqual([false]);
      for (const listener of listeners) listener('session-1', undefined);
      expect(later.find(snapshot.id)?.resultPending).toBe(false);
    } finally {
      later.dispose();
    }
  });

  it('logs a failing ledger read once and shows nothing queued', async () => {
    const logger = silentLogger();
    const harness = createLedgerHarness({ logger });
    harness.tail.resolve('');
    const { task, snapshot } = await harness.start();
    task.settle({ status: 'completed' });
    await flush();
    harness.store.close();
    harness.tell(snapshot.id);
    harness.tell();
    expect(harness.feed.find(snapshot.id)?.resultPending).toBe(false);
    expect(logger.warn).toHaveBeenCalledTimes(1);
    expect(logger.warn.mock.calls[0]?.[0]).toBe('reading the notification ledger for pending results failed');
  });
});

describe('pending results as a whole (model-based)', () => {
  type Operation =
    | { readonly op: 'start' }
    | { readonly op: 'wait'; readonly index: number }
    | { readonly op: 'settle'; readonly index: number; readonly status: 'completed' | 'failed' }
    | { readonly op: 'kill'; readonly index: number; readonly initiator: 'user' | 'model' }
    | { readonly op: 'read'; readonly index: number }
    | { readonly op: 'deliver' }
    | { readonly op: 'close' };

  const operation: fc.Arbitrary<Operation> = fc.oneof(
    fc.record({ op: fc.constant('start' as const) }),
    fc.record({ op: fc.constant('wait' as const), index: fc.nat(5) }),
    fc.record({
      op: fc.constant('settle' as const),
      index: fc.nat(5),
      status: fc.constantFrom('completed' as const, 'failed' as const),
    }),
    fc.record({
      op: fc.constant('kill' as const),
      index: fc.nat(5),
      initiator: fc.constantFrom('user' as const, 'model' as const),
    }),
    fc.record({ op: fc.constant('read' as const), index: fc.nat(5) }),
    fc.record({ op: fc.constant('deliver' as const) }),
    fc.record({ op: fc.constant('close' as const) }),
  );

  it('a result is pending exactly while the ledger says so, and events fold to the level', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(operation, { maxLength: 25 }), async (operations) => {
        const harness = createLedgerHarness();
        harness.tail.resolve('');
        const tasks: { task: ScriptedTask; id: string }[] = [];
        const pick = (index: number) => tasks[index % Math.max(tasks.length, 1)];
        for (const step of operations) {
          const entry = 'index' in step ? pick(step.index) : undefined;
          if (step.op === 'start' && tasks.length < 6) {
            const started = await harness.start();
            tasks.push({ task: started.task, id: started.snapshot.id });
          } else if (step.op === 'deliver') {
            if (harness.store.listQueued('session-1').length > 0) harness.deliverQueued();
          } else if (step.op === 'close') {
            harness.deliverable = false;
            harness.tell();
          } else if (entry !== undefined) {
            const live = harness.service.get(entry.id, harness.owner).status === 'running';
            if (step.op === 'wait' && live) void harness.service.wait(entry.id, 60_000, harness.owner);
            if (step.op === 'settle') entry.task.settle({ status: step.status });
            if (step.op === 'kill' && live) {
              await harness.service.kill(entry.id, harness.owner, 'stop', { initiator: step.initiator });
            }
            if (step.op === 'read') {
              // The model reads the end: its queued notification is discarded (discarded), as the inbox does.
              const queued = harness.store
                .listQueued('session-1')
                .filter((candidate) => candidate.taskId === entry.id);
              harness.store.markDiscarded(
                queued.map((candidate) => candidate.id),
                'result_read',
              );
              harness.tell(entry.id);
            }
          }
          await flush();

          // The oracle, from the registry and the store alone (no notifier is in flight after a flush).
          const queuedIds = new Set(harness.store.listQueued('session-1').map((queued) => queued.taskId));
          for (const { id } of tasks) {
            const snapshot = harness.service.get(id, harness.owner);
            const ended = snapshot.status !== 'running' && snapshot.status !== 'stopping';
            const expected =
              ended &&
              harness.deliverable &&
              (queuedIds.has(id) || (!snapshot.reported && snapshot.stopInitiator !== 'model'));
            expect([id, harness.feed.find(id)?.resultPending]).toEqual([id, expected]);
          }
        }
        const folded = harness.events.reduce(reduceBackgroundWorks, EMPTY_BACKGROUND_WORKS);
        const fromLevel = reduceBackgroundWorks(EMPTY_BACKGROUND_WORKS, harness.feed.level());
        expect([...folded.works.values()]).toEqual([...fromLevel.works.values()]);
        harness.feed.dispose();
        harness.policy.dispose();
        await harness.service.dispose();
        harnesses = harnesses.filter((candidate) => candidate !== harness);
      }),
      { numRuns: 60 },
    );
  });
});
