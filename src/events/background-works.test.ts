import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createTaskService } from '../registry/index.js';
import { createOwner, type TaskService, type TaskStatus } from '../tasks/index.js';
import { scriptedTask } from '../testing/index.js';
import { createBackgroundEventFeed } from './background-event-feed.js';
import type { BackgroundTaskEvent, BackgroundWorksLevel } from './background-events.js';
import type { BackgroundTaskFacts } from './background-task-facts.js';
import {
  backgroundWorkStateOf,
  countBadgeWorks,
  EMPTY_BACKGROUND_WORKS,
  hasRunningWork,
  reduceBackgroundWorks,
  reduceWithDelta,
  selectSessionWorks,
  toBackgroundWork,
} from './background-works.js';
import { type BackgroundWorksChange, createBackgroundWorksStore } from './background-works-store.js';

function facts(overrides: Partial<BackgroundTaskFacts> = {}): BackgroundTaskFacts {
  return {
    sessionId: 's1',
    taskId: 'bash-1',
    taskKind: 'bash',
    kind: 'bash',
    label: 'npm test',
    toolUseId: null,
    status: 'running',
    cancellable: true,
    resultPending: false,
    attempt: 1,
    startedAt: 100,
    endedAt: null,
    cancelRequestedAt: null,
    pid: null,
    outputBytes: null,
    tail: null,
    exitCode: null,
    signal: null,
    reason: null,
    error: null,
    sandbox: null,
    limits: null,
    schedule: null,
    ...overrides,
  };
}

let nextId = 1;
function event(
  type: BackgroundTaskEvent['type'],
  overrides: Partial<BackgroundTaskFacts> = {},
): BackgroundTaskEvent {
  return { ...facts(overrides), type, id: nextId++, at: 0 };
}

function level(
  tasks: BackgroundTaskFacts[],
  scope: 'all' | 'session' = 'all',
  sessionId: string | null = null,
): BackgroundWorksLevel {
  return { type: 'BackgroundWorksLevel', id: nextId++, at: 0, scope, sessionId, tasks };
}

describe('backgroundWorks states', () => {
  const cases: [TaskStatus, Partial<BackgroundTaskFacts>, string][] = [
    ['running', {}, 'running'],
    ['stopping', { cancellable: false, cancelRequestedAt: 5 }, 'running'],
    ['completed', { resultPending: true }, 'resultPending'],
    ['completed', {}, 'completed'],
    ['killed', { reason: 'cancelled', resultPending: true }, 'resultPending'],
    ['failed', { error: 'exit 1', resultPending: true }, 'resultPending'],
    ['lost', { resultPending: true }, 'resultPending'],
    ['killed', { reason: 'cancelled' }, 'cancelled'],
    ['killed', { reason: null }, 'cancelled'],
    ['killed', { reason: 'timed_out' }, 'failed'],
    ['killed', { reason: 'output_limit' }, 'failed'],
    ['failed', { reason: 'spawn_error' }, 'failed'],
    ['failed', { error: 'exit 1' }, 'failed'],
    ['lost', {}, 'failed'],
  ];
  it.each(cases)('%s %j → %s', (status, overrides, expected) => {
    expect(backgroundWorkStateOf(facts({ status, ...overrides }))).toBe(expected);
  });

  it('says how an ended work ended, while its result is pending and after', () => {
    const pending = { resultPending: true };
    expect(toBackgroundWork(facts({ status: 'killed', reason: 'timed_out', ...pending }))).toMatchObject({
      state: 'resultPending',
      endState: 'failed',
    });
    expect(toBackgroundWork(facts({ status: 'killed', reason: 'cancelled', ...pending })).endState).toBe(
      'cancelled',
    );
    expect(toBackgroundWork(facts({ status: 'completed' }))).toMatchObject({
      state: 'completed',
      endState: 'completed',
    });
    expect(toBackgroundWork(facts({ status: 'stopping' })).endState).toBeNull();
  });

  it('never shows a running work as pending, whatever its facts say', () => {
    expect(backgroundWorkStateOf(facts({ status: 'running', resultPending: true }))).toBe('running');
    expect(backgroundWorkStateOf(facts({ status: 'stopping', resultPending: true }))).toBe('running');
  });
});

