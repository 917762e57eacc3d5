import { describe, expect, it } from 'vitest';
import { BASH_EXECUTOR_DEFAULTS, resolveExecutorOptions } from './executor-options.js';

describe('resolveExecutorOptions', () => {
  it('fills in documented defaults', () => {
    const options = resolveExecutorOptions();
    expect(options).toMatchObject({ ...BASH_EXECUTOR_DEFAULTS });
    expect(options.maxBufferedBytes).toBe(1024 * 1024);
    expect(options.maxOutputFileBytes).toBe(1024 ** 3);
  });

  it.each([
    [{ maxBufferedBytes: 100 }, '`maxBufferedBytes` to be an integer of at least 8192, got 100 (number)'],
    [{ maxReadBytes: 0 }, '`maxReadBytes` to be a positive integer, got 0 (number)'],
    [
      { maxBufferedBytes: 10_000, maxReadBytes: 20_000 },
      '`maxReadBytes` to be no greater than `maxBufferedBytes` (10000)',
    ],
    [{ killGraceMs: 1.5 }, '`killGraceMs` to be a positive integer, got 1.5 (number)'],
    [{ killProcessGroupOnExit: 'yes' }, '`killProcessGroupOnExit` to be a boolean, got "yes" (string)'],
    [{ shell: '' }, '`shell` to be a non-empty string without NUL characters'],
    [{ spawn: 42 }, '`spawn` to be a function, got 42 (number)'],
    [{ launcher: () => undefined }, '`launcher` to be an object with a launch function'],
    [
      { spawn: () => undefined, launcher: { launch: () => undefined } },
      '`launcher` to be absent when `spawn` is given (the launcher spawns)',
    ],
  ])('rejects %o', (options, message) => {
    expect(() => resolveExecutorOptions(options as never)).toThrow(message);
    expect(() => resolveExecutorOptions(options as never)).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
  });
});
