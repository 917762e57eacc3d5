import { describe, expect, it } from 'vitest';
import { describeError, TaskNotFoundError } from './errors.js';

describe('describeError', () => {
  it('puts an ErrandError code first', () => {
    expect(describeError(new TaskNotFoundError('bash-1'))).toBe('TASK_NOT_FOUND: No task with id "bash-1"');
  });

  it("adds another error's code once, when its message does not already carry it", () => {
    const full = Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
    expect(describeError(full)).toBe('database or disk is full (SQLITE_FULL)');
    const missing = Object.assign(new Error("ENOENT: no such file or directory, open 'x'"), {
      code: 'ENOENT',
    });
    expect(describeError(missing)).toBe("ENOENT: no such file or directory, open 'x'");
  });

  it('names every error of an AggregateError, and reads a thrown non-error as text', () => {
    const several = new AggregateError(
      [new Error('first'), new TaskNotFoundError('bash-2')],
      'cleanups failed',
    );
    expect(describeError(several)).toBe('cleanups failed; first; TASK_NOT_FOUND: No task with id "bash-2"');
    expect(describeError('plain')).toBe('plain');
    expect(describeError(undefined)).toBe('undefined');
  });
});
