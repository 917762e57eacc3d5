/**
 * What a task record's write reads, on both backends: the first write of an attempt checks its session and
 * raises its kind's sequence; the later writes of that attempt (its process facts, its end) rewrite the
 * stored row and touch nothing else. A write that changes the session, the start or the told flag is a
 * first write again.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { inMemorySqliteBackend } from '../../../test/support/sqlite-backend.js';
import { composeSessionStore } from '../compose-session-store.js';
import { expectErrandError, START_TIME } from '../conformance/index.js';
import { createMemoryBackend } from '../memory-tables.js';
import { sessionStoreOptions } from '../options.js';
import type { SessionStore, TaskRecordInput } from '../session-store.js';
import type { StoreBackend } from '../store-tables.js';

interface Counted {
  readonly store: SessionStore;
  readonly reads: { sessionChecks: number; sequenceRaises: number };
}

/** A store over `backend` whose session check and sequence raise are counted. */
function counted(backend: StoreBackend): Counted {
  const reads = { sessionChecks: 0, sequenceRaises: 0 };
  const { sessions, sequences } = backend.tables;
  const tables = {
    ...backend.tables,
    sessions: {
      ...sessions,
      exists: (id: string) => {
        reads.sessionChecks += 1;
        return sessions.exists(id);
      },
    },
    sequences: {
      ...sequences,
      raise: (kind: string, last: number) => {
        reads.sequenceRaises += 1;
        sequences.raise(kind, last);
      },
    },
  };
  const store = composeSessionStore(
    {
      tables,
      capabilities: backend.capabilities,
      transaction: (body, durability) => backend.transaction(body, durability),
      whenDurable: () => backend.whenDurable(),
      describeFailure: (operation, error) => backend.describeFailure(operation, error),
      close: () => backend.close(),
    },
    sessionStoreOptions.resolve({ now: () => START_TIME }),
  );
  return { store, reads };
}

function task(overrides: Partial<TaskRecordInput> = {}): TaskRecordInput {
  return {
    id: 'bash-7',
    sessionId: 's',
    kind: 'bash',
    label: 'make',
    status: 'running',
    detail: { outputBytes: 0 },
    isBackgrounded: true,
    branchGeneration: 0,
    startedAt: START_TIME,
    reported: false,
    ...overrides,
  };
}

const stores: SessionStore[] = [];
afterEach(() => {
  for (const store of stores.splice(0)) store.close();
});

describe.each([
  ['sqlite', inMemorySqliteBackend],
  ['memory', createMemoryBackend],
])('task record writes (%s)', (_name, backend) => {
  function open(): Counted {
    const opened = counted(backend());
    stores.push(opened.store);
    opened.store.createSession({ id: 's', cwd: '/' });
    opened.store.createSession({ id: 'other', cwd: '/' });
    return opened;
  }

  it('checks the session and raises the sequence on the first write of an attempt only', () => {
    const { store, reads } = open();
    store.upsertTask(task());
    expect(reads).toEqual({ sessionChecks: 1, sequenceRaises: 1 });
    const running = task({ detail: { outputBytes: 0, pid: 4242 }, process: { pid: 4242 } });
    store.upsertTask(running);
    store.upsertTask({ ...running, status: 'completed', endedAt: START_TIME + 5, detail: { exitCode: 0 } });
    expect(reads).toEqual({ sessionChecks: 1, sequenceRaises: 1 });
    expect(store.getTask('bash-7', 's')).toMatchObject({
      status: 'completed',
      detail: { exitCode: 0 },
      process: { pid: 4242 },
    });
    expect(store.reserveTaskSequences('bash', 0, 1).first).toBe(8);
  });

  it('writes a changed start or told flag whole, and keeps the read cursor that is ahead', () => {
    const { store, reads } = open();
    store.upsertTask(task({ readOffset: 40 }));
    store.upsertTask(task({ startedAt: START_TIME + 1, readOffset: 10 }));
    expect(reads).toEqual({ sessionChecks: 2, sequenceRaises: 2 });
    store.upsertTask(task({ startedAt: START_TIME + 1, status: 'completed', reported: true }));
    expect(reads).toEqual({ sessionChecks: 3, sequenceRaises: 3 });
    const stored = store.getTask('bash-7', 's');
    expect(stored).toMatchObject({ startedAt: START_TIME + 1, reported: true, readOffset: 40 });
    expect(store.listTasks({ sessionId: 's', reported: false })).toEqual([]);
  });

  it('treats the same id in another session as another record, and still refuses a missing session', () => {
    const { store, reads } = open();
    store.upsertTask(task());
    store.upsertTask(task({ sessionId: 'other' }));
    expect(reads.sessionChecks).toBe(2);
    expect(
      store
        .listTasks()
        .map((record) => record.sessionId)
        .sort(),
    ).toEqual(['other', 's']);
    expectErrandError(() => store.upsertTask(task({ sessionId: 'gone' })), 'STORE_RECORD_NOT_FOUND');
    expect(store.getTask('bash-7', 'gone')).toBeUndefined();
  });
});