describe('reduceBackgroundWorks', () => {
  it('uses the task id as the work id and carries what a viewer shows', () => {
    const state = reduceBackgroundWorks(EMPTY_BACKGROUND_WORKS, event('BackgroundTaskStarted', { pid: 9 }));
    expect(state.works.get('bash-1')).toMatchObject({
      workId: 'bash-1',
      sessionId: 's1',
      kind: 'bash',
      state: 'running',
      cancellable: true,
      pid: 9,
    });
  });

  it('returns the same state, and no delta, when nothing a viewer sees changed', () => {
    const started = reduceBackgroundWorks(EMPTY_BACKGROUND_WORKS, event('BackgroundTaskStarted'));
    const again = reduceWithDelta(started, event('BackgroundTaskUpdated'));
    expect(again.state).toBe(started);
    expect(again.delta).toBeUndefined();
    expect(reduceBackgroundWorks(started, level([facts()]))).toBe(started);
    expect(reduceBackgroundWorks(EMPTY_BACKGROUND_WORKS, level([]))).toBe(EMPTY_BACKGROUND_WORKS);
  });

  it('turns a resultPending entry into its final state once its result is no longer pending', () => {
    let state = reduceBackgroundWorks(EMPTY_BACKGROUND_WORKS, event('BackgroundTaskStarted'));
    state = reduceBackgroundWorks(
      state,
      event('BackgroundTaskCompleted', { status: 'completed', exitCode: 0, resultPending: true }),
    );
    expect(state.works.get('bash-1')?.state).toBe('resultPending');
    const delivered = reduceWithDelta(
      state,
      event('BackgroundTaskUpdated', { status: 'completed', exitCode: 0, resultPending: false }),
    );
    expect(delivered.state.works.get('bash-1')).toMatchObject({ state: 'completed', exitCode: 0 });
    expect(delivered.delta?.removed).toEqual([]);
    expect(delivered.delta?.upserted.map((work) => work.state)).toEqual(['completed']);
  });

  it('does not mutate the state it was given', () => {
    const started = reduceBackgroundWorks(EMPTY_BACKGROUND_WORKS, event('BackgroundTaskStarted'));
    reduceBackgroundWorks(started, event('BackgroundTaskCompleted', { status: 'killed' }));
    expect(started.works.get('bash-1')?.state).toBe('running');
    expect(EMPTY_BACKGROUND_WORKS.works.size).toBe(0);
  });

  it('replaces only the scope of a level', () => {
    let state = EMPTY_BACKGROUND_WORKS;
    state = reduceBackgroundWorks(
      state,
      event('BackgroundTaskStarted', { taskId: 'bash-1', sessionId: 's1' }),
    );
    state = reduceBackgroundWorks(
      state,
      event('BackgroundTaskStarted', { taskId: 'bash-2', sessionId: 's1' }),
    );
    state = reduceBackgroundWorks(
      state,
      event('BackgroundTaskStarted', { taskId: 'bash-3', sessionId: 's2' }),
    );

    const sessionLevel = reduceWithDelta(state, level([facts({ taskId: 'bash-2' })], 'session', 's1'));
    expect([...sessionLevel.state.works.keys()]).toEqual(['bash-2', 'bash-3']);
    expect(sessionLevel.delta).toEqual({ upserted: [], removed: ['bash-1'] });

    const all = reduceBackgroundWorks(
      sessionLevel.state,
      level([facts({ taskId: 'agent-1', taskKind: 'agent', kind: 'subagent' })]),
    );
    expect([...all.works.keys()]).toEqual(['agent-1']);
  });

  it('drops a removed task and nothing else, and a removal of what it does not hold changes nothing', () => {
    let state = EMPTY_BACKGROUND_WORKS;
    for (const taskId of ['bash-1', 'bash-2']) {
      state = reduceBackgroundWorks(state, event('BackgroundTaskStarted', { taskId, sessionId: 's1' }));
    }
    const removal = (taskId: string) =>
      ({ type: 'BackgroundTaskRemoved', id: 9, at: 1, taskId, sessionId: 's1', attempt: 1 }) as const;
    const removed = reduceWithDelta(state, removal('bash-1'));
    expect([...removed.state.works.keys()]).toEqual(['bash-2']);
    expect(removed.delta).toEqual({ upserted: [], removed: ['bash-1'] });
    const again = reduceWithDelta(removed.state, removal('bash-1'));
    expect(again.state).toBe(removed.state);
    expect(again.delta).toBeUndefined();
  });

  it('selects a session, counts the badge and marks running sessions', () => {
    let state = EMPTY_BACKGROUND_WORKS;
    const add = (overrides: Partial<BackgroundTaskFacts>) => {
      state = reduceBackgroundWorks(state, event('BackgroundTaskStarted', overrides));
    };
    add({ taskId: 'bash-1', startedAt: 3 });
    add({ taskId: 'pty-1', taskKind: 'pty', startedAt: 1 });
    add({ taskId: 'agent-1', taskKind: 'agent', kind: 'subagent' });
    add({ taskId: 'workflow-1', taskKind: 'workflow', kind: 'workflow', sessionId: 's2' });
    add({ taskId: 'monitor-1', taskKind: 'monitor', kind: 'monitor' });
    add({ taskId: 'bash-2', status: 'failed' });
    add({ taskId: 'bash-3', status: 'completed', sessionId: 's3' });

    expect(selectSessionWorks(state, 's1').map((work) => work.workId)).toEqual([
      'pty-1',
      'bash-1',
      'agent-1',
      'monitor-1',
      'bash-2',
    ]);
    expect(countBadgeWorks(state, 's1')).toBe(3);
    expect(countBadgeWorks(state)).toBe(4);
    expect(hasRunningWork(state, 's2')).toBe(true);
    expect(hasRunningWork(state, 's3')).toBe(false);
    expect(hasRunningWork(state, null)).toBe(false);
  });
});

