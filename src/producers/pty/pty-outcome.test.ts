import { describe, expect, it } from 'vitest';
import { outcomeOf } from './pty-outcome.js';
import type { PtyExit } from './pty-process.js';

function exit(facts: Partial<PtyExit>): PtyExit {
  return {
    reason: 'completed',
    exitCode: 0,
    signal: null,
    stopSignals: [],
    leftoverProcesses: 0,
    survivors: [],
    outputBytes: 10,
    ...facts,
  };
}

describe('pty exit facts → task outcome', () => {
  it('completes a zero exit and keeps every raw fact in detail', () => {
    expect(outcomeOf(exit({}))).toEqual({
      status: 'completed',
      detail: {
        reason: 'completed',
        exitCode: 0,
        signal: null,
        stopSignals: [],
        leftoverProcesses: 0,
        outputBytes: 10,
      },
    });
  });

  it('fails a non-zero exit or a death by a signal nobody asked for', () => {
    expect(outcomeOf(exit({ exitCode: 2 }))).toMatchObject({ status: 'failed', error: 'exited with code 2' });
    expect(outcomeOf(exit({ exitCode: null, signal: 'SIGSEGV' }))).toMatchObject({
      status: 'failed',
      error: 'ended by SIGSEGV',
      detail: { signal: 'SIGSEGV' },
    });
  });

  it.each(['cancelled', 'timed_out', 'output_limit'] as const)('maps %s to killed', (reason) => {
    expect(
      outcomeOf(
        exit({
          reason,
          exitCode: null,
          signal: 'SIGKILL',
          stopSignals: ['SIGINT', 'SIGHUP', 'SIGTERM', 'SIGKILL'],
        }),
      ),
    ).toMatchObject({
      status: 'killed',
      detail: { reason, signal: 'SIGKILL', stopSignals: ['SIGINT', 'SIGHUP', 'SIGTERM', 'SIGKILL'] },
    });
  });

  it('fails a spawn error with its diagnosis, and reports survivors only when there are some', () => {
    const outcome = outcomeOf(exit({ reason: 'spawn_error', exitCode: null, error: 'no such directory' }));
    expect(outcome).toMatchObject({ status: 'failed', error: 'no such directory' });
    expect(outcome.detail).not.toHaveProperty('survivors');
    expect(outcomeOf(exit({ survivors: [12] })).detail).toMatchObject({ survivors: [12] });
  });
});
