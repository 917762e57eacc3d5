import { describe, expect, it } from 'vitest';
import { bashOutcome } from './bash-outcome.js';
import type { ExitFacts } from './exit-facts.js';
import { formatSkippedOutputMarker, withSkippedOutputMarker } from './skipped-output-marker.js';

const base: ExitFacts = {
  reason: 'completed',
  exitCode: 0,
  signal: null,
  pid: 42,
  outputBytes: 10,
  outputFile: '/tmp/x.log',
  escalated: false,
  signalledProcesses: 0,
  survivors: [],
  startedAt: 1000,
  endedAt: 1500,
  error: null,
  errorCode: null,
  cancelMessage: null,
  timeoutMs: null,
  outputLimitBytes: null,
};

describe('bashOutcome', () => {
  it.each([
    [{}, 'completed'],
    [{ exitCode: 2 }, 'failed'],
    [{ exitCode: null, signal: 'SIGSEGV' as const }, 'failed'],
    [{ reason: 'cancelled' as const, exitCode: null, signal: 'SIGTERM' as const }, 'killed'],
    [{ reason: 'timed_out' as const, exitCode: null, signal: 'SIGTERM' as const, timeoutMs: 5 }, 'killed'],
    [
      { reason: 'output_limit' as const, exitCode: null, signal: 'SIGTERM' as const, outputLimitBytes: 9 },
      'killed',
    ],
    [{ reason: 'spawn_error' as const, exitCode: null, pid: null, error: 'no such directory' }, 'failed'],
  ])('maps %o to %s', (patch: Partial<ExitFacts>, status) => {
    const outcome = bashOutcome({ ...base, ...patch });
    expect(outcome.status).toBe(status);
    expect(outcome.detail).toMatchObject({ reason: patch.reason ?? 'completed', durationMs: 500 });
    if (status === 'completed') expect(outcome.error).toBeUndefined();
    else expect(outcome.error).toMatch(/^The command /);
  });

  it('records SIGKILL escalation', () => {
    const outcome = bashOutcome({
      ...base,
      reason: 'cancelled',
      escalated: true,
      signal: 'SIGKILL',
      exitCode: null,
    });
    expect(outcome.detail).toMatchObject({ escalated: true, killSignal: 'SIGKILL' });
    expect(outcome.error).toContain('SIGKILL after SIGTERM was ignored');
  });

  it('produces JSON-ready detail', () => {
    const detail = bashOutcome(base).detail!;
    expect(JSON.parse(JSON.stringify(detail))).toEqual(detail);
  });
});

describe('skipped output marker', () => {
  it('says how many bytes were skipped and where the full output is, on a line of its own', () => {
    expect(formatSkippedOutputMarker(1)).toBe('[... 1 byte skipped ...]');
    expect(formatSkippedOutputMarker(2048, '/tmp/a\nb.log')).toBe(
      '[... 2048 bytes skipped; full output: /tmp/a b.log ...]',
    );
    expect(withSkippedOutputMarker('tail', 0, '/x')).toBe('tail');
    expect(withSkippedOutputMarker('tail', 5, '/x')).toBe('[... 5 bytes skipped; full output: /x ...]\ntail');
  });
});
