import { describe, expect, it } from 'vitest';
import { asTaskId, type TaskSnapshot } from '../../tasks/index.js';
import { type BashFacts, bashFacts } from './bash-facts.js';
import { exitDetail } from './bash-outcome.js';

function snapshotOf(kind: string, detail: BashFacts): TaskSnapshot {
  return {
    id: asTaskId(`${kind}-1`),
    kind,
    label: 'npm test',
    status: 'completed',
    ownerSessionId: undefined,
    outputLimitBytes: undefined,
    reported: false,
    detail,
    isBackgrounded: true,
    branchGeneration: 0,
    stopInitiator: undefined,
    cancellable: true,
    cancelRequestedAt: undefined,
    startedAt: 0,
    endedAt: 1,
    error: undefined,
    resultText: undefined,
    attempt: 1,
    finalOutput: false,
    traceparent: undefined,
  };
}

describe('bash facts', () => {
  it('types the exit facts a stopped command publishes', () => {
    const facts: BashFacts = exitDetail({
      reason: 'cancelled',
      exitCode: null,
      signal: 'SIGTERM',
      pid: 10,
      outputBytes: 3,
      outputFile: '/tmp/out.log',
      escalated: false,
      signalledProcesses: 1,
      survivors: [],
      startedAt: 5,
      endedAt: 15,
      error: null,
      errorCode: null,
      cancelMessage: 'no longer needed',
      timeoutMs: null,
      outputLimitBytes: null,
    });
    expect(facts).toMatchObject({ reason: 'cancelled', killSignal: 'SIGTERM', durationMs: 10 });
    // @ts-expect-error `killsignal` is not a bash fact
    const misspelt: BashFacts = { killsignal: 'SIGTERM' };
    expect(misspelt).toBeDefined();
  });

  it('reads a bash task as BashFacts and refuses any other kind', () => {
    expect(bashFacts(snapshotOf('bash', { command: 'npm test', pgid: 10 }))?.command).toBe('npm test');
    expect(bashFacts(snapshotOf('pty', { command: 'bash' }))).toBeUndefined();
  });
});
