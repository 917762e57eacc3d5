import { describe, expect, it } from 'vitest';
import { asSessionId, asTaskId, type TaskSnapshot } from '../tasks/index.js';
import { createMemorySessionStore } from './memory-session-store.js';
import { taskRecordFromSnapshot } from './task-record-from-snapshot.js';

const snapshot: TaskSnapshot = {
  id: asTaskId('bash-3'),
  kind: 'bash',
  label: 'npm test',
  status: 'killed',
  ownerSessionId: asSessionId('s'),
  outputLimitBytes: 4096,
  reported: true,
  detail: { exitSignal: 'SIGTERM', outputFile: '/tmp/bash-3.log' },
  isBackgrounded: true,
  branchGeneration: 2,
  stopInitiator: 'user',
  cancellable: false,
  cancelRequestedAt: 90,
  startedAt: 10,
  endedAt: 100,
  error: undefined,
  resultText: undefined,
  attempt: 1,
  finalOutput: false,
  traceparent: undefined,
};

describe('taskRecordFromSnapshot', () => {
  it('maps a registry snapshot to a record the store accepts, taking the output file from detail', () => {
    const record = taskRecordFromSnapshot(snapshot);
    expect(record).toMatchObject({
      id: 'bash-3',
      sessionId: 's',
      status: 'killed',
      stopInitiator: 'user',
      endedAt: 100,
      reported: true,
      outputFile: '/tmp/bash-3.log',
    });
    const store = createMemorySessionStore({ now: () => 200 });
    store.createSession({ id: 's', cwd: '/' });
    expect(store.upsertTask(record)).toMatchObject({ id: 'bash-3', detail: snapshot.detail, updatedAt: 200 });
  });

  it('lets the caller name the output file, and leaves ownerless tasks without a session', () => {
    const record = taskRecordFromSnapshot(
      { ...snapshot, ownerSessionId: undefined },
      { outputFile: '/spill' },
    );
    expect(record.sessionId).toBeUndefined();
    expect(record.outputFile).toBe('/spill');
  });
});