describe('the live backgroundWorks store', () => {
  let service: TaskService;
  beforeEach(() => {
    service = createTaskService({ logger: { warn: vi.fn() } });
    service.attachController('test');
  });
  afterEach(async () => {
    await service.dispose();
  });

  it('follows the registry: running, resultPending, completed, with one change per visible step', async () => {
    const feed = createBackgroundEventFeed({ tasks: service, logger: { warn: vi.fn() } });
    const store = createBackgroundWorksStore(feed, { logger: { warn: vi.fn() } });
    const changes: BackgroundWorksChange[] = [];
    store.subscribe((change) => changes.push(change));
    const owner = createOwner('s1');
    const task = scriptedTask({ kind: 'bash', owner });
    const { id } = await service.start(task.spec);
    expect(store.sessionWorks('s1')).toMatchObject([{ workId: id, state: 'running' }]);
    expect(store.badgeCount()).toBe(1);
    expect(store.hasRunningWork('s1')).toBe(true);

    service.setStopInitiator(id, 'model', owner);
    expect(changes).toHaveLength(1);

    task.settle({ status: 'completed', detail: { exitCode: 0 } });
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(store.work(id)).toMatchObject({ state: 'resultPending', exitCode: 0 });
    expect(store.hasRunningWork('s1')).toBe(false);

    // Without a ledger, the claim is what ends a pending result.
    expect(service.claim(id, owner)).toBe(true);
    expect(store.work(id)).toMatchObject({ state: 'completed', exitCode: 0 });
    expect(changes.map((change) => [change.upserted.map((work) => work.state), change.removed])).toEqual([
      [['running'], []],
      [['resultPending'], []],
      [['completed'], []],
    ]);
    expect(changes.map((change) => change.eventId)).toEqual([1, 2, 3]);

    store.dispose();
    feed.dispose();
  });

  it('starts from the level of work that already exists', async () => {
    const owner = createOwner('s9');
    await service.start(scriptedTask({ kind: 'agent', owner }).spec);
    const feed = createBackgroundEventFeed({ tasks: service, logger: { warn: vi.fn() } });
    const store = createBackgroundWorksStore(feed);
    expect(store.sessionWorks('s9')).toMatchObject([{ kind: 'subagent', state: 'running' }]);
    store.dispose();
    feed.dispose();
  });
});
