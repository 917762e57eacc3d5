import { describe, expect, it } from 'vitest';
import { fixture } from '../../../test/fixtures/pty/harness.js';
import { checkSpawnable, findOnPath } from './spawn-check.js';

describe('checkSpawnable', () => {
  it('accepts a program found on PATH in an existing directory', () => {
    expect(checkSpawnable('bash', process.cwd(), process.env.PATH)).toBeUndefined();
  });

  it('names a missing or unusable working directory', () => {
    expect(checkSpawnable('bash', fixture('nowhere'), process.env.PATH)).toMatch(
      /^The working directory ".*nowhere" cannot be used: ENOENT$/,
    );
    expect(checkSpawnable('bash', fixture('progress.sh'), process.env.PATH)).toMatch(
      /^The working directory ".*progress\.sh" is not a directory$/,
    );
  });

  it('names a program that is not on PATH, or a path that is not an executable file', () => {
    expect(checkSpawnable('errand-missing', '/', '/usr/bin:/bin')).toBe(
      'The program "errand-missing" was not found on PATH',
    );
    expect(checkSpawnable('./winch.mjs', fixture(''), process.env.PATH)).toBe(
      'The program "./winch.mjs" is not an executable file',
    );
    expect(checkSpawnable('./progress.sh', fixture(''), process.env.PATH)).toBeUndefined();
  });
});

describe('findOnPath', () => {
  it('finds the first executable file, relative entries against cwd, or absolute entries only', () => {
    const directory = fixture('');
    // progress.sh is executable in the fixtures; winch.mjs is not.
    expect(findOnPath('progress.sh', `/nowhere:${directory}`)).toBe(
      `${directory.replace(/\/$/, '')}/progress.sh`,
    );
    expect(findOnPath('winch.mjs', directory)).toBeUndefined();
    expect(findOnPath('progress.sh', '.', { cwd: directory })).toBe(
      `${directory.replace(/\/$/, '')}/progress.sh`,
    );
    expect(findOnPath('progress.sh', '.', { cwd: directory, absoluteOnly: true })).toBeUndefined();
    expect(findOnPath('progress.sh', ':', { cwd: directory })).toBe(
      `${directory.replace(/\/$/, '')}/progress.sh`,
    );
  });
});
