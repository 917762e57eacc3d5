import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createBackgroundWorksStore, isBackgroundTaskEvent } from '../events/index.js';
import { createMemorySessionStore, type MemorySessionStore, type TaskRecordInput } from '../store/index.js';
import {
  createStoreDashboardBackend,
  readFileTail,
  type StoreDashboardBackend,
} from './store-dashboard-backend.js';

const directories: string[] = [];
const backends: StoreDashboardBackend[] = [];

afterEach(() => {
  for (const backend of backends.splice(0)) backend.dispose();
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function setup(live: boolean, options: { stopTimeoutMs?: number } = {}) {
  const store: MemorySessionStore = createMemorySessionStore();
  store.createSession({ id: 's', cwd: '/' });
  store.acquireSession('s', { runtime: 'rt-1', pid: 4242, acquiredAt: 0 }, () => false);
  store.upsertTask({
    id: 'bash-1',
    sessionId: 's',
    kind: 'bash',
    label: 'sleep',
    status: 'running',
    detail: { pid: 77 },
    isBackgrounded: true,
    branchGeneration: 0,
    startedAt: 1,
    reported: false,
  });
  const backend = createStoreDashboardBackend({
    store,
    pollMs: 3_600_000,
    stopPollMs: 1,
    isHolderLive: () => live,
    logger: { warn() {} },
    ...options,
  });
  backends.push(backend);
  return { store, backend };
}

/** The record of `bash-1` once it ended (reported: its notifier took the claim). */
function ended(overrides: Partial<TaskRecordInput> = {}): TaskRecordInput {
  return {
    id: 'bash-1',
    sessionId: 's',
    kind: 'bash',
    label: 'sleep',
    status: 'completed',
    detail: { exitCode: 0 },
    isBackgrounded: true,
    branchGeneration: 0,
    startedAt: 1,
    endedAt: 2,
    reported: true,
    ...overrides,
  };
}

function admitNotification(store: MemorySessionStore, taskId = 'bash-1') {
  return store.admit({
    sessionId: 's',
    kind: 'notification',
    idempotencyKey: `task:${taskId}:1`,
    taskId,
    text: `<task-notification><task-id>${taskId}</task-id></task-notification>`,
  }).entry;
}

describe('pending results in the store-backed backend', () => {
  it('shows a result pending while its notification waits in the ledger, then its final state', () => {
    const { store, backend } = setup(true);
    const works = createBackgroundWorksStore(backend.events, { logger: { warn() {} } });
    const states = () => works.sessionWorks('s').map((work) => work.state);
    // Ended, nobody took it yet: the notifier is about to.
    store.upsertTask(ended({ reported: false }));
    backend.refresh();
    expect(states()).toEqual(['resultPending']);
    // Claimed by the notifier and queued: still pending, however many polls.
    store.upsertTask(ended());
    const entry = admitNotification(store);
    backend.refresh();
    backend.refresh();
    expect(states()).toEqual(['resultPending']);
    // Delivered (the task record did not change): the next poll shows it completed.
    store.commitDelivery('s', [entry.id], { role: 'user', content: { text: entry.text }, source: 'test' });
    backend.refresh();
    expect(states()).toEqual(['completed']);
    expect(works.work('bash-1')).toMatchObject({ exitCode: 0, status: 'completed' });
    works.dispose();
  });

  it('ends a pending result that was discarded, and never shows a claimed end without a notification', () => {
    const { store, backend } = setup(true);
    store.upsertTask(ended({ status: 'failed', detail: { exitCode: 1 } }));
    const entry = admitNotification(store);
    backend.refresh();
    expect(backend.events.find('bash-1')?.resultPending).toBe(true);
    store.markDiscarded([entry.id], 'result_read');
    backend.refresh();
    expect(backend.events.find('bash-1')?.resultPending).toBe(false);

    // Taken by its own call (a waiter), or the model stopped it: nothing is queued, nothing pending.
    store.upsertTask(ended({ id: 'bash-2', startedAt: 3 }));
    store.upsertTask(
      ended({ id: 'bash-3', startedAt: 4, status: 'killed', stopInitiator: 'model', reported: false }),
    );
    backend.refresh();
    expect(['bash-2', 'bash-3'].map((id) => backend.events.find(id)?.resultPending)).toEqual([false, false]);
  });

  it('never shows a result pending in a session no runtime holds, or of an abandoned branch', () => {
    const gone = setup(false);
    gone.store.upsertTask(ended());
    admitNotification(gone.store);
    gone.backend.refresh();
    expect(gone.backend.events.find('bash-1')).toMatchObject({ status: 'completed', resultPending: false });

    const rewound = setup(true);
    rewound.store.updateSession('s', { branchGeneration: 1 });
    rewound.store.upsertTask(ended({ reported: false }));
    rewound.backend.refresh();
    expect(rewound.backend.events.find('bash-1')?.resultPending).toBe(false);
  });
});

describe('the store-backed dashboard backend', () => {
  it('reads only what changed between polls, and the whole table again only after records were deleted', () => {
    let time = 100_000;
    const store: MemorySessionStore = createMemorySessionStore({ now: () => time });
    store.createSession({ id: 's', cwd: '/' });
    const backend = createStoreDashboardBackend({
      store,
      pollMs: 3_600_000,
      isHolderLive: () => true,
      logger: { warn() {} },
    });
    backends.push(backend);
    const seen: string[] = [];
    backend.events.subscribe((event) => {
      if (isBackgroundTaskEvent(event)) seen.push(`${event.type} ${event.taskId} ${event.status}`);
    });
    const reads: Array<number | undefined> = [];
    const listTasks = store.listTasks.bind(store);
    store.listTasks = (filter) => {
      reads.push(filter?.updatedSince);
      return listTasks(filter);
    };
    store.upsertTask(ended({ reported: false }));
    backend.refresh();
    expect(seen).toEqual(['BackgroundTaskCompleted bash-1 completed']);
    // The store is asked only for records written since (a margin before) the newest one it knows.
    expect(reads).toEqual([expect.any(Number)]);
    for (let poll = 0; poll < 200; poll += 1) backend.refresh();
    expect(reads.filter((since) => since === undefined)).toHaveLength(0);
    // A deletion (here a prune of the finished record) makes the next poll read everything, and drop it.
    time += 1;
    expect(store.prune({ finishedRecordMaxAgeMs: 0 }).tasks).toBe(1);
    backend.refresh();
    expect(reads.filter((since) => since === undefined)).toHaveLength(1);
    expect(backend.events.find('bash-1')).toBeUndefined();
    expect(backend.events.level('s').tasks).toEqual([]);
    backend.refresh();
    expect(reads.filter((since) => since === undefined)).toHaveLength(1);
  });

  it('reads everything again after the wall clock stepped back, so a record stamped before the newest one is seen', () => {
    let time = 100_000;
    let monotonic = 0;
    const store: MemorySessionStore = createMemorySessionStore({ now: () => time });
    store.createSession({ id: 's', cwd: '/' });
    const reads: Array<number | undefined> = [];
    const listTasks = store.listTasks.bind(store);
    store.listTasks = (filter) => {
      reads.push(filter?.updatedSince);
      return listTasks(filter);
    };
    const backend = createStoreDashboardBackend({
      store,
      pollMs: 3_600_000,
      now: () => time,
      monotonicNow: () => monotonic,
      isHolderLive: () => false,
      logger: { warn() {} },
    });
    backends.push(backend);
    store.upsertTask(ended({ id: 'bash-2' }));
    backend.refresh();
    // Both clocks move on together: incremental reads.
    time += 500;
    monotonic += 500;
    backend.refresh();
    expect(reads.slice(-2).every((since) => since !== undefined)).toBe(true);
    // The wall clock steps back a second: a record written now is stamped before the newest one seen.
    time -= 1000;
    monotonic += 10;
    store.upsertTask(ended({ id: 'bash-3' }));
    backend.refresh();
    expect(reads.at(-1)).toBeUndefined();
    expect(backend.events.find('bash-3')?.status).toBe('completed');
  });

  it('throws a clear error and expires the command when the holder does not answer in time', async () => {
    const { store, backend } = setup(true, { stopTimeoutMs: 20 });
    const error = await backend.stopBackgroundWork('bash-1').then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toMatchObject({ code: 'STOP_NOT_ANSWERED' });
    expect((error as Error).message).toContain('did not answer the stop of "bash-1" within 20 ms');
    expect(store.getCommand(1)).toMatchObject({ state: 'expired', runtime: 'rt-1', workId: 'bash-1' });
  });

  it('stops waiting for an answer when disposed, and expires the command', async () => {
    const { store, backend } = setup(true, { stopTimeoutMs: 600_000 });
    const stopping = backend.stopBackgroundWork('bash-1').then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    await vi.waitFor(() => expect(store.getCommand(1)).toMatchObject({ state: 'pending' }));
    backend.dispose();
    expect(await stopping).toMatchObject({ code: 'STOP_NOT_ANSWERED' });
    expect(store.getCommand(1)).toMatchObject({ state: 'expired' });
  });

  it('passes a rejection through, and refuses a work whose holder is gone', async () => {
    const { store, backend } = setup(true);
    const answering = setInterval(() => {
      for (const command of store.listPendingCommands('rt-1')) {
        store.answerCommand(command.id, { state: 'rejected', reason: 'cancel_not_supported' });
      }
    }, 1);
    try {
      expect(await backend.stopBackgroundWork('bash-1')).toEqual({
        ok: false,
        reason: 'cancel_not_supported',
      });
    } finally {
      clearInterval(answering);
    }
    const dead = setup(false);
    expect(dead.backend.events.find('bash-1')).toMatchObject({ status: 'lost', pid: 77 });
    expect(await dead.backend.stopBackgroundWork('bash-1')).toEqual({ ok: false, reason: 'not_running' });
    expect(dead.store.getCommand(1)).toBeUndefined();
  });

  it('shows a schedule whose runtime is gone as waiting for its session, and stops it for the next resume', async () => {
    const { store, backend } = setup(false);
    const progress = {
      when: 'every 2 s, 3 times',
      fired: 1,
      times: 3,
      nextAt: 5000,
      missed: 'run_once' as const,
    };
    store.upsertTask({
      id: 'schedule-1',
      sessionId: 's',
      kind: 'schedule',
      label: 'schedule: Check the deploy.',
      status: 'running',
      detail: { schedule: progress },
      isBackgrounded: true,
      branchGeneration: 0,
      startedAt: 1,
      reported: false,
    });
    store.saveSchedule({
      sessionId: 's',
      id: 'schedule-1',
      definition: { prompt: 'Check the deploy.', every_ms: 2000, times: 3 },
      fired: 1,
      lastDueAt: 3000,
      nextAt: 5000,
    });
    backend.refresh();
    expect(backend.events.find('schedule-1')).toMatchObject({
      status: 'running',
      kind: 'schedule',
      schedule: progress,
    });
    expect(await backend.stopBackgroundWork('schedule-1')).toEqual({ ok: true });
    expect(store.getTask('schedule-1', 's')).toMatchObject({ status: 'stopping', stopInitiator: 'user' });
  });

  it("lists a live session's foreground commands with their tool call, and moves one through a command", async () => {
    const { store, backend } = setup(true, { stopTimeoutMs: 5000 });
    store.upsertTask({
      id: 'bash-2',
      sessionId: 's',
      kind: 'bash',
      label: 'make check',
      status: 'running',
      detail: { toolUseId: 'call_9' },
      isBackgrounded: false,
      branchGeneration: 0,
      startedAt: 2,
      reported: false,
    });
    expect(backend.listForegroundWork('s')).toEqual([
      {
        workId: 'bash-2',
        sessionId: 's',
        toolCallId: 'call_9',
        taskKind: 'bash',
        label: 'make check',
        startedAt: 2,
        canMoveToBackground: true,
      },
    ]);
    const answers: Array<{ state: 'acknowledged' } | { state: 'rejected'; reason: string }> = [
      { state: 'acknowledged' },
      { state: 'rejected', reason: 'not_supported' },
      { state: 'rejected', reason: 'move_failed' },
    ];
    const answering = setInterval(() => {
      for (const command of store.listPendingCommands('rt-1')) {
        store.answerCommand(command.id, answers.shift()!);
      }
    }, 1);
    try {
      expect(await backend.moveToBackground('bash-2')).toEqual({ ok: true, workId: 'bash-2' });
      expect(store.getCommand(1)).toMatchObject({
        type: 'move_to_background',
        workId: 'bash-2',
        sessionId: 's',
      });
      expect(await backend.moveToBackground('bash-2')).toEqual({ ok: false, reason: 'not_supported' });
      await expect(backend.moveToBackground('bash-2')).rejects.toMatchObject({
        code: 'MOVE_FAILED',
        message: expect.stringContaining('could not move it to the background (move_failed)'),
      });
    } finally {
      clearInterval(answering);
    }
    // A background work, an unknown one: nothing to move, and no command is written.
    expect(await backend.moveToBackground('bash-1')).toEqual({ ok: false, reason: 'not_running' });
    expect(await backend.moveToBackground('bash-404')).toEqual({ ok: false, reason: 'not_found' });
    expect(store.getCommand(4)).toBeUndefined();
  });

  it('shows no foreground work and moves nothing for a session whose holder is gone', async () => {
    const { store, backend } = setup(false);
    store.upsertTask({
      id: 'bash-2',
      sessionId: 's',
      kind: 'bash',
      label: 'make check',
      status: 'running',
      isBackgrounded: false,
      branchGeneration: 0,
      startedAt: 2,
      reported: false,
    });
    expect(backend.listForegroundWork('s')).toEqual([]);
    expect(await backend.moveToBackground('bash-2')).toEqual({ ok: false, reason: 'not_running' });
    expect(store.getCommand(1)).toBeUndefined();
  });

  it('times out a move nobody answers, and expires its command', async () => {
    const { store, backend } = setup(true, { stopTimeoutMs: 20 });
    store.upsertTask({
      id: 'bash-2',
      sessionId: 's',
      kind: 'bash',
      label: 'make check',
      status: 'running',
      isBackgrounded: false,
      branchGeneration: 0,
      startedAt: 2,
      reported: false,
    });
    await expect(backend.moveToBackground('bash-2')).rejects.toMatchObject({ code: 'STOP_NOT_ANSWERED' });
    expect(store.getCommand(1)).toMatchObject({ state: 'expired', type: 'move_to_background' });
  });

  it('has no output for a task without a file', () => {
    const { backend } = setup(true);
    expect(backend.outputSnapshot('s', 'bash-1', 100)).toBeUndefined();
    expect(backend.outputSnapshot('s', 'bash-404', 100)).toBeUndefined();
  });

  it('validates its options', () => {
    const store = createMemorySessionStore();
    expect(() => createStoreDashboardBackend({ store, pollMs: 0 })).toThrow(/`pollMs`/);
    expect(() => createStoreDashboardBackend({ store, stopTimeoutMs: -1 })).toThrow(/`stopTimeoutMs`/);
    expect(() => createStoreDashboardBackend({ store, polMs: 5 } as never)).toThrow(/Unknown option `polMs`/);
  });
});

describe('readFileTail', () => {
  it('keeps the end of a file within the budget without splitting a character', () => {
    const directory = mkdtempSync(join(tmpdir(), 'errand-tail-'));
    directories.push(directory);
    const file = join(directory, 'out');
    writeFileSync(file, 'abcé€z');
    expect(readFileTail(file, 100)).toEqual({ text: 'abcé€z', totalBytes: 9, startBytes: 0 });
    expect(readFileTail(file, 4)).toEqual({ text: '€z', totalBytes: 9, startBytes: 5 });
    expect(readFileTail(file, 3)).toEqual({ text: 'z', totalBytes: 9, startBytes: 8 });
    expect(readFileTail(join(directory, 'missing'), 10)).toBeUndefined();
  });

  it('reads only regular files: a directory or a named pipe put where the output was is no output', () => {
    const directory = mkdtempSync(join(tmpdir(), 'errand-tail-'));
    directories.push(directory);
    expect(readFileTail(directory, 100)).toBeUndefined();
    const fifo = join(directory, 'out.fifo');
    execFileSync('mkfifo', [fifo]);
    // Held open here, so a read that opens it does not block this test (with no writer it would block forever).
    const held = openSync(fifo, constants.O_RDWR | constants.O_NONBLOCK);
    try {
      expect(readFileTail(fifo, 100)).toBeUndefined();
    } finally {
      closeSync(held);
    }
  });
});

describe('the store feed between full reads', () => {
  it('derives again only what changed and what is unsettled, and still shows every change', () => {
    let time = 1_000;
    const store: MemorySessionStore = createMemorySessionStore({ now: () => time });
    const sessionReads: string[] = [];
    const watched = Object.create(store, {
      getSession: {
        value: (id: string) => {
          sessionReads.push(id);
          return store.getSession(id);
        },
      },
    }) as MemorySessionStore;
    for (let index = 0; index < 50; index += 1) {
      store.createSession({ id: `told-${index}`, cwd: '/' });
      store.upsertTask({ ...ended({ id: `bash-${index + 1}` }), sessionId: `told-${index}` });
      // Far apart: a poll reads again only what was written in its margin before the newest record.
      time += 10_000;
    }
    store.createSession({ id: 'untold', cwd: '/' });
    store.upsertTask({ ...ended({ id: 'bash-100', reported: false }), sessionId: 'untold' });
    const backend = createStoreDashboardBackend({
      store: watched,
      pollMs: 3_600_000,
      isHolderLive: () => false,
      logger: { warn() {} },
    });
    backends.push(backend);
    // Records written within the margin before the newest one are read again: the untold one here.
    sessionReads.length = 0;
    backend.refresh();
    // The 50 told endings are settled: only the untold one is looked at again.
    expect(new Set(sessionReads)).toEqual(new Set(['untold']));
    const events: string[] = [];
    backend.events.subscribe((event) => {
      if (isBackgroundTaskEvent(event)) events.push(`${event.type} ${event.taskId} ${event.status}`);
    });
    store.upsertTask({ ...ended({ id: 'bash-7', status: 'failed' }), sessionId: 'told-6' });
    sessionReads.length = 0;
    backend.refresh();
    expect(events).toEqual(['BackgroundTaskUpdated bash-7 failed']);
    expect(new Set(sessionReads)).toEqual(new Set(['told-6', 'untold']));
    expect(backend.events.find('bash-7')?.status).toBe('failed');
  });
});
