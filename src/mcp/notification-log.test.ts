/**
 * The logging side channel sends each queued notification once, in admission order, and a burst of K
 * notifications reads K ledger entries from the store, not K² (each read asks only for what is new).
 */
import { describe, expect, it } from 'vitest';
import type { SessionEventListener } from '../session/index.js';
import { createMemorySessionStore, type ListQueuedOptions } from '../store/index.js';
import { forwardNotificationsAsLogs } from './notification-log.js';

describe('forwardNotificationsAsLogs', () => {
  it('sends a burst of K notifications once each, reading K entries in all', async () => {
    const store = createMemorySessionStore();
    store.createSession({ id: 's', cwd: '/' });
    const listeners = new Set<SessionEventListener>();
    const session = {
      id: 's',
      on(listener: SessionEventListener) {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
    };
    let entriesRead = 0;
    const counted = {
      listQueued(sessionId: string, options?: ListQueuedOptions) {
        const entries = store.listQueued(sessionId, options);
        entriesRead += entries.length;
        return entries;
      },
    };
    const sent: string[] = [];
    const stop = forwardNotificationsAsLogs({
      session: session as never,
      store: counted,
      send: async (params) => {
        sent.push((params.data as { taskId: string }).taskId);
      },
    });
    const burst = 200;
    for (let index = 0; index < burst; index += 1) {
      store.admit({
        sessionId: 's',
        kind: 'notification',
        idempotencyKey: `k${index}`,
        taskId: `bash-${index + 1}`,
        text: `<task-notification>${index}</task-notification>`,
      });
      for (const listener of listeners)
        listener({ type: 'notification-queued', taskId: `bash-${index + 1}`, lane: 'wakeup' });
    }
    stop();
    await Promise.resolve();
    expect(sent).toEqual(Array.from({ length: burst }, (_, index) => `bash-${index + 1}`));
    expect(entriesRead).toBe(burst);
  });
});
