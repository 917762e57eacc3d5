/** Conformance: size limits, retention (`prune`) and closing. */
import { describe, expect, it } from 'vitest';
import { STORE_RETENTION_DEFAULTS } from '../options.js';
import { expectErrandError, type OpenSessionStore, START_TIME, useHarness } from './harness.js';

const DAY_MS = 24 * 60 * 60 * 1000;

export function describeBounds(openStore: OpenSessionStore): void {
  const harness = useHarness(openStore);

  describe('size limits', () => {
    it('refuses a field over maxFieldBytes, naming the field and the size', () => {
      const store = harness.open({ maxFieldBytes: 64 });
      store.createSession({ id: 's', cwd: '/' });
      const message = expectErrandError(
        () => store.appendMessage('s', { role: 'user', content: { text: 'x'.repeat(100) }, source: 'user' }),
        'STORE_RECORD_TOO_LARGE',
      );
      expect(message.message).toContain('`content`');
      expect(message.message).toContain('111 bytes');
      expect(message.context).toMatchObject({ field: 'content', bytes: 111, limit: 64 });
      const ledger = expectErrandError(
        () =>
          store.admit({ sessionId: 's', kind: 'notification', idempotencyKey: 'k', text: 'é'.repeat(40) }),
        'STORE_RECORD_TOO_LARGE',
      );
      expect(ledger.context).toMatchObject({ field: 'text', bytes: 80, limit: 64 });
      expect(ledger.fault).toBe('caller');
      expect(
        store.admit({ sessionId: 's', kind: 'notification', idempotencyKey: 'k', text: 'é'.repeat(32) })
          .admitted,
      ).toBe(true);
      store.createRun({
        runId: 'r',
        sessionId: 's',
        taskId: 'workflow-1',
        scriptPath: '/f',
        scriptHash: 'h',
      });
      const step = expectErrandError(
        () =>
          store.recordStep('r', {
            name: 'n',
            state: 'done',
            result: 'y'.repeat(64),
            startedAt: 0,
            endedAt: 0,
          }),
        'STORE_RECORD_TOO_LARGE',
      );
      expect(step.context).toMatchObject({ field: 'result' });
      expect(store.listMessages('s')).toEqual([]);
      expect(store.getSteps('r')).toEqual([]);
    });

    it('validates its options', () => {
      expectErrandError(() => harness.open({ maxFieldBytes: 0 }), 'INVALID_ARGUMENT');
      expectErrandError(() => harness.open({ now: 5 as never }), 'INVALID_ARGUMENT');
    });
  });

  describe('retention', () => {
    function closedSession(id: string): void {
      harness.store.createSession({ id, cwd: '/' });
      harness.store.appendMessage(id, { role: 'user', content: { text: id }, source: 'user' });
      harness.store.admit({ sessionId: id, kind: 'notification', idempotencyKey: 'k', text: 'x' });
      harness.store.upsertTask({
        id: 'bash-1',
        sessionId: id,
        kind: 'bash',
        label: 'l',
        status: 'running',
        isBackgrounded: true,
        branchGeneration: 0,
        startedAt: harness.now(),
        reported: false,
      });
      harness.store.createRun({
        runId: `run-${id}`,
        sessionId: id,
        taskId: 'workflow-1',
        scriptPath: '/f',
        scriptHash: 'h',
      });
      harness.store.recordStep(`run-${id}`, { name: 'a', state: 'done', startedAt: 0, endedAt: 0 });
      harness.store.updateSession(id, { state: 'closed' });
    }

    it('keeps the newest closed sessions and removes older ones with everything in them', () => {
      harness.store.createSession({ id: 'active', cwd: '/' });
      for (const id of ['c1', 'c2', 'c3']) {
        harness.advance(1);
        closedSession(id);
      }
      expect(harness.store.taskRecordDeletions()).toBe(0);
      expect(harness.store.prune({ keepClosedSessions: 1 })).toEqual({
        sessions: 2,
        messages: 0,
        ledgerEntries: 0,
        tasks: 0,
        workflowRuns: 0,
        commands: 0,
        schedules: 0,
      });
      expect(harness.store.listSessions().map((session) => session.id)).toEqual(['active', 'c3']);
      for (const id of ['c1', 'c2']) {
        expect(harness.store.listMessages(id, { includeAbandoned: true })).toEqual([]);
        expect(harness.store.listLedger(id)).toEqual([]);
        expect(harness.store.listTasks({ sessionId: id })).toEqual([]);
        expect(harness.store.getRun(`run-${id}`)).toBeUndefined();
        expect(harness.store.getSteps(`run-${id}`)).toEqual([]);
      }
      // The task records that went with their sessions count as deleted.
      expect(harness.store.taskRecordDeletions()).toBe(2);
      expect(harness.store.listMessages('c3')).toHaveLength(1);
      expect(harness.store.getSteps('run-c3')).toHaveLength(1);
      expect(harness.store.prune({ keepClosedSessions: 0 }).sessions).toBe(1);
      expect(harness.store.listSessions().map((session) => session.id)).toEqual(['active']);
    });

    it('removes settled ledger entries and abandoned messages after their age, keeping what is referenced', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      harness.store.appendMessage('s', { role: 'user', content: { text: 'one' }, source: 'user' });
      const delivered = harness.store.admit({
        sessionId: 's',
        kind: 'notification',
        idempotencyKey: 'd',
        text: 'x',
      });
      const discarded = harness.store.admit({
        sessionId: 's',
        kind: 'notification',
        idempotencyKey: 'x',
        text: 'x',
      });
      const queued = harness.store.admit({
        sessionId: 's',
        kind: 'notification',
        idempotencyKey: 'q',
        text: 'x',
      });
      harness.store.commitDelivery('s', [delivered.entry.id], {
        role: 'user',
        content: { text: 'notification' },
        source: 'background_task',
      });
      harness.store.markDiscarded([discarded.entry.id], 'shutdown');
      harness.store.appendMessage('s', {
        role: 'assistant',
        content: { text: 'three' },
        source: 'assistant',
      });
      harness.store.rewind('s', 1);
      harness.advance(2 * DAY_MS);
      expect(
        harness.store.prune({ settledLedgerMaxAgeMs: 3 * DAY_MS, abandonedMessageMaxAgeMs: DAY_MS }),
      ).toMatchObject({ ledgerEntries: 0, messages: 1 });
      expect(
        harness.store.listMessages('s', { includeAbandoned: true }).map((message) => message.seq),
      ).toEqual([1, 2]);
      harness.advance(2 * DAY_MS);
      expect(
        harness.store.prune({ settledLedgerMaxAgeMs: 3 * DAY_MS, abandonedMessageMaxAgeMs: DAY_MS }),
      ).toMatchObject({ ledgerEntries: 2, messages: 1 });
      expect(harness.store.listLedger('s').map((entry) => entry.id)).toEqual([queued.entry.id]);
      expect(
        harness.store.listMessages('s', { includeAbandoned: true }).map((message) => message.seq),
      ).toEqual([1]);
      expect(
        harness.store.appendMessage('s', { role: 'user', content: { text: 'four' }, source: 'user' }).seq,
      ).toBe(4);
    });

    it('removes finished task records and workflow runs after their age, never live ones', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      const base = {
        sessionId: 's',
        kind: 'bash',
        label: 'l',
        isBackgrounded: true,
        branchGeneration: 0,
        startedAt: START_TIME,
        reported: true,
      };
      harness.store.upsertTask({ ...base, id: 'bash-1', status: 'completed', endedAt: START_TIME });
      harness.store.upsertTask({ ...base, id: 'bash-2', status: 'running' });
      harness.store.upsertTask({ ...base, sessionId: undefined, id: 'bash-3', status: 'lost' });
      harness.store.createRun({
        runId: 'done',
        sessionId: 's',
        taskId: 'workflow-1',
        scriptPath: '/f',
        scriptHash: 'h',
      });
      harness.store.updateRun('done', { status: 'completed' });
      harness.store.createRun({
        runId: 'live',
        sessionId: 's',
        taskId: 'workflow-2',
        scriptPath: '/f',
        scriptHash: 'h',
      });
      harness.advance(STORE_RETENTION_DEFAULTS.finishedRecordMaxAgeMs - 1);
      expect(harness.store.prune()).toMatchObject({ tasks: 0, workflowRuns: 0 });
      // Writing records deletes none.
      expect(harness.store.taskRecordDeletions()).toBe(0);
      harness.advance(2);
      expect(harness.store.prune()).toMatchObject({ tasks: 2, workflowRuns: 1 });
      expect(harness.store.taskRecordDeletions()).toBe(2);
      expect(harness.store.listTasks().map((record) => record.id)).toEqual(['bash-2']);
      expect(harness.store.listRuns().map((item) => item.runId)).toEqual(['live']);
    });

    it('keeps queued entries and active sessions whatever their age, and validates its options', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      harness.store.admit({ sessionId: 's', kind: 'user_input', idempotencyKey: 'q', text: 'x' });
      harness.advance(365 * DAY_MS);
      expect(harness.store.prune({ keepClosedSessions: 0, settledLedgerMaxAgeMs: 0 })).toEqual({
        sessions: 0,
        messages: 0,
        ledgerEntries: 0,
        tasks: 0,
        workflowRuns: 0,
        commands: 0,
        schedules: 0,
      });
      expect(harness.store.listQueued('s')).toHaveLength(1);
      const error = expectErrandError(
        () => harness.store.prune({ keepClosedSessions: -1 }),
        'INVALID_ARGUMENT',
      );
      expect(error.message).toContain('`keepClosedSessions`');
    });
  });

  describe('capabilities', () => {
    it('declares what it can do beyond the contract', () => {
      const { capabilities } = harness.store;
      expect(typeof capabilities.sharedAcrossProcesses).toBe('boolean');
      expect(typeof capabilities.persistent).toBe('boolean');
      // A store other processes open is one they find again: shared implies persistent.
      if (capabilities.sharedAcrossProcesses) expect(capabilities.persistent).toBe(true);
    });
  });

  describe('closing', () => {
    it('refuses every call after close, and close is idempotent', () => {
      const store = harness.open();
      store.createSession({ id: 's', cwd: '/' });
      store.close();
      store.close();
      expectErrandError(() => store.getSession('s'), 'STORE_CLOSED');
      expectErrandError(() => store.createSession({ id: 't', cwd: '/' }), 'STORE_CLOSED');
      expectErrandError(() => store.prune(), 'STORE_CLOSED');
    });

    it('waits for the disk after deferred writes, and refuses to once closed', async () => {
      const store = harness.open();
      store.transaction(() => store.createSession({ id: 's', cwd: '/' }), { durability: 'deferred' });
      await store.whenDurable();
      // Nothing left to wait for: at once.
      await store.whenDurable();
      expect(store.getSession('s')?.id).toBe('s');
      store.close();
      await expect(store.whenDurable()).rejects.toMatchObject({ code: 'STORE_CLOSED' });
    });
  });
}
