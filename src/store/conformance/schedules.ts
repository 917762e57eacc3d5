/** Conformance: schedule definitions (save, read, list, remove, the guarded count, with the session, pruning). */
import { describe, expect, it } from 'vitest';
import type { ScheduleInput } from '../session-store.js';
import { expectErrandError, type OpenSessionStore, START_TIME, useHarness } from './harness.js';

export function describeSchedules(openStore: OpenSessionStore): void {
  const harness = useHarness(openStore);

  function schedule(overrides: Partial<ScheduleInput> = {}): ScheduleInput {
    return {
      sessionId: 's',
      id: 'schedule-1',
      definition: { prompt: 'Check the deploy.', every_ms: 2000, times: 3 },
      fired: 0,
      nextAt: START_TIME + 2000,
      ...overrides,
    };
  }

  describe('save and read', () => {
    it('stores the definition and where the schedule stands, and replaces it on the next save', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      const saved = harness.store.saveSchedule(schedule());
      expect(saved).toEqual({
        schemaVersion: 1,
        sessionId: 's',
        id: 'schedule-1',
        definition: { prompt: 'Check the deploy.', every_ms: 2000, times: 3 },
        fired: 0,
        lastDueAt: undefined,
        nextAt: START_TIME + 2000,
        firing: undefined,
        note: undefined,
        createdAt: START_TIME,
        updatedAt: START_TIME,
      });
      harness.advance(2000);
      // The firing starts: set before its turn, with the note it tells.
      harness.store.saveSchedule(
        schedule({ firing: 1, lastDueAt: START_TIME + 2000, nextAt: START_TIME + 4000, note: 'missed 1' }),
      );
      expect(harness.store.getSchedule('s', 'schedule-1')).toMatchObject({
        fired: 0,
        firing: 1,
        note: 'missed 1',
        createdAt: START_TIME,
        updatedAt: START_TIME + 2000,
      });
      harness.store.saveSchedule(
        schedule({ fired: 1, lastDueAt: START_TIME + 2000, nextAt: START_TIME + 4000 }),
      );
      expect(harness.store.getSchedule('s', 'schedule-1')).toMatchObject({
        fired: 1,
        firing: undefined,
        note: undefined,
      });
      expect(harness.store.getSchedule('s', 'schedule-9')).toBeUndefined();
      expect(harness.store.getSchedule('other', 'schedule-1')).toBeUndefined();
    });

    it('lists the live schedules of a session, oldest first, or of every session', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      harness.store.createSession({ id: 't', cwd: '/' });
      harness.store.saveSchedule(schedule({ id: 'schedule-2' }));
      harness.advance(1);
      harness.store.saveSchedule(schedule({ id: 'schedule-1' }));
      harness.advance(1);
      harness.store.saveSchedule(schedule({ sessionId: 't', id: 'schedule-3' }));
      expect(harness.store.listSchedules('s').map((row) => row.id)).toEqual(['schedule-2', 'schedule-1']);
      expect(harness.store.listSchedules().map((row) => row.id)).toEqual([
        'schedule-2',
        'schedule-1',
        'schedule-3',
      ]);
      expect(harness.store.removeSchedule('s', 'schedule-2')).toBe(true);
      expect(harness.store.removeSchedule('s', 'schedule-2')).toBe(false);
      expect(harness.store.listSchedules('s').map((row) => row.id)).toEqual(['schedule-1']);
    });
  });

  describe('rules', () => {
    it('refuses an unknown session, a bad id, a definition without a prompt or one trigger, naming the field', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      expectErrandError(
        () => harness.store.saveSchedule(schedule({ sessionId: 'missing' })),
        'STORE_RECORD_NOT_FOUND',
      );
      expect(
        expectErrandError(() => harness.store.saveSchedule(schedule({ id: 'bash-1' })), 'INVALID_ARGUMENT')
          .message,
      ).toContain('`id`');
      const noPrompt = expectErrandError(
        () => harness.store.saveSchedule(schedule({ definition: { prompt: ' ', every_ms: 1000 } })),
        'SCHEDULE_DEFINITION_INVALID',
      );
      expect(noPrompt.message).toContain('`definition.prompt`');
      const twoTriggers = expectErrandError(
        () => harness.store.saveSchedule(schedule({ definition: { prompt: 'p', every_ms: 1000, in_ms: 5 } })),
        'SCHEDULE_DEFINITION_INVALID',
      );
      expect(twoTriggers.message).toContain('in_ms, every_ms');
      expectErrandError(
        () => harness.store.saveSchedule(schedule({ definition: { prompt: 'p' } })),
        'SCHEDULE_DEFINITION_INVALID',
      );
      expect(
        expectErrandError(() => harness.store.saveSchedule(schedule({ fired: -1 })), 'INVALID_ARGUMENT')
          .message,
      ).toContain('`fired`');
      expect(
        expectErrandError(() => harness.store.saveSchedule(schedule({ firing: 3 })), 'INVALID_ARGUMENT')
          .message,
      ).toContain('`firing`');
      expect(
        expectErrandError(() => harness.store.saveSchedule(schedule({ nextAt: 1.5 })), 'INVALID_ARGUMENT')
          .message,
      ).toContain('`nextAt`');
      expectErrandError(() => harness.store.getSchedule('s', ''), 'INVALID_ARGUMENT');
      expect(harness.store.listSchedules()).toEqual([]);
    });

    it("never moves a schedule's fired count back", () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      harness.store.saveSchedule(schedule({ fired: 2 }));
      const error = expectErrandError(
        () => harness.store.saveSchedule(schedule({ fired: 1 })),
        'STORE_INVALID_TRANSITION',
      );
      expect(error.message).toContain('`fired`');
      expect(harness.store.getSchedule('s', 'schedule-1')?.fired).toBe(2);
    });

    it('is written with a transaction, or not at all', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      expect(() =>
        harness.store.transaction(() => {
          harness.store.saveSchedule(schedule());
          throw new Error('undone');
        }),
      ).toThrow('undone');
      expect(harness.store.listSchedules()).toEqual([]);
      harness.store.saveSchedule(schedule(), { durability: 'deferred' });
      expect(harness.store.listSchedules()).toHaveLength(1);
    });
  });

  describe('bounds', () => {
    it('goes with its session, and prune removes rows whose task ended or is gone', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      harness.store.createSession({ id: 'gone', cwd: '/' });
      const task = (id: string, status: 'running' | 'completed') =>
        harness.store.upsertTask({
          id,
          sessionId: 's',
          kind: 'schedule',
          label: 'schedule: p',
          status,
          detail: {},
          isBackgrounded: true,
          branchGeneration: 0,
          startedAt: START_TIME,
          reported: false,
          ...(status === 'running' ? {} : { endedAt: START_TIME }),
        });
      task('schedule-1', 'running');
      task('schedule-2', 'completed');
      for (const id of ['schedule-1', 'schedule-2', 'schedule-3'])
        harness.store.saveSchedule(schedule({ id }));
      harness.store.saveSchedule(schedule({ sessionId: 'gone', id: 'schedule-4' }));
      harness.store.updateSession('gone', { state: 'closed' });
      expect(harness.store.prune({ keepClosedSessions: 0 })).toMatchObject({ sessions: 1, schedules: 2 });
      expect(harness.store.listSchedules('gone')).toEqual([]);
      expect(harness.store.listSchedules().map((row) => row.id)).toEqual(['schedule-1']);
    });
  });
}
