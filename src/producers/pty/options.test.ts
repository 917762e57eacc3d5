import { describe, expect, it } from 'vitest';
import { systemClock } from '../../tasks/clock.js';
import { PTY_PRODUCER_DEFAULTS, resolvePtyProducerOptions } from './options.js';

describe('pty producer options', () => {
  it('applies the documented defaults', () => {
    const resolved = resolvePtyProducerOptions({});
    expect(resolved).toMatchObject({ ...PTY_PRODUCER_DEFAULTS, runtimeCapMs: undefined, env: {} });
    expect(resolved).toMatchObject({
      shell: 'bash',
      shellArgs: ['-c'],
      defaultCols: 120,
      defaultRows: 40,
      scrollbackLines: 1000,
      maxScreenBytes: 8192,
      maxOutputFileBytes: 1024 ** 3,
      interruptGraceMs: 1000,
      killGraceMs: 2000,
      flowControlHighWaterBytes: 1024 ** 2,
      maxCommandBytes: 100_000,
      maxLabelChars: 200,
      inheritProcessEnv: true,
    });
    expect(resolved.clock).toBe(systemClock);
  });

  it.each([
    [
      { maxScreenBytes: 9000 },
      'Expected `maxScreenBytes` to be an integer from 256 to 8192, got 9000 (number)',
    ],
    [{ interruptGraceMs: -1 }, 'Expected `interruptGraceMs` to be a non-negative integer, got -1 (number)'],
    [{ killGraceMs: -1 }, 'Expected `killGraceMs` to be a non-negative integer, got -1 (number)'],
    [{ runtimeCapMs: 0 }, 'Expected `runtimeCapMs` to be a positive integer, got 0 (number)'],
    [{ defaultCols: 600 }, 'Expected `defaultCols` to be no greater than `maxCols` (500), got 600 (number)'],
    [{ maxOutputFileBytes: 1.5 }, 'Expected `maxOutputFileBytes` to be a positive integer, got 1.5 (number)'],
    [{ shell: '' }, 'Expected `shell` to be a non-empty string without NUL characters, got "" (string)'],
    [
      { shellArgs: ['-c', 1] },
      'Expected `shellArgs[1]` to be a string without NUL characters, got 1 (number)',
    ],
    [
      { env: { 'A=B': 'x' } },
      'Expected `env` to be an object whose keys are names without "=" or NUL, got "A=B" (string)',
    ],
    [{ env: { A: 1 } }, 'Expected `env.A` to be a string without NUL characters, got 1 (number)'],
    [{ keepOutputFiles: 'yes' }, 'Expected `keepOutputFiles` to be a boolean, got "yes" (string)'],
    [
      { settleTimeoutMs: 40_000 },
      'Expected `settleTimeoutMs` to be no greater than `maxSettleTimeoutMs` (30000), got 40000 (number)',
    ],
    [{ loadPty: 'node-pty' }, 'Expected `loadPty` to be a function, got "node-pty" (string)'],
    [
      { flowControlHighWaterBytes: 128 * 1024 ** 2 },
      'Expected `flowControlHighWaterBytes` to be an integer from 4096 to 67108864, got 134217728 (number)',
    ],
    [
      { flowControlHighWaterBytes: 1024 },
      'Expected `flowControlHighWaterBytes` to be an integer from 4096 to 67108864, got 1024 (number)',
    ],
    [
      { maxCommandBytes: 200_000 },
      'Expected `maxCommandBytes` to be a positive integer no greater than 131071, got 200000 (number)',
    ],
    [
      { maxCommandBytes: 0 },
      'Expected `maxCommandBytes` to be a positive integer no greater than 131071, got 0 (number)',
    ],
    [{ maxLabelChars: 4 }, 'Expected `maxLabelChars` to be an integer from 8 to 2000, got 4 (number)'],
    [{ maxLabelChars: 2001 }, 'Expected `maxLabelChars` to be an integer from 8 to 2000, got 2001 (number)'],
    [{ maxLabelChars: '40' }, 'Expected `maxLabelChars` to be an integer from 8 to 2000, got "40" (string)'],
  ])('rejects %o, naming the field and the value', (options, message) => {
    expect(() => resolvePtyProducerOptions(options as never)).toThrow(message);
    try {
      resolvePtyProducerOptions(options as never);
    } catch (error) {
      expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', fault: 'caller' });
    }
  });

  it('takes custom values of the length and flow-control limits', () => {
    expect(
      resolvePtyProducerOptions({
        maxCommandBytes: 131_071,
        maxLabelChars: 8,
        flowControlHighWaterBytes: 64 * 1024 ** 2,
      }),
    ).toMatchObject({
      maxCommandBytes: 131_071,
      maxLabelChars: 8,
      flowControlHighWaterBytes: 64 * 1024 ** 2,
    });
  });

  it('keeps defaults within a lowered maximum', () => {
    expect(resolvePtyProducerOptions({ maxCols: 60, maxRows: 20 })).toMatchObject({
      defaultCols: 60,
      defaultRows: 20,
    });
  });
});
