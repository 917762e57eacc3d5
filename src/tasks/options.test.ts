import { describe, expect, expectTypeOf, it } from 'vitest';
import { thrown } from '../../test/support/thrown.js';
import { ErrandError } from './errors.js';
import { consoleLogger, type Logger } from './logger.js';
import { describeIntegerRange } from './option-rules.js';
import { defineOptions, type OptionsInput, option } from './options.js';

const limits = defineOptions('createLimits', {
  /** How long to wait. Default 30000. */
  waitMs: option.integer({ min: 1, max: 2_147_483_647, default: 30_000 }),
  budget: option.integer({ min: 0 }),
  wakeBudget: option.integer({ min: 0, default: 3, allowInfinity: true }),
});

const tool = defineOptions(
  'createTool',
  {
    name: option.required(option.string()),
    lane: option.oneOf(['wakeup', 'quiet'], { default: 'wakeup' }),
    enabled: option.boolean({ default: true }),
    logger: option.logger({ default: consoleLogger }),
    format: option.func<(text: string) => string>(),
    limits: option.nested(limits),
    minMs: option.integer({ min: 0, default: 10 }),
    maxMs: option.integer({ min: 0, default: 100 }),
  },
  {
    renamed: { label: 'name' },
    check(resolved, path) {
      if (resolved.minMs > resolved.maxMs) {
        throw new ErrandError('INVALID_ARGUMENT', 'caller', `${path('minMs')} above ${path('maxMs')}`);
      }
    },
  },
);

