/**
 * The inbox on its own, over a real (in-memory) ledger: admission rules, marking told, and the races
 * between reserving, committing, releasing and marking told — every admitted notification ends delivered
 * or discarded exactly once.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { switchableStore } from '../../test/support/session.js';
import { createMemorySessionStore, type SessionStore } from '../store/index.js';
import { asSessionId } from '../tasks/index.js';
import { CommandQueue, type QueuedNotification } from './command-queue.js';
import { volatileInboxLedger } from './inbox-ledger.js';
import {
  NotificationInbox,
  type NotificationInboxContext,
  type NotificationReservation,
  type SessionNotification,
} from './notification-inbox.js';
import type { SessionEvent } from './session-events.js';
import { SessionLedger } from './session-ledger.js';

const SESSION = asSessionId('s1');

function inboxForTest(options: { store?: SessionStore; maxQueued?: number; draining?: () => boolean } = {}) {
  const store = options.store ?? createMemorySessionStore();
  store.createSession({ id: SESSION, cwd: '/' });
  const events: SessionEvent[] = [];
  const calls = { wake: 0, succeeded: 0, failed: 0 };
  const discarded: Array<[string, string]> = [];
  let generation = 0;
  let closing = false;
  const emit = (event: SessionEvent) => events.push(event);
  const queue = new CommandQueue(options.maxQueued ?? 100);
  const context: NotificationInboxContext = {
    owner: {
      sessionId: SESSION,
      branchGeneration: () => generation,
      isClosing: () => closing,
      isDraining: options.draining ?? (() => false),
    },
    queue,
    ledger: new SessionLedger({ sessionId: SESSION, store, branchGeneration: () => generation, emit }),
    drain: {
      wake: () => {
        calls.wake += 1;
      },
      deliverySucceeded: () => {
        calls.succeeded += 1;
      },
      deliveryFailed: () => {
        calls.failed += 1;
      },
    },
    now: () => 0,
    emit,
    discarded: (notifications, reason) => {
      for (const notification of notifications) discarded.push([notification.taskId, reason]);
    },
  };
  const inbox = new NotificationInbox(context);
  return {
    inbox,
    store,
    queue,
    events,
    calls,
    discarded,
    rewind: () => {
      generation += 1;
    },
    close: () => {
      closing = true;
    },
    ledgerStates: () =>
      store.listLedger(SESSION).map((entry) => [entry.taskId, entry.state, entry.reason ?? null]),
  };
}

function notification(taskId: string, extra: Partial<SessionNotification> = {}): SessionNotification {
  return {
    taskId,
    label: `label of ${taskId}`,
    text: `<task-notification>${taskId}</task-notification>`,
    lane: 'quiet',
    branchGeneration: 0,
    idempotencyKey: `task:${taskId}:${extra.attempt ?? 1}`,
    attempt: 1,
    ...extra,
  };
}

describe('NotificationInbox admission', () => {
  it('queues an admitted notification once per key; a wakeup one wakes the owner', () => {
    const { inbox, calls, events } = inboxForTest();
    expect(inbox.admit(notification('bash-1'))).toEqual({ admitted: true, ledgerId: 1 });
    expect(inbox.admit(notification('bash-1'))).toEqual({ admitted: false, reason: 'duplicate' });
    expect(calls.wake).toBe(0);
    expect(inbox.admit(notification('bash-2', { lane: 'wakeup' }))).toMatchObject({ admitted: true });
    expect(calls.wake).toBe(1);
    expect(inbox.queuedNotifications().map((queued) => queued.taskId)).toEqual(['bash-1', 'bash-2']);
    expect(events.filter((event) => event.type === 'notification-queued')).toHaveLength(2);
  });

  it('refuses once closing, on another branch, and when a tool result already showed that end', () => {
    const { inbox, close, ledgerStates } = inboxForTest();
    expect(inbox.admit(notification('bash-1', { branchGeneration: 3 }))).toEqual({
      admitted: false,
      reason: 'branch_changed',
    });
    inbox.markTold({ taskId: 'bash-2', attempt: 2 });
    expect(inbox.admit(notification('bash-2', { attempt: 2 }))).toEqual({
      admitted: false,
      reason: 'result_read',
    });
    expect(inbox.admit(notification('bash-2', { attempt: 1 }))).toMatchObject({ admitted: false });
    // A later attempt (a resumed task) and one of unknown attempt are told as usual.
    expect(inbox.admit(notification('bash-2', { attempt: 3 }))).toMatchObject({ admitted: true });
    expect(inbox.admit(notification('bash-2', { attempt: undefined, idempotencyKey: 'x' }))).toMatchObject({
      admitted: true,
    });
    close();
    expect(inbox.admit(notification('bash-9'))).toEqual({ admitted: false, reason: 'shutting_down' });
    expect(ledgerStates()).toEqual([
      ['bash-2', 'queued', null],
      ['bash-2', 'queued', null],
    ]);
  });

  it('a full queue refuses with QUEUE_FULL and leaves no queued ledger entry behind', () => {
    const { inbox, ledgerStates } = inboxForTest({ maxQueued: 1 });
    inbox.admit(notification('bash-1'));
    expect(() => inbox.admit(notification('bash-2'))).toThrow(
      expect.objectContaining({ code: 'QUEUE_FULL' }),
    );
    expect(ledgerStates()).toEqual([
      ['bash-1', 'queued', null],
      ['bash-2', 'discarded', 'queue_full'],
    ]);
  });

  it('rejects a bad priority before writing anything', () => {
    const { inbox, ledgerStates } = inboxForTest();
    expect(() => inbox.admit(notification('bash-1', { priority: 'soon' as never }))).toThrow(
      'Expected `priority` to be "now", "next" or "later", got "soon" (string)',
    );
    expect(ledgerStates()).toEqual([]);
  });
});

describe('NotificationInbox marking told', () => {
  it('discards queued notifications up to the told attempt, every one when no attempt is known', () => {
    const { inbox, discarded, ledgerStates } = inboxForTest();
    inbox.admit(notification('bash-1', { attempt: 1 }));
    inbox.admit(notification('bash-1', { attempt: 2 }));
    inbox.admit(notification('bash-2'));
    inbox.markTold({ taskId: 'bash-1', attempt: 1 });
    expect(inbox.queuedNotifications().map((queued) => [queued.taskId, queued.attempt])).toEqual([
      ['bash-1', 2],
      ['bash-2', 1],
    ]);
    inbox.markTold({ taskId: 'bash-1' });
    expect(inbox.queuedNotifications().map((queued) => queued.taskId)).toEqual(['bash-2']);
    expect(discarded).toEqual([
      ['bash-1', 'result_read'],
      ['bash-1', 'result_read'],
    ]);
    expect(ledgerStates().map(([, state, reason]) => [state, reason])).toEqual([
      ['discarded', 'result_read'],
      ['discarded', 'result_read'],
      ['queued', null],
    ]);
  });

  it('rejects a report that names no task', () => {
    const { inbox } = inboxForTest();
    expect(() => inbox.markTold({ taskId: '' })).toThrow(
      'Expected `taskId` to be a task id, got "" (string)',
    );
    expect(() => inbox.markTold({ taskId: 'bash-1', attempt: 0.5 })).toThrow(
      'Expected `attempt` to be an integer or undefined, got 0.5 (number)',
    );
  });
});

describe('NotificationInbox reservations', () => {
  it('reserve holds them out of the queue; commit records them once; release puts them back at the head', () => {
    const { inbox, store, calls } = inboxForTest();
    for (const id of ['bash-1', 'bash-2', 'bash-3']) inbox.admit(notification(id));
    const first = inbox.reserve({ source: 'surface', limit: 2 });
    expect(first.notifications.map((held) => held.taskId)).toEqual(['bash-1', 'bash-2']);
    expect(inbox.queued).toBe(1);
    inbox.admit(notification('bash-4'));
    first.release();
    expect(first.state).toBe('released');
    expect(calls.wake).toBe(1);
    expect(inbox.queuedNotifications().map((queued) => queued.taskId)).toEqual([
      'bash-1',
      'bash-2',
      'bash-3',
      'bash-4',
    ]);
    const all = inbox.reserve({ source: 'surface' });
    expect(all.commit().map((held) => held.taskId)).toEqual(['bash-1', 'bash-2', 'bash-3', 'bash-4']);
    expect(all.commit()).toEqual([]);
    all.release();
    expect(all.state).toBe('committed');
    expect(inbox.queued).toBe(0);
    expect(store.listQueued(SESSION)).toEqual([]);
    expect(store.listMessages(SESSION).filter((message) => message.source === 'surface')).toHaveLength(1);
  });

  it('reserves nothing while the owner drains, or once closing', () => {
    let draining = true;
    const { inbox, close } = inboxForTest({ draining: () => draining });
    inbox.admit(notification('bash-1'));
    expect(inbox.reserve({ source: 'surface' }).notifications).toEqual([]);
    expect(inbox.take({ source: 'surface' })).toEqual([]);
    draining = false;
    close();
    expect(inbox.reserve({ source: 'surface' }).notifications).toEqual([]);
    expect(inbox.queued).toBe(1);
  });

  it('reserves only the named lane, leaving the others in place', () => {
    const { inbox } = inboxForTest();
    inbox.admit(notification('bash-1'));
    inbox.admit(notification('bash-2', { lane: 'wakeup' }));
    const wakeups = inbox.reserve({ source: 'surface', lane: 'wakeup' });
    expect(wakeups.notifications.map((held) => held.taskId)).toEqual(['bash-2']);
    expect(inbox.queuedNotifications().map((queued) => queued.taskId)).toEqual(['bash-1']);
  });

  it('drops stale ones when reserving and again when committing', () => {
    const { inbox, rewind, ledgerStates } = inboxForTest();
    inbox.admit(notification('bash-1'));
    rewind();
    inbox.admit(notification('bash-2', { branchGeneration: 1 }));
    const held = inbox.reserve({ source: 'surface' });
    expect(held.notifications.map((entry) => entry.taskId)).toEqual(['bash-2']);
    rewind();
    expect(held.commit()).toEqual([]);
    expect(ledgerStates()).toEqual([
      ['bash-1', 'discarded', 'branch_changed'],
      ['bash-2', 'discarded', 'branch_changed'],
    ]);
  });

  it('a notification discarded while reserved is discarded, not queued again, when its reservation comes back', () => {
    const { inbox, ledgerStates } = inboxForTest();
    inbox.admit(notification('bash-1'));
    inbox.admit(notification('bash-2'));
    const held = inbox.reserve({ source: 'surface' });
    // A concurrent tool result showed bash-1's end while the reservation was on its way.
    inbox.markTold({ taskId: 'bash-1' });
    held.release();
    expect(inbox.queuedNotifications().map((queued) => queued.taskId)).toEqual(['bash-2']);
    expect(ledgerStates()).toEqual([
      ['bash-1', 'discarded', 'result_read'],
      ['bash-2', 'queued', null],
    ]);
  });

  it('a notification discarded while reserved is still recorded delivered when its reservation is committed', () => {
    const { inbox, ledgerStates } = inboxForTest();
    inbox.admit(notification('bash-1'));
    const held = inbox.reserve({ source: 'surface' });
    inbox.markTold({ taskId: 'bash-1', attempt: 1 });
    // It was handed over: the ledger says what reached the model.
    expect(held.commit().map((entry) => entry.taskId)).toEqual(['bash-1']);
    expect(ledgerStates()).toEqual([['bash-1', 'delivered', null]]);
  });

  it('discard drops a reservation without delivering it', () => {
    const { inbox, discarded, ledgerStates } = inboxForTest();
    inbox.admit(notification('bash-1'));
    const held = inbox.reserve({ source: 'surface' });
    held.discard('result_read');
    held.discard('result_read');
    held.release();
    expect(held.state).toBe('discarded');
    expect(held.commit()).toEqual([]);
    expect(discarded).toEqual([['bash-1', 'result_read']]);
    expect(ledgerStates()).toEqual([['bash-1', 'discarded', 'result_read']]);
    expect(inbox.queued).toBe(0);
  });

  it('a commit the store fails keeps them reserved; take gives them back in order and reports the failure', () => {
    const { store, failing } = switchableStore();
    const { inbox, calls, ledgerStates } = inboxForTest({ store });
    inbox.admit(notification('bash-1'));
    inbox.admit(notification('bash-2'));
    failing.add('commitDelivery');
    const held = inbox.reserve({ source: 'surface' });
    expect(() => held.commit()).toThrow(expect.objectContaining({ code: 'NOTIFICATION_DELIVERY_FAILED' }));
    expect(held.state).toBe('reserved');
    expect(calls.failed).toBe(0);
    held.release();
    expect(() => inbox.take({ source: 'surface', limit: 1 })).toThrow(
      expect.objectContaining({ code: 'NOTIFICATION_DELIVERY_FAILED' }),
    );
    expect(calls.failed).toBe(1);
    expect(inbox.queuedNotifications().map((queued) => queued.taskId)).toEqual(['bash-1', 'bash-2']);
    failing.delete('commitDelivery');
    expect(inbox.take({ source: 'surface' }).map((entry) => entry.taskId)).toEqual(['bash-1', 'bash-2']);
    expect(calls.succeeded).toBe(1);
    expect(ledgerStates().map(([, state]) => state)).toEqual(['delivered', 'delivered']);
  });

  it("a turn's delivery the store fails puts the rest back at the head of the queue and counts the failure", () => {
    const { store, failing } = switchableStore();
    const { inbox, calls } = inboxForTest({ store });
    inbox.admit(notification('bash-1'));
    inbox.admit(notification('bash-2'));
    failing.add('commitDelivery');
    const turn = inbox.reserveForTurn({ source: 'task_notification_steer', form: 'each' });
    expect(() => inbox.deliverReserved(turn)).toThrow(
      expect.objectContaining({ code: 'NOTIFICATION_DELIVERY_FAILED' }),
    );
    expect(calls.failed).toBe(1);
    expect(inbox.queuedNotifications().map((queued) => queued.taskId)).toEqual(['bash-1', 'bash-2']);
    failing.delete('commitDelivery');
    const again = inbox.reserveForTurn({ source: 'task_notification_steer', form: 'each' });
    expect(inbox.deliverReserved(again).map((entry) => entry.taskId)).toEqual(['bash-1', 'bash-2']);
    // One message apiece.
    expect(
      store.listMessages(SESSION).filter((message) => message.source === 'task_notification_steer'),
    ).toHaveLength(2);
  });

  it('shutdown forgets reservations: their ids come back for discarding and a late commit records nothing', () => {
    const { inbox } = inboxForTest();
    inbox.admit(notification('bash-1'));
    inbox.admit(notification('bash-2'));
    const held = inbox.reserve({ source: 'surface', limit: 1 });
    expect(inbox.dropReservations()).toEqual([held.notifications[0]!.ledgerId]);
    expect(held.state).toBe('released');
    expect(held.commit()).toEqual([]);
    expect(inbox.dropReservations()).toEqual([]);
  });

  it('validates its options', () => {
    const { inbox } = inboxForTest();
    expect(() => inbox.reserve({ source: '' })).toThrow(
      'Expected `source` to be a non-empty string, got "" (string)',
    );
    expect(() => inbox.take({ source: 'x', limit: -1 })).toThrow(
      'Expected `limit` to be a positive integer, got -1 (number)',
    );
  });
});

describe('a volatile inbox (no store)', () => {
  it('admits every key, delivers every reservation, and discards without a ledger', () => {
    const queue = new CommandQueue(10);
    const discarded: QueuedNotification[] = [];
    const inbox = new NotificationInbox({
      owner: {
        sessionId: 'bridge',
        branchGeneration: () => 0,
        isClosing: () => false,
        isDraining: () => false,
      },
      queue,
      ledger: volatileInboxLedger(),
      drain: { wake: () => {}, deliverySucceeded: () => {}, deliveryFailed: () => {} },
      now: () => 0,
      emit: () => {},
      discarded: (notifications) => discarded.push(...notifications),
    });
    expect(inbox.admit(notification('bash-1'))).toEqual({ admitted: true, ledgerId: 1 });
    expect(inbox.admit(notification('bash-1'))).toEqual({ admitted: true, ledgerId: 2 });
    const held = inbox.reserve({ source: 'steering', limit: 1 });
    expect(held.commit().map((entry) => entry.ledgerId)).toEqual([1]);
    inbox.discardWhere(() => true, 'disposed');
    expect(discarded.map((entry) => entry.ledgerId)).toEqual([2]);
  });
});

type Step =
  | { readonly kind: 'admit'; readonly task: number }
  | { readonly kind: 'markTold'; readonly task: number; readonly knownAttempt: boolean }
  | { readonly kind: 'reserve'; readonly limit: number }
  | { readonly kind: 'commit' | 'release' | 'discard'; readonly which: number }
  | { readonly kind: 'take' }
  | { readonly kind: 'turn' }
  | { readonly kind: 'rewind' }
  | { readonly kind: 'storeFails'; readonly on: boolean };

const TASKS = 4;

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('admit' as const), task: fc.nat(TASKS - 1) }),
  fc.record({ kind: fc.constant('markTold' as const), task: fc.nat(TASKS - 1), knownAttempt: fc.boolean() }),
  fc.record({ kind: fc.constant('reserve' as const), limit: fc.integer({ min: 1, max: 3 }) }),
  fc.record({
    kind: fc.constantFrom('commit' as const, 'release' as const, 'discard' as const),
    which: fc.nat(5),
  }),
  fc.constant({ kind: 'take' as const }),
  fc.constant({ kind: 'turn' as const }),
  fc.constant({ kind: 'rewind' as const }),
  fc.record({ kind: fc.constant('storeFails' as const), on: fc.boolean() }),
);

describe('NotificationInbox races (property)', () => {
  it('every admitted notification is delivered at most once, and once the queue is worked off each one is settled', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const { store: inner } = { store: createMemorySessionStore() };
        const { store, failing } = switchableStore(inner);
        const world = inboxForTest({ store });
        const { inbox } = world;
        const reservations: NotificationReservation[] = [];
        let generation = 0;
        let admittedCount = 0;
        const attempt = () => 1;
        for (const current of steps) {
          try {
            switch (current.kind) {
              case 'admit': {
                const admission = inbox.admit(
                  notification(`bash-${current.task}`, {
                    branchGeneration: generation,
                    idempotencyKey: `k${admittedCount}`,
                  }),
                );
                if (admission.admitted) admittedCount += 1;
                break;
              }
              case 'markTold':
                inbox.markTold({
                  taskId: `bash-${current.task}`,
                  ...(current.knownAttempt ? { attempt: attempt() } : {}),
                });
                break;
              case 'reserve':
                reservations.push(inbox.reserve({ source: 'surface', limit: current.limit }));
                break;
              case 'commit':
                reservations[current.which]?.commit();
                break;
              case 'release':
                reservations[current.which]?.release();
                break;
              case 'discard':
                reservations[current.which]?.discard('result_read');
                break;
              case 'take':
                inbox.take({ source: 'surface' });
                break;
              case 'turn':
                inbox.deliverReserved(inbox.reserveForTurn({ source: 'turn', form: 'each' }));
                break;
              case 'rewind':
                world.rewind();
                generation += 1;
                break;
              case 'storeFails':
                if (current.on) failing.add('commitDelivery');
                else failing.delete('commitDelivery');
                break;
            }
          } catch (error) {
            // Only the store's failure may surface, and it loses nothing (checked below).
            expect(error).toMatchObject({ code: 'NOTIFICATION_DELIVERY_FAILED' });
          }
        }
        // Work everything off: the store recovers, reservations come back, a last turn delivers the rest.
        failing.clear();
        for (const reservation of reservations) reservation.release();
        inbox.deliverReserved(inbox.reserveForTurn({ source: 'turn', form: 'batch' }));
        const entries = inner.listLedger(SESSION);
        expect(entries).toHaveLength(admittedCount);
        expect(entries.filter((entry) => entry.state === 'queued')).toEqual([]);
        expect(inbox.queued).toBe(0);
        // No entry reached the conversation twice: each delivered entry is named by exactly one message.
        const delivered = entries.filter((entry) => entry.state === 'delivered');
        const texts = inner
          .listMessages(SESSION)
          .flatMap((message) => (message.content.text ?? '').split('\n\n'))
          .filter((text) => text !== '');
        expect(texts).toHaveLength(delivered.length);
      }),
      { numRuns: 200 },
    );
  });
});
