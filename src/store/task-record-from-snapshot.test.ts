import { describe, expect, it } from 'vitest';
import { asSessionId, asTaskId, type TaskFacts, type TaskSnapshot } from '../tasks/index.js';
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
  detail: { signal: 'SIGTERM', outputFile: '/tmp/bash-3.log' },
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

  it('takes the process facts, the status file and the durable flag from detail', () => {
    const record = taskRecordFromSnapshot({
      ...snapshot,
      detail: {
        pid: 4242,
        pgid: 4242,
        processStartTime: 123_456,
        bootId: 'b00t',
        processTag: 'ERRAND_PROCESS_TAG=x.1',
        statusFile: '/tmp/x.status',
        durable: true,
      },
    });
    expect(record).toMatchObject({
      process: { pid: 4242, pgid: 4242, startTime: 123_456, bootId: 'b00t', tag: 'ERRAND_PROCESS_TAG=x.1' },
      statusFile: '/tmp/x.status',
      durable: true,
    });
    const store = createMemorySessionStore({ now: () => 200 });
    store.createSession({ id: 's', cwd: '/' });
    expect(store.upsertTask(record)).toMatchObject({
      durable: true,
      process: { pid: 4242, startTime: 123_456 },
    });
  });

  it('publishes no process without a pid, and ignores facts of the wrong type', () => {
    const record = taskRecordFromSnapshot({
      ...snapshot,
      // Facts of the wrong type, as a record written by another producer could hold them.
      detail: { pid: null, pgid: 'x', processStartTime: -1, durable: 'yes' } as unknown as TaskFacts,
    });
    expect(record.process).toBeUndefined();
    expect(record.durable).toBe(false);
    const loose = taskRecordFromSnapshot({ ...snapshot, detail: { pid: 9, processStartTime: 1.5 } });
    expect(loose.process).toEqual({ pid: 9 });
  });
});
