import { describe, expect, it } from 'vitest';
import type { BackgroundWorksStore } from '../events/index.js';
import { listSessionEntries } from './session-list.js';

/** A projection in which only the listed sessions run work. */
function works(running: Record<string, number>): BackgroundWorksStore {
  return {
    hasRunningWork: (sessionId: string | null) => (running[sessionId ?? ''] ?? 0) > 0,
    badgeCount: (sessionId?: string | null) => running[sessionId ?? ''] ?? 0,
  } as unknown as BackgroundWorksStore;
}

describe('the session list order', () => {
  it('puts running sessions first, then live, then ended, newest first within each', () => {
    const entries = listSessionEntries(
      [
        { id: 'old-ended', createdAt: 1, live: false },
        { id: 'new-ended', createdAt: 9, live: false },
        { id: 'idle-old', createdAt: 2 },
        { id: 'idle-new', createdAt: 8, own: true },
        { id: 'busy-old', createdAt: 3 },
        { id: 'busy-elsewhere', createdAt: 4, runningElsewhere: 2 },
        { id: 'dead-but-running', createdAt: 5, live: false },
      ],
      works({ 'busy-old': 1, 'dead-but-running': 1 }),
    );
    expect(entries.map((entry) => [entry.id, entry.group])).toEqual([
      ['dead-but-running', 'running'],
      ['busy-elsewhere', 'running'],
      ['busy-old', 'running'],
      ['idle-new', 'live'],
      ['idle-old', 'live'],
      ['new-ended', 'ended'],
      ['old-ended', 'ended'],
    ]);
    expect(entries.find((entry) => entry.id === 'busy-elsewhere')).toMatchObject({
      hasRunningWork: true,
      badgeCount: 0,
      runningElsewhere: 2,
    });
    expect(entries.find((entry) => entry.id === 'idle-new')).toMatchObject({ own: true, live: true });
  });

  it('orders sessions without a start time after dated ones, by id', () => {
    const entries = listSessionEntries([{ id: 'b' }, { id: 'a' }, { id: 'c', createdAt: 1 }], works({}));
    expect(entries.map((entry) => entry.id)).toEqual(['c', 'a', 'b']);
  });
});
