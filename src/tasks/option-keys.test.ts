import { describe, expect, it } from 'vitest';
import { thrown } from '../../test/support/thrown.js';
import { UnknownOptionError } from './errors.js';
import { closestKey, rejectUnknownOptions } from './option-keys.js';

const KEYS = ['runtimeCapMs', 'killGraceMs', 'outputLimitBytes', 'tasks'];

describe('rejectUnknownOptions', () => {
  it('accepts known keys, undefined values of known keys, and an empty object', () => {
    expect(() => rejectUnknownOptions({}, KEYS, { where: 'example' })).not.toThrow();
    expect(() =>
      rejectUnknownOptions({ runtimeCapMs: 5, killGraceMs: undefined, tasks: {} }, KEYS, {
        where: 'example',
      }),
    ).not.toThrow();
  });

  it('leaves a non-object to the caller', () => {
    expect(() => rejectUnknownOptions(undefined, KEYS, { where: 'example' })).not.toThrow();
    expect(() => rejectUnknownOptions(null, KEYS, { where: 'example' })).not.toThrow();
    expect(() => rejectUnknownOptions(42, KEYS, { where: 'example' })).not.toThrow();
  });

  it('suggests a key that differs by a small edit', () => {
    const error = thrown(() => rejectUnknownOptions({ outputLimitByte: 5 }, KEYS, { where: 'example' }));
    expect(error).toBeInstanceOf(UnknownOptionError);
    expect(error.code).toBe('UNKNOWN_OPTION');
    expect(error.fault).toBe('caller');
    expect(error.message).toBe(
      'Unknown option `outputLimitByte` for example (did you mean `outputLimitBytes`?)',
    );
    expect(error.context).toMatchObject({
      field: 'outputLimitByte',
      value: 5,
      suggestion: 'outputLimitBytes',
    });
  });

  it('suggests a key that differs only in case', () => {
    const error = thrown(() => rejectUnknownOptions({ KILLGRACEMS: 5 }, KEYS, { where: 'example' }));
    expect(error.message).toContain('(did you mean `killGraceMs`?)');
  });

  it('suggests the new name of a renamed option', () => {
    const renamed = { maxRuntimeMs: 'runtimeCapMs', terminateGraceMs: 'killGraceMs' };
    const error = thrown(() =>
      rejectUnknownOptions({ maxRuntimeMs: 1000 }, KEYS, { where: 'createPtyProducer', renamed }),
    );
    expect(error.message).toBe(
      'Unknown option `maxRuntimeMs` for createPtyProducer (did you mean `runtimeCapMs`?)',
    );
  });

  it('lists the known keys when none is close', () => {
    const error = thrown(() => rejectUnknownOptions({ colour: 'red' }, KEYS, { where: 'example' }));
    expect(error.message).toBe(
      'Unknown option `colour` for example; known options: `runtimeCapMs`, `killGraceMs`, `outputLimitBytes`, `tasks`',
    );
    expect(error.context).toMatchObject({ field: 'colour', value: 'red', suggestion: undefined });
  });

  it('names the path of a nested options object and every other unknown key', () => {
    const error = thrown(() =>
      rejectUnknownOptions({ killGraceMz: 1, colour: 'red', size: 2 }, KEYS, {
        where: 'createErrandRuntime',
        path: 'pty',
      }),
    );
    expect(error.message).toBe(
      'Unknown option `pty.killGraceMz` for createErrandRuntime (did you mean `pty.killGraceMs`?); also unknown: `pty.colour`, `pty.size`',
    );
    expect(error.context.field).toBe('pty.killGraceMz');
  });

  it('ignores symbol keys and inherited keys', () => {
    const options = Object.assign(Object.create({ inherited: true }), { [Symbol('tag')]: 1, tasks: {} });
    expect(() => rejectUnknownOptions(options, KEYS, { where: 'example' })).not.toThrow();
  });
});

describe('closestKey', () => {
  it('picks the unique closest key within the distance limit', () => {
    expect(closestKey('timeout', ['timeoutMs', 'cwd'])).toBe('timeoutMs');
    expect(closestKey('cdw', ['timeoutMs', 'cwd'])).toBe('cwd');
    expect(closestKey('shel', ['shell', 'env'])).toBe('shell');
  });

  it('suggests nothing when two keys are equally close or none is close', () => {
    expect(closestKey('maxRow', ['maxRows', 'maxCols', 'maxRowz'])).toBeUndefined();
    expect(closestKey('banana', ['shell', 'env'])).toBeUndefined();
  });
});
