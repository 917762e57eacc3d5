import { describe, expect, it } from 'vitest';
import type { BackgroundWorksStore } from '../events/index.js';
import { listSessionEntries } from './session-list.js';

/**
 * A projection in which only the listed sessions run work (that many running bash works each, beside a
 * finished one). The per-session lookups throw: the list reads the works once for all sessions.
 */
function works(running: Record<string, number>, passes = { count: 0 }): BackgroundWorksStore {
  const map = new Map<string, unknown>();
  for (const [sessionId, count] of Object.entries(running)) {
    for (let index = 0; index < count; index += 1) {
      map.set(`${sessionId}-${index}`, { sessionId, state: 'running', kind: 'bash' });
    }
    map.set(`${sessionId}-done`, { sessionId, state: 'completed', kind: 'bash' });
  }
  const values = map.values.bind(map);
  map.values = () => {
    passes.count += 1;
    return values();
  };
  return {
    state: { works: map },
    hasRunningWork: () => {
      throw new Error('looked up one session at a time');
    },
    badgeCount: () => {
      throw new Error('looked up one session at a time');
    },
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

  it('reads the works once however many sessions there are (sessions + works, not their product)', () => {
    const running: Record<string, number> = {};
    const sessions = Array.from({ length: 1000 }, (_, index) => ({ id: `s${index}`, createdAt: index }));
    for (const session of sessions) running[session.id] = 10;
    const passes = { count: 0 };
    const entries = listSessionEntries(sessions, works(running, passes));
    expect(passes.count).toBe(1);
    expect(entries).toHaveLength(1000);
    expect(entries.every((entry) => entry.badgeCount === 10 && entry.group === 'running')).toBe(true);
  });
});
