import { describe, expect, it } from 'vitest';
import { createMemorySessionStore } from '../store/index.js';
import { findResumableMcpSession } from './resumable-session.js';

function storeWith(
  sessions: Array<{ id: string; client?: string; directory?: string; held?: boolean; surface?: string }>,
) {
  let time = 1000;
  const store = createMemorySessionStore({ now: () => time });
  for (const session of sessions) {
    time += 10;
    store.createSession({ id: session.id, cwd: '/' });
    store.updateSession(session.id, {
      metadata: {
        surface: session.surface ?? 'mcp',
        ...(session.client === undefined ? {} : { client: { name: session.client, version: '1' } }),
        ...(session.directory === undefined ? {} : { launchDirectory: session.directory }),
      },
    });
    if (session.held)
      store.acquireSession(session.id, { runtime: `r-${session.id}`, pid: 1, acquiredAt: time }, () => true);
  }
  return store;
}

describe('findResumableMcpSession', () => {
  const live = (holder: { runtime: string }) => holder.runtime.startsWith('r-');

  it('picks the newest session of the same client in the same directory that no live server holds', () => {
    const store = storeWith([
      { id: 'old', client: 'claude-code', directory: '/work' },
      { id: 'newer', client: 'claude-code', directory: '/work' },
      { id: 'held', client: 'claude-code', directory: '/work', held: true },
      { id: 'other-client', client: 'codex', directory: '/work' },
      { id: 'other-directory', client: 'claude-code', directory: '/elsewhere' },
      { id: 'not-mcp', client: 'claude-code', directory: '/work', surface: 'chat' },
    ]);
    expect(
      findResumableMcpSession({ store, clientName: 'claude-code', directory: '/work', isHolderLive: live }),
    ).toBe('newer');
    expect(
      findResumableMcpSession({ store, clientName: 'codex', directory: '/work', isHolderLive: live }),
    ).toBe('other-client');
    expect(
      findResumableMcpSession({ store, clientName: 'gemini', directory: '/work', isHolderLive: live }),
    ).toBeUndefined();
    expect(
      findResumableMcpSession({ store, clientName: 'claude-code', directory: '/tmp', isHolderLive: live }),
    ).toBeUndefined();
  });

  it('takes a session whose holder is gone', () => {
    const store = storeWith([{ id: 'crashed', client: 'claude-code', directory: '/work', held: true }]);
    expect(
      findResumableMcpSession({
        store,
        clientName: 'claude-code',
        directory: '/work',
        isHolderLive: () => false,
      }),
    ).toBe('crashed');
  });
});
