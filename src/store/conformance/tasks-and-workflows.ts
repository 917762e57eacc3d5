/** Conformance: task records (upsert, keys, lost on resume) and workflow journals (runs, idempotent steps). */
import { describe, expect, it } from 'vitest';
import type { NewWorkflowRun, TaskRecordInput } from '../session-store.js';
import { expectErrandError, type OpenSessionStore, START_TIME, useHarness } from './harness.js';

function task(overrides: Partial<TaskRecordInput> = {}): TaskRecordInput {
  return {
    id: 'bash-1',
    sessionId: 's',
    kind: 'bash',
    label: 'npm test',
    status: 'running',
    detail: { pid: 4242 },
    isBackgrounded: true,
    branchGeneration: 0,
    startedAt: START_TIME,
    reported: false,
    ...overrides,
  };
}

function run(overrides: Partial<NewWorkflowRun> = {}): NewWorkflowRun {
  return {
    runId: 'run-1',
    sessionId: 's',
    taskId: 'workflow-1',
    scriptPath: '/work/flows/release.ts',
    scriptHash: 'sha256:abc',
    input: { version: '1.2.3' },
    ...overrides,
  };
}

export function describeTasksAndWorkflows(openStore: OpenSessionStore): void {
  const harness = useHarness(openStore);

  describe('task records', () => {
    it('upserts a record and reads it back', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      const stored = harness.store.upsertTask(task({ outputFile: '/tmp/out.log', stopInitiator: 'model' }));
      expect(stored).toEqual({
        schemaVersion: 1,
        id: 'bash-1',
        sessionId: 's',
        kind: 'bash',
        label: 'npm test',
        status: 'running',
        detail: { pid: 4242 },
        isBackgrounded: true,
        branchGeneration: 0,
        stopInitiator: 'model',
        startedAt: START_TIME,
        endedAt: undefined,
        reported: false,
        error: undefined,
        resultText: undefined,
        outputFile: '/tmp/out.log',
        traceparent: undefined,
        updatedAt: START_TIME,
        process: undefined,
        statusFile: undefined,
        durable: false,
        readOffset: 0,
      });
      expect(harness.store.getTask('bash-1', 's')).toEqual(stored);
      harness.advance(100);
      const settled = harness.store.upsertTask(
        task({ status: 'completed', endedAt: START_TIME + 100, reported: true, detail: { exitCode: 0 } }),
      );
      expect(settled).toMatchObject({
        status: 'completed',
        endedAt: START_TIME + 100,
        reported: true,
        outputFile: undefined,
      });
      expect(harness.store.getTask('bash-1', 's')).toEqual(settled);
      expect(harness.store.listTasks()).toHaveLength(1);
    });

    it("keeps a task span's traceparent, and refuses one that is not the W3C form", () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
      harness.store.upsertTask(task({ traceparent }));
      expect(harness.store.getTask('bash-1', 's')?.traceparent).toBe(traceparent);
      harness.store.upsertTask(task({ status: 'lost', traceparent }));
      expect(harness.store.listTasks({ sessionId: 's' })[0]?.traceparent).toBe(traceparent);
      const error = expectErrandError(
        () => harness.store.upsertTask(task({ traceparent: '00-short-01' })),
        'INVALID_ARGUMENT',
      );
      expect(error.message).toContain('`traceparent`');
      expect(harness.store.getTask('bash-1', 's')?.status).toBe('lost');
    });

    it('keys records by session: the same id elsewhere, or ownerless, is another record', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      harness.store.createSession({ id: 't', cwd: '/' });
      harness.store.upsertTask(task());
      harness.store.upsertTask(task({ sessionId: 't', startedAt: START_TIME + 1 }));
      harness.store.upsertTask(task({ sessionId: undefined, label: 'ownerless', startedAt: START_TIME + 2 }));
      expect(harness.store.getTask('bash-1')?.label).toBe('ownerless');
      expect(harness.store.getTask('bash-1', 't')?.sessionId).toBe('t');
      expect(harness.store.listTasks().map((record) => record.sessionId)).toEqual(['s', 't', undefined]);
      expect(harness.store.listTasks({ sessionId: null }).map((record) => record.label)).toEqual([
        'ownerless',
      ]);
      expect(harness.store.listTasks({ sessionId: 't' })).toHaveLength(1);
      expect(harness.store.getTask('bash-2', 's')).toBeUndefined();
    });

    it('lists by status, oldest start first', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      harness.store.upsertTask(task({ id: 'bash-2', startedAt: START_TIME + 5, status: 'failed' }));
      harness.store.upsertTask(task({ id: 'bash-1', startedAt: START_TIME + 9 }));
      harness.store.upsertTask(task({ id: 'agent-1', kind: 'agent', startedAt: START_TIME }));
      expect(harness.store.listTasks({ sessionId: 's' }).map((record) => record.id)).toEqual([
        'agent-1',
        'bash-2',
        'bash-1',
      ]);
      expect(
        harness.store.listTasks({ statuses: ['failed', 'completed'] }).map((record) => record.id),
      ).toEqual(['bash-2']);
    });

    it('refuses non-JSON detail, bad statuses and unknown sessions', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      const detail = expectErrandError(
        () => harness.store.upsertTask(task({ detail: { when: new Date(0) } as never })),
        'INVALID_ARGUMENT',
      );
      expect(detail.message).toContain('`detail.when`');
      expectErrandError(
        () => harness.store.upsertTask(task({ status: 'done' as never })),
        'INVALID_ARGUMENT',
      );
      expectErrandError(() => harness.store.upsertTask(task({ startedAt: 1.5 })), 'INVALID_ARGUMENT');
      expectErrandError(
        () => harness.store.upsertTask(task({ sessionId: 'missing' })),
        'STORE_RECORD_NOT_FOUND',
      );
      expect(harness.store.listTasks()).toEqual([]);
    });

    it('marks live records lost on resume, keeping survivors and finished records', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      harness.store.createSession({ id: 't', cwd: '/' });
      harness.store.upsertTask(task({ id: 'bash-1' }));
      harness.store.upsertTask(task({ id: 'bash-2', status: 'stopping', stopInitiator: 'user' }));
      harness.store.upsertTask(task({ id: 'bash-3', status: 'completed', endedAt: START_TIME + 1 }));
      harness.store.upsertTask(task({ id: 'bash-4' }));
      harness.store.upsertTask(task({ id: 'bash-1', sessionId: 't' }));
      harness.advance(50);
      const lost = harness.store.markLiveAsLost({ sessionId: 's', keepTaskIds: ['bash-4'] });
      expect(lost.map((record) => [record.id, record.status, record.endedAt])).toEqual([
        ['bash-1', 'lost', START_TIME + 50],
        ['bash-2', 'lost', START_TIME + 50],
      ]);
      expect(lost[0]?.error).toMatch(/process is gone/);
      expect(lost[1]?.stopInitiator).toBe('user');
      expect(harness.store.getTask('bash-3', 's')?.status).toBe('completed');
      expect(harness.store.getTask('bash-4', 's')?.status).toBe('running');
      expect(harness.store.getTask('bash-1', 't')?.status).toBe('running');
      const everywhere = harness.store.markLiveAsLost({ error: 'host rebooted' });
      expect(everywhere.map((record) => [record.sessionId, record.id, record.error])).toEqual([
        ['s', 'bash-4', 'host rebooted'],
        ['t', 'bash-1', 'host rebooted'],
      ]);
      expect(harness.store.markLiveAsLost()).toEqual([]);
    });

    it('marks finished records of one session told, once, and leaves live, told and unknown ones', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      harness.store.createSession({ id: 't', cwd: '/' });
      harness.store.upsertTask(task({ id: 'bash-1', status: 'completed', endedAt: START_TIME + 1 }));
      harness.store.upsertTask(task({ id: 'bash-2' }));
      harness.store.upsertTask(
        task({ id: 'bash-3', status: 'failed', endedAt: START_TIME + 1, reported: true, error: 'exit 1' }),
      );
      harness.store.upsertTask(task({ id: 'bash-1', sessionId: 't', status: 'lost', endedAt: START_TIME }));
      harness.advance(10);
      const told = harness.store.markTold('s', ['bash-1', 'bash-2', 'bash-3', 'bash-9']);
      expect(told.map((record) => [record.id, record.reported, record.updatedAt])).toEqual([
        ['bash-1', true, START_TIME + 10],
      ]);
      expect(harness.store.getTask('bash-1', 's')).toMatchObject({ status: 'completed', reported: true });
      expect(harness.store.getTask('bash-2', 's')).toMatchObject({ status: 'running', reported: false });
      expect(harness.store.getTask('bash-3', 's')?.updatedAt).toBe(START_TIME);
      // Another session's record of the same id is another record.
      expect(harness.store.getTask('bash-1', 't')).toMatchObject({ reported: false });
      expect(harness.store.markTold('s', ['bash-1'])).toEqual([]);
      expect(harness.store.markTold('s', [])).toEqual([]);
      expectErrandError(() => harness.store.markTold('s', [''] as never), 'INVALID_ARGUMENT');
      expectErrandError(() => harness.store.markTold('s', 'bash-1' as never), 'INVALID_ARGUMENT');
    });
  });

  describe('task process facts and the read cursor', () => {
    it('keeps what recognises a process after the fact, and the durable flag', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      const stored = harness.store.upsertTask(
        task({
          process: {
            pid: 4242,
            startTime: 987_654,
            bootId: '0b7c5d1e-1d2f-4a6b-9c3d-2e1f0a9b8c7d',
            pgid: 4242,
            tag: 'ERRAND_PROCESS_TAG=abc.1',
          },
          statusFile: '/tmp/errand-bash-x/1.status',
          durable: true,
        }),
      );
      expect(stored).toMatchObject({
        process: {
          pid: 4242,
          startTime: 987_654,
          bootId: '0b7c5d1e-1d2f-4a6b-9c3d-2e1f0a9b8c7d',
          pgid: 4242,
          tag: 'ERRAND_PROCESS_TAG=abc.1',
        },
        statusFile: '/tmp/errand-bash-x/1.status',
        durable: true,
      });
      expect(harness.store.getTask('bash-1', 's')).toEqual(stored);
      const partial = harness.store.upsertTask(task({ process: { pid: 7 } }));
      expect(partial.process).toEqual({
        pid: 7,
        startTime: undefined,
        bootId: undefined,
        pgid: undefined,
        tag: undefined,
      });
      expect(partial).toMatchObject({ durable: false, statusFile: undefined });
      // Written before the spawn was answered: the tree's tag and boot, no pid yet; the pid comes later.
      const tagged = { tag: 'ERRAND_PROCESS_TAG=abc.2', bootId: '0b7c5d1e-1d2f-4a6b-9c3d-2e1f0a9b8c7d' };
      const early = harness.store.upsertTask(task({ id: 'bash-2', process: tagged }));
      expect(early.process).toEqual({ ...tagged, pid: undefined, startTime: undefined, pgid: undefined });
      expect(harness.store.getTask('bash-2', 's')).toEqual(early);
      const later = harness.store.upsertTask(
        task({ id: 'bash-2', process: { ...tagged, pid: 4343, startTime: 5 } }),
      );
      expect(later.process).toMatchObject({ pid: 4343, startTime: 5, tag: tagged.tag });
    });

    it('refuses malformed process facts, naming the field', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      for (const [process, field] of [
        [{ pid: 0 }, 'process.pid'],
        [{ pid: 1, startTime: -1 }, 'process.startTime'],
        [{ pid: 1, pgid: 1.5 }, 'process.pgid'],
        [{ pid: 1, bootId: '' }, 'process.bootId'],
        // Neither a pid nor a tag: nothing would recognise the tree.
        [{ startTime: 5, bootId: 'b' }, 'process'],
        [{ tag: 'T=1', pid: -3 }, 'process.pid'],
      ] as const) {
        const error = expectErrandError(
          () => harness.store.upsertTask(task({ process: process as never })),
          'INVALID_ARGUMENT',
        );
        expect(error.message).toContain(field);
      }
      expectErrandError(
        () => harness.store.upsertTask(task({ durable: 'yes' as never })),
        'INVALID_ARGUMENT',
      );
      expectErrandError(() => harness.store.upsertTask(task({ readOffset: -1 })), 'INVALID_ARGUMENT');
      expect(harness.store.listTasks()).toEqual([]);
    });

    it('moves the read cursor only forward, and keeps it across upserts that do not name it', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      harness.store.upsertTask(task());
      expect(harness.store.saveTaskReadOffset('bash-1', 's', 120)?.readOffset).toBe(120);
      expect(harness.store.saveTaskReadOffset('bash-1', 's', 80)?.readOffset).toBe(120);
      expect(harness.store.upsertTask(task({ status: 'completed', endedAt: START_TIME })).readOffset).toBe(
        120,
      );
      expect(harness.store.upsertTask(task({ readOffset: 10 })).readOffset).toBe(120);
      expect(harness.store.upsertTask(task({ readOffset: 300 })).readOffset).toBe(300);
      expect(harness.store.saveTaskReadOffset('bash-2', 's', 1)).toBeUndefined();
      expect(harness.store.saveTaskReadOffset('bash-1', undefined, 1)).toBeUndefined();
      expectErrandError(() => harness.store.saveTaskReadOffset('bash-1', 's', -5), 'INVALID_ARGUMENT');
    });
  });

  describe('task records changed since', () => {
    it('lists only the records written at or after updatedSince, and refuses a bad time', () => {
      const store = harness.store;
      store.createSession({ id: 's', cwd: '/' });
      store.upsertTask(task({ id: 'bash-1' }));
      harness.advance(10);
      store.upsertTask(task({ id: 'bash-2' }));
      expect(store.listTasks({ updatedSince: START_TIME + 10 }).map((record) => record.id)).toEqual([
        'bash-2',
      ]);
      expect(store.listTasks({ updatedSince: START_TIME }).map((record) => record.id)).toEqual([
        'bash-1',
        'bash-2',
      ]);
      harness.advance(10);
      store.upsertTask(task({ id: 'bash-1', status: 'completed', endedAt: START_TIME + 20 }));
      expect(store.listTasks({ updatedSince: START_TIME + 20 }).map((record) => record.status)).toEqual([
        'completed',
      ]);
      expectErrandError(() => store.listTasks({ updatedSince: -1 }), 'INVALID_ARGUMENT');
    });

    it('lists only the records told, or only those not yet told, when asked', () => {
      const store = harness.store;
      store.createSession({ id: 's', cwd: '/' });
      store.upsertTask(task({ id: 'bash-1', status: 'completed', endedAt: START_TIME, reported: true }));
      store.upsertTask(task({ id: 'bash-2', status: 'completed', endedAt: START_TIME }));
      store.upsertTask(task({ id: 'bash-3' }));
      const ids = (filter: Parameters<typeof store.listTasks>[0]) =>
        store.listTasks(filter).map((record) => record.id);
      expect(ids({ sessionId: 's', reported: false })).toEqual(['bash-2', 'bash-3']);
      expect(ids({ sessionId: 's', reported: false, statuses: ['completed'] })).toEqual(['bash-2']);
      expect(ids({ reported: true })).toEqual(['bash-1']);
      store.markTold('s', ['bash-2']);
      expect(ids({ sessionId: 's', reported: false })).toEqual(['bash-3']);
      expectErrandError(() => store.listTasks({ reported: 'no' as never }), 'INVALID_ARGUMENT');
    });
  });

  describe('task id sequences', () => {
    it('hands out disjoint blocks above every earlier block and above the ids already used', () => {
      const store = harness.store;
      expect(store.reserveTaskSequences('bash', 0, 100)).toEqual({ first: 1, last: 100 });
      // A second service on the same store: the next block, whatever it thinks it has used.
      expect(store.reserveTaskSequences('bash', 0, 100)).toEqual({ first: 101, last: 200 });
      expect(store.reserveTaskSequences('bash', 450, 10)).toEqual({ first: 451, last: 460 });
      // Kinds count separately.
      expect(store.reserveTaskSequences('agent', 3, 5)).toEqual({ first: 4, last: 8 });
    });

    it('hands out ids above every saved record, however the record got its id', () => {
      const store = harness.store;
      store.createSession({ id: 's', cwd: '/' });
      store.upsertTask(task({ id: 'bash-41' }));
      store.upsertTask(task({ id: 'bash-7' }));
      expect(store.reserveTaskSequences('bash', 0, 10)).toEqual({ first: 42, last: 51 });
      expect(store.reserveTaskSequences('agent', 0, 1)).toEqual({ first: 1, last: 1 });
    });

    it('reads the highest number of a kind, reserved or saved, without reserving any', () => {
      const store = harness.store;
      expect(store.lastTaskSequence('bash')).toBe(0);
      store.reserveTaskSequences('bash', 0, 10);
      expect(store.lastTaskSequence('bash')).toBe(10);
      store.createSession({ id: 's', cwd: '/' });
      store.upsertTask(task({ id: 'bash-41' }));
      expect(store.lastTaskSequence('bash')).toBe(41);
      expect(store.lastTaskSequence('bash')).toBe(41);
      expect(store.lastTaskSequence('agent')).toBe(0);
      expectErrandError(() => store.lastTaskSequence('Not a kind'), 'INVALID_ARGUMENT');
    });

    it('takes back the unused end of the newest block only', () => {
      const store = harness.store;
      const first = store.reserveTaskSequences('bash', 0, 100);
      const second = store.reserveTaskSequences('bash', 0, 100);
      // The older block is not the newest: giving it back would hand out numbers of the second again.
      store.releaseTaskSequences('bash', first, 7);
      expect(store.reserveTaskSequences('pty', 0, 1)).toEqual({ first: 1, last: 1 });
      store.releaseTaskSequences('bash', second, 104);
      expect(store.reserveTaskSequences('bash', 0, 100)).toEqual({ first: 105, last: 204 });
      // Nothing used: the whole block goes back.
      const unused = store.reserveTaskSequences('bash', 0, 100);
      store.releaseTaskSequences('bash', unused, 0);
      expect(store.reserveTaskSequences('bash', 0, 1)).toEqual({ first: 205, last: 205 });
    });

    it('refuses a malformed kind, count or block', () => {
      const store = harness.store;
      expect(
        expectErrandError(() => store.reserveTaskSequences('Bad Kind', 0, 1), 'INVALID_ARGUMENT').message,
      ).toContain('`kind`');
      expectErrandError(() => store.reserveTaskSequences('bash', -1, 1), 'INVALID_ARGUMENT');
      expectErrandError(() => store.reserveTaskSequences('bash', 0, 0), 'INVALID_ARGUMENT');
      expectErrandError(
        () => store.releaseTaskSequences('bash', { first: 5, last: 2 }, 0),
        'INVALID_ARGUMENT',
      );
      expect(store.reserveTaskSequences('bash', 0, 1)).toEqual({ first: 1, last: 1 });
    });
  });

  describe('workflow journals', () => {
    it('creates, reads and lists runs', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      const created = harness.store.createRun(run());
      expect(created).toEqual({
        schemaVersion: 1,
        runId: 'run-1',
        sessionId: 's',
        taskId: 'workflow-1',
        scriptPath: '/work/flows/release.ts',
        scriptHash: 'sha256:abc',
        status: 'running',
        supersededBy: undefined,
        stopInitiator: undefined,
        input: { version: '1.2.3' },
        result: undefined,
        error: undefined,
        createdAt: START_TIME,
        updatedAt: START_TIME,
      });
      expect(harness.store.getRun('run-1')).toEqual(created);
      expectErrandError(() => harness.store.createRun(run()), 'STORE_RECORD_EXISTS');
      expectErrandError(
        () => harness.store.createRun(run({ runId: 'r2', sessionId: 'nope' })),
        'STORE_RECORD_NOT_FOUND',
      );
      harness.advance(1);
      harness.store.createRun(run({ runId: 'run-2', taskId: 'workflow-2', input: undefined }));
      expect(harness.store.getRun('run-2')?.input).toBeNull();
      expect(harness.store.listRuns({ sessionId: 's' }).map((item) => item.runId)).toEqual([
        'run-1',
        'run-2',
      ]);
      expect(harness.store.listRuns({ taskId: 'workflow-2' }).map((item) => item.runId)).toEqual(['run-2']);
    });

    it('finishes, stops and resumes runs; completed runs stay completed', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      harness.store.createRun(run());
      harness.advance(3);
      const killed = harness.store.updateRun('run-1', {
        status: 'killed',
        stopInitiator: 'model',
        error: 'stopped',
      });
      expect(killed).toMatchObject({
        status: 'killed',
        stopInitiator: 'model',
        error: 'stopped',
        updatedAt: START_TIME + 3,
      });
      const resumed = harness.store.updateRun('run-1', {
        status: 'running',
        stopInitiator: null,
        error: null,
      });
      expect(resumed).toMatchObject({ status: 'running', stopInitiator: undefined, error: undefined });
      const done = harness.store.updateRun('run-1', { status: 'completed', result: { released: true } });
      expect(done.result).toEqual({ released: true });
      expect(harness.store.updateRun('run-1', { result: null }).result).toBeNull();
      expectErrandError(
        () => harness.store.updateRun('run-1', { status: 'running' }),
        'STORE_INVALID_TRANSITION',
      );
      expectErrandError(
        () => harness.store.updateRun('run-1', { status: 'superseded' as never }),
        'INVALID_ARGUMENT',
      );
      expectErrandError(
        () => harness.store.updateRun('missing', { status: 'failed' }),
        'STORE_RECORD_NOT_FOUND',
      );
      expect(harness.store.listRuns({ statuses: ['completed'] })).toHaveLength(1);
    });

    it('supersedes a run with its replacement in one step', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      harness.store.createRun(run());
      harness.store.updateRun('run-1', { status: 'killed', stopInitiator: 'model' });
      const result = harness.store.supersedeRun('run-1', run({ runId: 'run-2', scriptHash: 'sha256:def' }));
      expect(result.superseded).toMatchObject({
        runId: 'run-1',
        status: 'superseded',
        supersededBy: 'run-2',
      });
      expect(result.replacement).toMatchObject({
        runId: 'run-2',
        status: 'running',
        scriptHash: 'sha256:def',
      });
      expect(harness.store.getRun('run-1')).toEqual(result.superseded);
      expectErrandError(
        () => harness.store.updateRun('run-1', { status: 'running' }),
        'STORE_INVALID_TRANSITION',
      );
      expectErrandError(() => harness.store.updateRun('run-1', { error: 'x' }), 'STORE_INVALID_TRANSITION');
      expectErrandError(
        () => harness.store.supersedeRun('run-1', run({ runId: 'run-3' })),
        'STORE_INVALID_TRANSITION',
      );
      expectErrandError(
        () => harness.store.supersedeRun('run-2', run({ runId: 'run-1' })),
        'STORE_RECORD_EXISTS',
      );
      expect(harness.store.getRun('run-3')).toBeUndefined();
      expect(harness.store.getRun('run-2')?.status).toBe('running');
    });

    it('records steps once: a replay reads the stored result instead of recording a new one', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      harness.store.createRun(run());
      const first = harness.store.recordStep('run-1', {
        name: 'build',
        state: 'done',
        result: { artifact: 'dist.tgz' },
        startedAt: START_TIME,
        endedAt: START_TIME + 10,
      });
      expect(first).toEqual({
        recorded: true,
        step: {
          schemaVersion: 1,
          runId: 'run-1',
          name: 'build',
          seq: 1,
          state: 'done',
          result: { artifact: 'dist.tgz' },
          error: undefined,
          startedAt: START_TIME,
          endedAt: START_TIME + 10,
        },
      });
      const replay = harness.store.recordStep('run-1', {
        name: 'build',
        state: 'done',
        result: { artifact: 'other.tgz' },
        startedAt: START_TIME + 100,
        endedAt: START_TIME + 110,
      });
      expect(replay).toEqual({ recorded: false, step: first.step });
      const failed = harness.store.recordStep('run-1', {
        name: 'publish',
        state: 'failed',
        error: 'registry down',
        startedAt: START_TIME + 11,
        endedAt: START_TIME + 12,
      });
      expect(failed.step).toMatchObject({
        seq: 2,
        state: 'failed',
        error: 'registry down',
        result: undefined,
      });
      const noResult = harness.store.recordStep('run-1', {
        name: 'notify',
        state: 'done',
        startedAt: START_TIME + 13,
        endedAt: START_TIME + 13,
      });
      expect(noResult.step).toMatchObject({ seq: 3, result: undefined });
      const retried = harness.store.recordStep('run-1', {
        name: 'publish',
        state: 'done',
        result: null,
        startedAt: START_TIME + 20,
        endedAt: START_TIME + 21,
      });
      expect(retried).toMatchObject({
        recorded: true,
        step: { seq: 2, state: 'done', result: null, error: undefined },
      });
      expect(harness.store.getSteps('run-1').map((step) => [step.name, step.seq, step.state])).toEqual([
        ['build', 1, 'done'],
        ['publish', 2, 'done'],
        ['notify', 3, 'done'],
      ]);
      expect(harness.store.getStep('run-1', 'publish')).toEqual(retried.step);
      expect(harness.store.getStep('run-1', 'deploy')).toBeUndefined();
      expect(harness.store.getSteps('missing')).toEqual([]);
      expectErrandError(
        () => harness.store.recordStep('missing', { name: 'x', state: 'done', startedAt: 0, endedAt: 0 }),
        'STORE_RECORD_NOT_FOUND',
      );
      expectErrandError(
        () =>
          harness.store.recordStep('run-1', {
            name: 'x',
            state: 'skipped' as never,
            startedAt: 0,
            endedAt: 0,
          }),
        'INVALID_ARGUMENT',
      );
    });
  });
}
