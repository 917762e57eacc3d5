/** Conformance: the input ledger (admission, queue order, discards, atomic delivery, final states). */
import { describe, expect, it } from 'vitest';
import type { NewMessage } from '../session-store.js';
import { expectErrandError, type OpenSessionStore, START_TIME, useHarness } from './harness.js';

const NOTIFICATION_MESSAGE: NewMessage = {
  role: 'user',
  content: { text: '<task-notification>...</task-notification>' },
  visibility: 'model-only',
  source: 'background_task',
};

export function describeInputLedger(openStore: OpenSessionStore): void {
  const harness = useHarness(openStore);

  function admitNotification(
    key: string,
    extra: { priority?: 'now' | 'next' | 'later'; taskId?: string } = {},
  ) {
    return harness.store.admit({
      sessionId: 's',
      kind: 'notification',
      idempotencyKey: key,
      text: `done ${key}`,
      ...extra,
    }).entry;
  }

  describe('input ledger', () => {
    it('admits a queued entry with defaults', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      const result = harness.store.admit({
        sessionId: 's',
        kind: 'notification',
        idempotencyKey: 'bash-1:1',
        taskId: 'bash-1',
        lane: 'quiet',
        text: 'bash-1 completed',
      });
      expect(result.admitted).toBe(true);
      expect(result.entry).toEqual({
        schemaVersion: 1,
        id: result.entry.id,
        sessionId: 's',
        kind: 'notification',
        idempotencyKey: 'bash-1:1',
        state: 'queued',
        reason: undefined,
        priority: 'next',
        lane: 'quiet',
        branchGeneration: 0,
        taskId: 'bash-1',
        text: 'bash-1 completed',
        createdAt: START_TIME,
        updatedAt: START_TIME,
        deliveredInMessageSeq: undefined,
      });
      expect(Number.isSafeInteger(result.entry.id) && result.entry.id > 0).toBe(true);
      expect(harness.store.getLedgerEntry(result.entry.id)).toEqual(result.entry);
    });

    it('never admits an idempotency key twice in one session', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      harness.store.createSession({ id: 'other', cwd: '/' });
      const first = harness.store.admit({
        sessionId: 's',
        kind: 'notification',
        idempotencyKey: 'k',
        text: 'first',
      });
      harness.advance(3);
      const again = harness.store.admit({
        sessionId: 's',
        kind: 'user_input',
        idempotencyKey: 'k',
        priority: 'now',
        text: 'second',
      });
      expect(again).toEqual({ entry: first.entry, admitted: false });
      harness.store.markDiscarded([first.entry.id], 'superseded');
      const afterSettle = harness.store.admit({
        sessionId: 's',
        kind: 'notification',
        idempotencyKey: 'k',
        text: 'third',
      });
      expect(afterSettle.admitted).toBe(false);
      expect(afterSettle.entry.state).toBe('discarded');
      expect(harness.store.listLedger('s')).toHaveLength(1);
      const elsewhere = harness.store.admit({
        sessionId: 'other',
        kind: 'notification',
        idempotencyKey: 'k',
        text: 'x',
      });
      expect(elsewhere.admitted).toBe(true);
      expect(elsewhere.entry.id).not.toBe(first.entry.id);
    });

    it('stamps the session generation unless the entry brings its own', () => {
      harness.store.createSession({ id: 's', cwd: '/', branchGeneration: 4 });
      expect(admitNotification('a').branchGeneration).toBe(4);
      expect(
        harness.store.admit({
          sessionId: 's',
          kind: 'notification',
          idempotencyKey: 'b',
          text: 'x',
          branchGeneration: 2,
        }).entry.branchGeneration,
      ).toBe(2);
    });

    it('refuses malformed entries and unknown sessions before writing', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      const cases: [Record<string, unknown>, string, string][] = [
        [{ kind: 'email' }, 'INVALID_ARGUMENT', '`kind`'],
        [{ idempotencyKey: '' }, 'INVALID_ARGUMENT', '`idempotencyKey`'],
        [{ priority: 'urgent' }, 'INVALID_ARGUMENT', '`priority`'],
        [{ text: 42 }, 'INVALID_ARGUMENT', '`text`'],
        [{ branchGeneration: -1 }, 'INVALID_ARGUMENT', '`branchGeneration`'],
        [{ sessionId: 'missing' }, 'STORE_RECORD_NOT_FOUND', 'missing'],
      ];
      for (const [override, code, named] of cases) {
        const error = expectErrandError(
          () =>
            harness.store.admit({
              sessionId: 's',
              kind: 'notification',
              idempotencyKey: 'k',
              text: 't',
              ...override,
            } as never),
          code,
        );
        expect(error.message).toContain(named);
      }
      expect(harness.store.listLedger('s')).toEqual([]);
    });

    it('lists only the queued entries admitted after a given one, in queue order', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      const first = admitNotification('first');
      const second = admitNotification('second', { priority: 'later' });
      const third = admitNotification('third', { priority: 'now' });
      harness.store.markDiscarded([third.id], 'queue_full');
      const fourth = admitNotification('fourth');
      expect(harness.store.listQueued('s', { afterId: first.id }).map((entry) => entry.id)).toEqual([
        fourth.id,
        second.id,
      ]);
      expect(harness.store.listQueued('s', { afterId: fourth.id })).toEqual([]);
      expectErrandError(() => harness.store.listQueued('s', { afterId: -1 }), 'INVALID_ARGUMENT');
    });

    it('lists the queue by priority, first in first out within one', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      const later = admitNotification('later', { priority: 'later' });
      const next1 = admitNotification('next-1');
      const now1 = admitNotification('now-1', { priority: 'now' });
      const next2 = admitNotification('next-2', { priority: 'next' });
      const now2 = admitNotification('now-2', { priority: 'now' });
      expect(harness.store.listQueued('s').map((entry) => entry.id)).toEqual([
        now1.id,
        now2.id,
        next1.id,
        next2.id,
        later.id,
      ]);
      expect(harness.store.listLedger('s').map((entry) => entry.id)).toEqual([
        later.id,
        next1.id,
        now1.id,
        next2.id,
        now2.id,
      ]);
    });

    it('discards only queued entries and reports the rest unchanged', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      const a = admitNotification('a');
      const b = admitNotification('b');
      const c = admitNotification('c');
      expect(harness.store.commitDelivery('s', [b.id], NOTIFICATION_MESSAGE).ok).toBe(true);
      harness.advance(2);
      const result = harness.store.markDiscarded([a.id, b.id], 'branch_changed');
      expect(result.discarded).toEqual([
        { ...a, state: 'discarded', reason: 'branch_changed', updatedAt: START_TIME + 2 },
      ]);
      expect(result.unchanged.map((entry) => [entry.id, entry.state])).toEqual([[b.id, 'delivered']]);
      expect(harness.store.markDiscarded([a.id], 'again').unchanged[0]?.reason).toBe('branch_changed');
      expect(harness.store.markDiscarded([], 'nothing')).toEqual({ discarded: [], unchanged: [] });
      expectErrandError(() => harness.store.markDiscarded([c.id, 999_999], 'x'), 'STORE_RECORD_NOT_FOUND');
      expect(harness.store.getLedgerEntry(c.id)?.state).toBe('queued');
      expectErrandError(() => harness.store.markDiscarded([c.id], ''), 'INVALID_ARGUMENT');
      expectErrandError(() => harness.store.markDiscarded([c.id, c.id], 'x'), 'INVALID_ARGUMENT');
    });

    it('discards the whole queue on resume, keeping entries of tasks that survive', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      const delivered = admitNotification('delivered');
      harness.store.commitDelivery('s', [delivered.id], NOTIFICATION_MESSAGE);
      const plain = admitNotification('plain', { taskId: 'bash-1' });
      const durable = admitNotification('durable', { taskId: 'bash-2' });
      const input = harness.store.admit({
        sessionId: 's',
        kind: 'user_input',
        idempotencyKey: 'u',
        text: 'hello',
      }).entry;
      const discarded = harness.store.discardQueued('s', 'session_resumed', { keepTaskIds: ['bash-2'] });
      expect(discarded.map((entry) => [entry.id, entry.state, entry.reason])).toEqual([
        [plain.id, 'discarded', 'session_resumed'],
        [input.id, 'discarded', 'session_resumed'],
      ]);
      expect(harness.store.listQueued('s').map((entry) => entry.id)).toEqual([durable.id]);
      expect(harness.store.getLedgerEntry(delivered.id)?.state).toBe('delivered');
      expect(harness.store.discardQueued('s', 'session_resumed', { keepTaskIds: ['bash-2'] })).toEqual([]);
      expect(harness.store.listLedger('s', { states: ['discarded'] })).toHaveLength(2);
      expectErrandError(
        () => harness.store.discardQueued('missing', 'session_resumed'),
        'STORE_RECORD_NOT_FOUND',
      );
    });

    it('commits a delivery: one message, every entry delivered with its seq', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      harness.store.appendMessage('s', { role: 'user', content: { text: 'start' }, source: 'user' });
      const a = admitNotification('a');
      const b = admitNotification('b');
      harness.advance(4);
      const result = harness.store.commitDelivery('s', [b.id, a.id], NOTIFICATION_MESSAGE);
      if (!result.ok) throw new Error(`delivery failed: ${result.code}`);
      expect(result.message).toMatchObject({ seq: 2, source: 'background_task', visibility: 'model-only' });
      expect(result.entries).toEqual([
        { ...b, state: 'delivered', deliveredInMessageSeq: 2, updatedAt: START_TIME + 4 },
        { ...a, state: 'delivered', deliveredInMessageSeq: 2, updatedAt: START_TIME + 4 },
      ]);
      expect(harness.store.listMessages('s').map((message) => message.seq)).toEqual([1, 2]);
      expect(harness.store.listQueued('s')).toEqual([]);
    });

    it('delivers nothing when an entry was discarded first (the race with resume)', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      const a = admitNotification('a');
      const b = admitNotification('b');
      harness.store.markDiscarded([b.id], 'session_resumed');
      const result = harness.store.commitDelivery('s', [a.id, b.id], NOTIFICATION_MESSAGE);
      expect(result).toEqual({
        ok: false,
        code: 'LEDGER_ENTRY_NOT_QUEUED',
        conflicts: [harness.store.getLedgerEntry(b.id)],
      });
      expect(harness.store.listMessages('s', { includeAbandoned: true })).toEqual([]);
      expect(harness.store.getLedgerEntry(a.id)?.state).toBe('queued');
    });

    it('never delivers an entry twice', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      const a = admitNotification('a');
      expect(harness.store.commitDelivery('s', [a.id], NOTIFICATION_MESSAGE).ok).toBe(true);
      const again = harness.store.commitDelivery('s', [a.id], NOTIFICATION_MESSAGE);
      expect(again.ok).toBe(false);
      expect(!again.ok && again.code).toBe('LEDGER_ENTRY_NOT_QUEUED');
      expect(harness.store.listMessages('s')).toHaveLength(1);
      expect(harness.store.getLedgerEntry(a.id)?.deliveredInMessageSeq).toBe(1);
    });

    it('refuses notifications of an older branch; user input survives a rewind', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      harness.store.appendMessage('s', { role: 'user', content: { text: 'x' }, source: 'user' });
      const notification = admitNotification('n');
      const input = harness.store.admit({
        sessionId: 's',
        kind: 'user_input',
        idempotencyKey: 'u',
        text: 'typed',
      }).entry;
      harness.store.rewind('s', 0);
      const stale = harness.store.commitDelivery('s', [notification.id, input.id], NOTIFICATION_MESSAGE);
      expect(stale.ok === false && stale.code).toBe('LEDGER_ENTRY_STALE_BRANCH');
      expect(stale.ok === false && stale.conflicts.map((entry) => entry.id)).toEqual([notification.id]);
      expect(harness.store.listMessages('s')).toEqual([]);
      const delivered = harness.store.commitDelivery('s', [input.id], {
        role: 'user',
        content: { text: 'typed' },
        source: 'user',
      });
      expect(delivered.ok && delivered.message.branchGeneration).toBe(1);
      expect(harness.store.commitDelivery('s', [notification.id], { ...NOTIFICATION_MESSAGE }).ok).toBe(
        false,
      );
    });

    it('refuses entries of another session, unknown entries and stale messages without writing', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      harness.store.createSession({ id: 'other', cwd: '/' });
      const mine = admitNotification('a');
      const theirs = harness.store.admit({
        sessionId: 'other',
        kind: 'notification',
        idempotencyKey: 'a',
        text: 'x',
      }).entry;
      expectErrandError(
        () => harness.store.commitDelivery('s', [mine.id, theirs.id], NOTIFICATION_MESSAGE),
        'STORE_RECORD_NOT_FOUND',
      );
      expectErrandError(
        () => harness.store.commitDelivery('s', [123_456], NOTIFICATION_MESSAGE),
        'STORE_RECORD_NOT_FOUND',
      );
      expectErrandError(
        () => harness.store.commitDelivery('s', [], NOTIFICATION_MESSAGE),
        'INVALID_ARGUMENT',
      );
      expectErrandError(
        () => harness.store.commitDelivery('s', [mine.id], { ...NOTIFICATION_MESSAGE, branchGeneration: 3 }),
        'STORE_STALE_BRANCH',
      );
      expectErrandError(
        () => harness.store.commitDelivery('s', [mine.id], { ...NOTIFICATION_MESSAGE, content: {} }),
        'INVALID_ARGUMENT',
      );
      expect(harness.store.listMessages('s')).toEqual([]);
      expect(harness.store.getLedgerEntry(mine.id)?.state).toBe('queued');
      expect(harness.store.getLedgerEntry(theirs.id)?.state).toBe('queued');
    });
  });
}
