/** Conformance: runtime commands (submit, the holder's poll, one answer each, expiry, retention). */
import { describe, expect, it } from 'vitest';
import { expectErrandError, type OpenSessionStore, START_TIME, useHarness } from './harness.js';

const DAY_MS = 24 * 60 * 60 * 1000;

export function describeRuntimeCommands(openStore: OpenSessionStore): void {
  const harness = useHarness(openStore);

  function submit(workId: string, runtime = 'rt-a', sessionId = 's') {
    return harness.store.submitCommand({ sessionId, runtime, type: 'cancel_background_work', workId });
  }

  describe('submit and read', () => {
    it('stores a pending command with an increasing id, its session, runtime and work', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      const first = submit('bash-1');
      harness.advance(5);
      const second = submit('bash-2');
      expect(first).toEqual({
        schemaVersion: 1,
        id: first.id,
        sessionId: 's',
        runtime: 'rt-a',
        type: 'cancel_background_work',
        workId: 'bash-1',
        state: 'pending',
        reason: undefined,
        createdAt: START_TIME,
        answeredAt: undefined,
      });
      expect(second.id).toBeGreaterThan(first.id);
      expect(harness.store.getCommand(first.id)).toEqual(first);
      expect(harness.store.getCommand(second.id + 100)).toBeUndefined();
    });

    it('refuses an unknown session, an unknown type and malformed fields, naming the field', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      expectErrandError(() => submit('bash-1', 'rt-a', 'missing'), 'STORE_RECORD_NOT_FOUND');
      const type = expectErrandError(
        () =>
          harness.store.submitCommand({
            sessionId: 's',
            runtime: 'rt-a',
            type: 'run_anything' as never,
            workId: 'bash-1',
          }),
        'INVALID_ARGUMENT',
      );
      expect(type.message).toContain('`type`');
      expect(expectErrandError(() => submit(''), 'INVALID_ARGUMENT').message).toContain('`workId`');
      expect(expectErrandError(() => submit('bash-1', ''), 'INVALID_ARGUMENT').message).toContain(
        '`runtime`',
      );
      expectErrandError(() => harness.store.getCommand(0), 'INVALID_ARGUMENT');
      expect(harness.store.listPendingCommands('rt-a')).toEqual([]);
    });
  });

  describe('the holder poll', () => {
    it('lists only the pending commands of one runtime, oldest first, bounded by the limit', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      const ids = ['bash-1', 'bash-2', 'bash-3'].map((workId) => submit(workId).id);
      submit('bash-9', 'rt-b');
      harness.store.answerCommand(ids[1]!, { state: 'acknowledged' });
      expect(harness.store.listPendingCommands('rt-a').map((command) => command.workId)).toEqual([
        'bash-1',
        'bash-3',
      ]);
      expect(harness.store.listPendingCommands('rt-a', 1).map((command) => command.workId)).toEqual([
        'bash-1',
      ]);
      expect(harness.store.listPendingCommands('rt-b').map((command) => command.workId)).toEqual(['bash-9']);
      expect(harness.store.listPendingCommands('rt-c')).toEqual([]);
      expectErrandError(() => harness.store.listPendingCommands('rt-a', 0), 'INVALID_ARGUMENT');
      expectErrandError(() => harness.store.listPendingCommands('rt-a', 1001), 'INVALID_ARGUMENT');
    });
  });

  describe('answers', () => {
    it('moves a pending command to its answer once; a later answer leaves the first standing', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      const command = submit('bash-1');
      harness.advance(7);
      const first = harness.store.answerCommand(command.id, { state: 'rejected', reason: 'not_running' });
      expect(first).toEqual({
        answered: true,
        command: { ...command, state: 'rejected', reason: 'not_running', answeredAt: START_TIME + 7 },
      });
      harness.advance(1);
      const late = harness.store.answerCommand(command.id, { state: 'acknowledged' });
      expect(late).toEqual({ answered: false, command: first.command });
      expect(harness.store.answerCommand(command.id, { state: 'expired' }).answered).toBe(false);
      expect(harness.store.getCommand(command.id)).toEqual(first.command);

      const other = submit('bash-2');
      const acknowledged = harness.store.answerCommand(other.id, { state: 'acknowledged' });
      expect(acknowledged.command).toMatchObject({ state: 'acknowledged', reason: undefined });
    });

    it('refuses an unknown command, an unknown state, and a rejection without a reason', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      const command = submit('bash-1');
      expectErrandError(
        () => harness.store.answerCommand(command.id + 1, { state: 'acknowledged' }),
        'STORE_RECORD_NOT_FOUND',
      );
      expectErrandError(
        () => harness.store.answerCommand(command.id, { state: 'pending' } as never),
        'INVALID_ARGUMENT',
      );
      const reason = expectErrandError(
        () => harness.store.answerCommand(command.id, { state: 'rejected' } as never),
        'INVALID_ARGUMENT',
      );
      expect(reason.message).toContain('`answer.reason`');
      expect(harness.store.getCommand(command.id)?.state).toBe('pending');
    });

    it('expires the pending commands older than a cutoff, and only those', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      const old = submit('bash-1');
      const answered = submit('bash-2');
      harness.store.answerCommand(answered.id, { state: 'acknowledged' });
      harness.advance(1000);
      const fresh = submit('bash-3');
      harness.advance(10);
      const expired = harness.store.expireCommands(START_TIME + 500);
      expect(expired.map((command) => command.id)).toEqual([old.id]);
      expect(expired[0]).toMatchObject({ state: 'expired', answeredAt: START_TIME + 1010 });
      expect(harness.store.getCommand(answered.id)?.state).toBe('acknowledged');
      expect(harness.store.getCommand(fresh.id)?.state).toBe('pending');
      expect(harness.store.answerCommand(old.id, { state: 'acknowledged' }).answered).toBe(false);
      expectErrandError(() => harness.store.expireCommands(-1), 'INVALID_ARGUMENT');
    });
  });

  describe('retention', () => {
    it('prunes commands answered, or submitted and never answered, longer ago than commandMaxAgeMs', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      const answered = submit('bash-1');
      const abandoned = submit('bash-2');
      harness.advance(DAY_MS - 10);
      harness.store.answerCommand(answered.id, { state: 'acknowledged' });
      harness.advance(20);
      const recent = submit('bash-3');
      expect(harness.store.prune()).toMatchObject({ commands: 1 });
      expect(harness.store.getCommand(abandoned.id)).toBeUndefined();
      expect(harness.store.getCommand(answered.id)?.state).toBe('acknowledged');
      expect(harness.store.getCommand(recent.id)?.state).toBe('pending');
      expect(harness.store.prune({ commandMaxAgeMs: 0 })).toMatchObject({ commands: 1 });
      expect(harness.store.getCommand(recent.id)?.state).toBe('pending');
      harness.advance(1);
      expect(harness.store.prune({ commandMaxAgeMs: 0 })).toMatchObject({ commands: 1 });
      expect(harness.store.getCommand(recent.id)).toBeUndefined();
    });

    it('removes a session’s commands with the session', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      const command = submit('bash-1');
      harness.store.updateSession('s', { state: 'closed' });
      harness.store.prune({ keepClosedSessions: 0 });
      expect(harness.store.getCommand(command.id)).toBeUndefined();
    });
  });
}
