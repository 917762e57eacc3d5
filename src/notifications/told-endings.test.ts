import { describe, expect, it } from 'vitest';
import { endCovers, MAX_TOLD_ENDINGS, ToldEndings, validateToldTaskEnd } from './told-endings.js';

describe('ToldEndings', () => {
  it('covers the told attempt and earlier ones, never a later attempt or an unknown one', () => {
    const ends = new ToldEndings();
    ends.note({ taskId: 'bash-1', attempt: 2 });
    expect(ends.covers({ taskId: 'bash-1', attempt: 1 })).toBe(true);
    expect(ends.covers({ taskId: 'bash-1', attempt: 2 })).toBe(true);
    expect(ends.covers({ taskId: 'bash-1', attempt: 3 })).toBe(false);
    expect(ends.covers({ taskId: 'bash-1' })).toBe(false);
    expect(ends.covers({ taskId: 'bash-2', attempt: 1 })).toBe(false);
  });

  it('keeps the highest attempt told, and remembers nothing for an end of unknown attempt', () => {
    const ends = new ToldEndings();
    ends.note({ taskId: 'bash-1', attempt: 3 });
    ends.note({ taskId: 'bash-1', attempt: 1 });
    ends.note({ taskId: 'bash-2', attempt: undefined });
    expect(ends.covers({ taskId: 'bash-1', attempt: 3 })).toBe(true);
    expect(ends.size).toBe(1);
  });

  it(`forgets the least recently told task id past its limit (default ${MAX_TOLD_ENDINGS})`, () => {
    const ends = new ToldEndings(3);
    ends.note({ taskId: 'a', attempt: 1 });
    ends.note({ taskId: 'b', attempt: 1 });
    ends.note({ taskId: 'c', attempt: 1 });
    // Reported again: now the newest.
    ends.note({ taskId: 'a', attempt: 1 });
    ends.note({ taskId: 'd', attempt: 1 });
    expect(['a', 'b', 'c', 'd'].filter((taskId) => ends.covers({ taskId, attempt: 1 }))).toEqual([
      'a',
      'c',
      'd',
    ]);
    expect(ends.size).toBe(3);
    expect(() => new ToldEndings(0)).toThrow('Expected `limit` to be a positive integer, got 0 (number)');
  });
});

describe('endCovers (the covering rule)', () => {
  it('discards the same task up to the attempt, every one of it when either attempt is unknown', () => {
    expect(endCovers({ taskId: 'bash-1', attempt: 2 }, { taskId: 'bash-1', attempt: 2 })).toBe(true);
    expect(endCovers({ taskId: 'bash-1', attempt: 2 }, { taskId: 'bash-1', attempt: 3 })).toBe(false);
    expect(endCovers({ taskId: 'bash-1', attempt: undefined }, { taskId: 'bash-1', attempt: 9 })).toBe(true);
    expect(endCovers({ taskId: 'bash-1', attempt: 1 }, { taskId: 'bash-1' })).toBe(true);
    expect(endCovers({ taskId: 'bash-1', attempt: undefined }, { taskId: 'bash-2', attempt: 1 })).toBe(false);
  });
});

describe('validateToldTaskEnd', () => {
  it('names the field and the value of a bad report', () => {
    expect(validateToldTaskEnd({ taskId: 'bash-1' })).toEqual({ taskId: 'bash-1', attempt: undefined });
    expect(() => validateToldTaskEnd({ taskId: 7 } as never)).toThrow(
      expect.objectContaining({
        code: 'INVALID_ARGUMENT',
        context: expect.objectContaining({ field: 'taskId' }),
      }),
    );
    expect(() => validateToldTaskEnd({ taskId: 'bash-1', attempt: Number.NaN })).toThrow(
      'Expected `attempt` to be an integer or undefined, got NaN (number)',
    );
  });
});