describe('defineOptions', () => {
  it('fills in defaults and keeps given values, nested records included', () => {
    const resolved = tool.resolve({ name: 'x', limits: { budget: 5 } });
    expect(resolved).toMatchObject({
      name: 'x',
      lane: 'wakeup',
      enabled: true,
      logger: consoleLogger,
      format: undefined,
      limits: { waitMs: 30_000, budget: 5, wakeBudget: 3 },
    });
    expect(tool.resolve({ name: 'x' }).limits).toEqual({ waitMs: 30_000, budget: undefined, wakeBudget: 3 });
    expect(limits.resolve({ wakeBudget: Number.POSITIVE_INFINITY }).wakeBudget).toBe(
      Number.POSITIVE_INFINITY,
    );
  });

  it('types what a caller passes and what resolve returns', () => {
    type Input = OptionsInput<typeof tool.rules>;
    const resolved = tool.resolve({ name: 'x' });
    expectTypeOf(resolved.name).toEqualTypeOf<string>();
    expectTypeOf(resolved.lane).toEqualTypeOf<'wakeup' | 'quiet'>();
    expectTypeOf(resolved.format).toEqualTypeOf<((text: string) => string) | undefined>();
    expectTypeOf(resolved.limits.budget).toEqualTypeOf<number | undefined>();
    expectTypeOf(resolved.limits.waitMs).toEqualTypeOf<number>();
    expectTypeOf<Input['name']>().toEqualTypeOf<string>();
    expectTypeOf<Input['limits']>().toEqualTypeOf<OptionsInput<typeof limits.rules> | undefined>();
    // @ts-expect-error: `name` is required
    const missing: Input = { lane: 'quiet' };
    expect(missing).toBeDefined();
  });

  it('lists keys and fixed defaults in declaration order', () => {
    expect(limits.keys).toEqual(['waitMs', 'budget', 'wakeBudget']);
    expect(limits.defaults).toEqual({ waitMs: 30_000, wakeBudget: 3 });
  });

  it('rejects an unknown key with a suggestion, under its full path', () => {
    const error = thrown(() => tool.resolve({ name: 'x', limits: { waitMS: 5 } }));
    expect(error.code).toBe('UNKNOWN_OPTION');
    expect(error.message).toBe(
      'Unknown option `limits.waitMS` for createTool (did you mean `limits.waitMs`?)',
    );
    expect(thrown(() => tool.resolve({ label: 'x' })).message).toContain('did you mean `name`?');
    expect(thrown(() => limits.resolve({ x: 1 }, { where: 'createHost', path: 'parts' })).message).toBe(
      'Unknown option `parts.x` for createHost; known options: `parts.waitMs`, `parts.budget`, `parts.wakeBudget`',
    );
  });

  it('names the field and the value of a bad one, with one wording per bound', () => {
    expect(thrown(() => tool.resolve({ name: 'x', limits: { waitMs: 0 } })).message).toBe(
      'Expected `limits.waitMs` to be a positive integer no greater than 2147483647, got 0 (number)',
    );
    expect(thrown(() => tool.resolve({ name: '' })).message).toBe(
      'Expected `name` to be a non-empty string, got "" (string)',
    );
    expect(thrown(() => tool.resolve({})).code).toBe('INVALID_ARGUMENT');
    expect(thrown(() => tool.resolve({ name: 'x', lane: 'loud' })).message).toContain(
      'to be "wakeup" or "quiet"',
    );
    expect(thrown(() => tool.resolve({ name: 'x', logger: {} })).message).toContain(
      'Expected `logger` to be a Logger (an object with a warn function)',
    );
    expect(thrown(() => tool.resolve({ name: 'x', limits: 3 })).message).toContain(
      'Expected `limits` to be an object',
    );
    expect(thrown(() => tool.resolve('nope')).message).toContain('Expected `options` to be an object');
    expect(thrown(() => tool.resolve({ name: 'x', minMs: 5, maxMs: 1 })).message).toBe('minMs above maxMs');
  });

  it('omits keys a host sets itself', () => {
    const narrowed = tool.omit('name', 'format');
    expect(narrowed.keys).not.toContain('name');
    expect(narrowed.resolve({}).lane).toBe('wakeup');
    expect(thrown(() => narrowed.resolve({ name: 'x' })).code).toBe('UNKNOWN_OPTION');
  });

  it('bounds an option by another: a given value keeps to it, a default is clamped to it', () => {
    const waits = defineOptions('createWaits', {
      defaultWaitMs: option.integer({ min: 1, default: 30_000, atMost: 'maxWaitMs' }),
      maxWaitMs: option.integer({ min: 1, default: 600_000 }),
      retryMaxMs: option.integer({ min: 1, default: 100, atLeast: 'defaultWaitMs' }),
    });
    expect(waits.resolve({})).toEqual({ defaultWaitMs: 30_000, maxWaitMs: 600_000, retryMaxMs: 30_000 });
    expect(waits.resolve({ maxWaitMs: 10 })).toEqual({ defaultWaitMs: 10, maxWaitMs: 10, retryMaxMs: 100 });
    expect(thrown(() => waits.resolve({ defaultWaitMs: 700_000 })).message).toBe(
      'Expected `defaultWaitMs` to be no greater than `maxWaitMs` (600000), got 700000 (number)',
    );
    expect(
      thrown(() => waits.resolve({ defaultWaitMs: 50, retryMaxMs: 20 }, { path: 'limits' })).message,
    ).toBe('Expected `limits.retryMaxMs` to be no less than `limits.defaultWaitMs` (50), got 20 (number)');
    expect(() => defineOptions('broken', { a: option.integer({ atMost: 'b' }) })).toThrow(
      'option a is bounded by b, which is not an earlier option',
    );
  });

  it('takes false, arrays, records and computed fallbacks', () => {
    const part = defineOptions('createPart', {
      pollMs: option.orFalse(option.integer({ min: 1, default: 500 })),
      args: option.list(option.string({ withoutNul: true }), { default: ['-c'] }),
      lanes: option.record(option.oneOf(['wakeup', 'quiet']), {
        keys: { expected: 'lower-case names', isValid: (key) => /^[a-z]+$/.test(key) },
      }),
      id: option.string({ fallback: () => 'generated' }),
      tail: option.orFalse(option.nested(limits)),
    });
    expect(part.resolve({})).toMatchObject({ pollMs: 500, args: ['-c'], lanes: {}, id: 'generated' });
    expect(part.resolve({ pollMs: false, tail: false })).toMatchObject({ pollMs: false, tail: false });
    expect(part.resolve({ lanes: { bash: 'quiet' } }).lanes).toEqual({ bash: 'quiet' });
    expect(thrown(() => part.resolve({ tail: 3 })).message).toBe(
      'Expected `tail` to be an object, or false, got 3 (number)',
    );
    expect(part.defaults).toEqual({ pollMs: 500, args: ['-c'] });
    expect(thrown(() => part.resolve({ pollMs: 0 })).message).toBe(
      'Expected `pollMs` to be a positive integer, or false, got 0 (number)',
    );
    expect(thrown(() => part.resolve({ args: ['-c', 'a\0b'] })).message).toBe(
      'Expected `args[1]` to be a non-empty string without NUL characters, got "a\\u0000b" (string)',
    );
    expect(thrown(() => part.resolve({ lanes: { bash: 'loud' } })).message).toBe(
      'Expected `lanes.bash` to be "wakeup" or "quiet", got "loud" (string)',
    );
    expect(thrown(() => part.resolve({ lanes: { Bash: 'quiet' } })).message).toBe(
      'Expected `lanes` to be an object whose keys are lower-case names, got "Bash" (string)',
    );
    expect(thrown(() => part.resolve({ tail: { budget: -1 } })).message).toContain('`tail.budget`');
  });

  it('converts a resolved value, lists nested records under their index, and defaults to false', () => {
    const named = defineOptions('createNamed', { name: option.required(option.string()) });
    const index = defineOptions('createIndex', {
      entries: option.transform(option.list(option.nested(named), { default: [] }), (list, path) => {
        const names = new Set(list.map((entry) => entry.name));
        if (names.size !== list.length)
          throw new ErrandError('INVALID_ARGUMENT', 'caller', `${path} repeats`);
        return names;
      }),
      autoMs: option.orFalse(option.integer({ min: 1 }), { default: false }),
    });
    expect(index.resolve({}).entries).toEqual(new Set());
    expect(index.resolve({ entries: [{ name: 'a' }, { name: 'b' }] }).entries).toEqual(new Set(['a', 'b']));
    expect(index.resolve({}).autoMs).toBe(false);
    expect(index.defaults).toEqual({ autoMs: false });
    expect(thrown(() => index.resolve({ entries: [{ name: 'a' }, { name: 'a' }] })).message).toBe(
      'entries repeats',
    );
    expect(thrown(() => index.resolve({ entries: [{ name: 'a' }, { nmae: 'b' }] })).message).toBe(
      'Unknown option `entries[1].nmae` for createIndex (did you mean `entries[1].name`?)',
    );
    expect(thrown(() => index.resolve({ entries: [{}] })).message).toBe(
      'Expected `entries[0].name` to be a non-empty string, got undefined (undefined)',
    );
  });

  it('keeps bounds when a record is narrowed, and refuses a bound on an omitted key', () => {
    const waits = defineOptions('createWaits', {
      defaultWaitMs: option.integer({ min: 1, default: 30_000, atMost: 'maxWaitMs' }),
      maxWaitMs: option.integer({ min: 1, default: 600_000 }),
      label: option.string(),
    });
    expect(thrown(() => waits.omit('label').resolve({ maxWaitMs: 5, defaultWaitMs: 6 })).message).toContain(
      'no greater than `maxWaitMs` (5)',
    );
    expect(() => waits.omit('maxWaitMs')).toThrow('which is not an earlier option');
  });

  it('types the fixed defaults', () => {
    expectTypeOf(limits.defaults).toEqualTypeOf<{ readonly waitMs: number; readonly wakeBudget: number }>();
    expectTypeOf(tool.defaults.logger).toEqualTypeOf<Logger>();
    expectTypeOf(tool.resolve({ name: 'x' }).logger).toEqualTypeOf<Logger>();
  });

  it('words integer ranges one way', () => {
    expect(describeIntegerRange(1, undefined)).toBe('a positive integer');
    expect(describeIntegerRange(0, undefined)).toBe('a non-negative integer');
    expect(describeIntegerRange(0, 100)).toBe('an integer from 0 to 100');
    expect(describeIntegerRange(8, undefined)).toBe('an integer of at least 8');
    expect(describeIntegerRange(undefined, undefined)).toBe('an integer');
  });
});
