import { describe, expect, it } from 'vitest';
import { asTaskId, type TaskSnapshot } from '../tasks/index.js';
import { formatStatusLine } from './status-line.js';

function snapshot(patch: Partial<TaskSnapshot>): TaskSnapshot {
  return {
    id: asTaskId('bash-1'),
    kind: 'bash',
    label: 'x',
    status: 'running',
    ownerSessionId: undefined,
    outputLimitBytes: undefined,
    reported: false,
    detail: {},
    isBackgrounded: true,
    branchGeneration: 0,
    stopInitiator: undefined,
    cancellable: true,
    cancelRequestedAt: undefined,
    startedAt: 0,
    endedAt: undefined,
    error: undefined,
    resultText: undefined,
    attempt: 1,
    finalOutput: false,
    traceparent: undefined,
    ...patch,
  };
}

describe('status line', () => {
  it('joins producer facts with commas and a note with a semicolon', () => {
    expect(formatStatusLine(snapshot({}))).toBe('[status: running]');
    expect(
      formatStatusLine(
        snapshot({
          status: 'killed',
          stopInitiator: 'user',
          detail: { signal: 'SIGTERM', reason: 'timed_out' },
        }),
      ),
    ).toBe('[status: killed (signal SIGTERM, reason: timed_out, stopped by the user)]');
    expect(formatStatusLine(snapshot({ status: 'stopping', stopInitiator: 'model' }), 'waited 5 ms')).toBe(
      '[status: stopping (stopped by the model; waited 5 ms)]',
    );
  });

  it('reads a completed command with a non-zero exit code as failed, and stays on one line', () => {
    expect(
      formatStatusLine(snapshot({ status: 'completed', detail: { exitCode: 2, reason: 'completed' } })),
    ).toBe('[status: failed (exit code 2)]');
    expect(formatStatusLine(snapshot({ status: 'failed', detail: { reason: 'bad\nthing' } }))).toBe(
      '[status: failed (reason: bad thing)]',
    );
  });
});
