import { describe, expect, it, vi } from 'vitest';
import type { RuntimeEventListener, Session, SessionEvent } from '../session/index.js';
import { createMemorySessionStore } from '../store/index.js';
import type { SessionId } from '../tasks/index.js';
import { createRuntimeLedgerView } from './runtime-ledger-view.js';

/** A session runtime as the view sees it: sessions by id, and their events. */
function fakeRuntime(sessions: Record<string, Partial<Session>>) {
  const listeners = new Set<RuntimeEventListener>();
  return {
    getSession: (id: string) => sessions[id] as Session | undefined,
    onSessionEvent(listener: RuntimeEventListener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
    emit(sessionId: string, event: SessionEvent) {
      for (const listener of listeners) listener(sessionId as SessionId, event);
    },
  };
}

const open = { state: 'idle', shuttingDown: false, sealed: false, branchGeneration: 3 } as const;

describe('the runtime ledger view', () => {
  it('can deliver to an open session of any runtime it follows, and to no closing, sealed or unknown one', () => {
    const view = createRuntimeLedgerView(createMemorySessionStore(), { warn: vi.fn() });
    view.follow(fakeRuntime({ main: open, closing: { ...open, shuttingDown: true } }));
    const children = fakeRuntime({
      child: { ...open, branchGeneration: 0 },
      done: { ...open, sealed: true },
    });
    const unfollow = view.follow(children);
    expect(
      ['main', 'closing', 'child', 'done', 'nobody'].map((id) => view.deliverableGeneration(id)),
    ).toEqual([3, undefined, 0, undefined, undefined]);
    unfollow();
    expect(view.deliverableGeneration('child')).toBeUndefined();
  });

  it('reads the queued notifications of a session from the store', () => {
    const store = createMemorySessionStore();
    store.createSession({ id: 'main', cwd: '/' });
    const admit = (kind: 'notification' | 'user_input', key: string, taskId?: string) =>
      store.admit({ sessionId: 'main', kind, idempotencyKey: key, text: 'x', ...(taskId ? { taskId } : {}) });
    admit('notification', 'a', 'bash-1');
    admit('user_input', 'b');
    const delivered = admit('notification', 'c', 'bash-2').entry;
    store.commitDelivery('main', [delivered.id], { role: 'user', content: { text: 'x' }, source: 'test' });
    const view = createRuntimeLedgerView(store, { warn: vi.fn() });
    expect([...view.queuedTaskIds('main')]).toEqual(['bash-1']);
  });

  it('tells its listeners what the session events say, and isolates a failing one', () => {
    const logger = { warn: vi.fn() };
    const view = createRuntimeLedgerView(createMemorySessionStore(), logger);
    const runtime = fakeRuntime({ main: open });
    view.follow(runtime);
    const heard: [string, string | undefined][] = [];
    view.subscribe(() => {
      throw new Error('boom');
    });
    view.subscribe((sessionId, taskId) => heard.push([sessionId, taskId]));
    runtime.emit('main', { type: 'notification-queued', taskId: 'bash-1', lane: 'quiet' });
    runtime.emit('main', { type: 'notification-discarded', taskId: 'bash-2', reason: 'result_read' });
    runtime.emit('main', { type: 'state', state: 'shutting_down' });
    runtime.emit('main', { type: 'turn-start', turnId: 1, source: 'user', title: 'go' });
    expect(heard).toEqual([
      ['main', 'bash-1'],
      ['main', 'bash-2'],
      ['main', undefined],
    ]);
    expect(logger.warn).toHaveBeenCalledTimes(3);
  });

  it('reads a session queue again only after an event that may have changed it without naming the task', () => {
    const store = createMemorySessionStore();
    store.createSession({ id: 'main', cwd: '/' });
    let reads = 0;
    const counted = {
      listQueued: (sessionId: string) => {
        reads += 1;
        return store.listQueued(sessionId);
      },
    };
    const view = createRuntimeLedgerView(counted, { warn: vi.fn() });
    const runtime = fakeRuntime({ main: open });
    view.follow(runtime);
    const message = (source: string) =>
      ({
        type: 'message',
        message: { source, role: source === 'tool' ? 'tool' : 'user', content: {} },
      }) as unknown as SessionEvent;
    const readsAfter = (event: SessionEvent) => {
      runtime.emit('main', event);
      view.queuedTaskIds('main');
      return reads;
    };
    expect(readsAfter({ type: 'notification-queued', taskId: 'bash-1', lane: 'wakeup' })).toBe(1);
    // A turn starting, its reply and tool results, and its end change no entry.
    const turn: SessionEvent[] = [
      { type: 'state', state: 'running' },
      { type: 'turn-start', turnId: 1, source: 'background_task', title: 'bash-1' },
      message('assistant'),
      message('tool'),
      { type: 'state', state: 'idle' },
    ];
    expect(turn.map(readsAfter)).toEqual([1, 1, 1, 1, 1]);
    // A delivery (a message of another source) and a shutdown may have: each is read again.
    expect(readsAfter(message('background_task'))).toBe(2);
    expect(readsAfter(message('mcp_tool_result'))).toBe(3);
    expect(readsAfter({ type: 'state', state: 'shutting_down' })).toBe(4);
    view.refresh?.();
    expect(readsAfter({ type: 'state', state: 'idle' })).toBe(5);
  });
});
