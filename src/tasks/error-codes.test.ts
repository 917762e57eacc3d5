import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { ERRAND_ERROR_CODES, type ErrandErrorCode, isErrandErrorCode } from './error-codes.js';
import { ErrandError, TaskNotFoundError } from './errors.js';

describe('ErrandErrorCode', () => {
  it('holds the codes Errand throws, each once, with their public spelling', () => {
    for (const code of [
      'TASK_NOT_FOUND',
      'SESSION_NOT_FOUND',
      'STORE_UNAVAILABLE',
      'SPAWN_FAILED',
    ] as const) {
      expectTypeOf(code).toMatchTypeOf<ErrandErrorCode>();
      expect(ERRAND_ERROR_CODES).toContain(code);
    }
    expect(new Set(ERRAND_ERROR_CODES).size).toBe(ERRAND_ERROR_CODES.length);
    for (const code of ERRAND_ERROR_CODES) expect(code).toMatch(/^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$/);
  });

  it('rejects a misspelt code when an error is made or matched', () => {
    const error = new TaskNotFoundError('bash-1');
    expect(ErrandError.hasCode(error, 'TASK_NOT_FOUND')).toBe(true);
    // @ts-expect-error: a typo is not a code.
    expect(ErrandError.hasCode(error, 'TASK_NOT_FOUN')).toBe(false);
    // @ts-expect-error: nor when an error is made with it.
    expect(new ErrandError('TASK_NOT_FOUN', 'caller', 'x').code).toBe('TASK_NOT_FOUN');
    // @ts-expect-error: a code is compared against the union.
    expect(error.code === 'SESSION_NOT_FOUN').toBe(false);
  });

  it('tells a known code from any other string read from outside', () => {
    expect(isErrandErrorCode('CANCEL_FAILED')).toBe(true);
    expect(isErrandErrorCode('CANCEL_FAILD')).toBe(false);
    expect(isErrandErrorCode(42)).toBe(false);
  });

  it('lists no code that nothing throws any more', () => {
    const sources = new URL('..', import.meta.url).pathname;
    const text = (readdirSync(sources, { recursive: true }) as string[])
      .filter(
        (file) => file.endsWith('.ts') && !file.endsWith('.test.ts') && !file.endsWith('error-codes.ts'),
      )
      .map((file) => readFileSync(join(sources, file), 'utf8'))
      .join('\n');
    // The dashboard's codes are thrown as `DASHBOARD_${apiCode}`.
    const unused = ERRAND_ERROR_CODES.filter(
      (code) => !text.includes(`'${code}'`) && !text.includes(`'${code.replace(/^DASHBOARD_/, '')}'`),
    );
    expect(unused).toEqual([]);
  });
});
