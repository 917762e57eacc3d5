/**
 * The rule builders of `defineOptions`: `option.integer({ min: 1, default: 30_000 })` and the like. Each says
 * what a valid value is in one wording (`describeIntegerRange` for every integer bound), resolves a given
 * value or throws `INVALID_ARGUMENT` naming the field and the value, and carries its default.
 */
import type { Clock } from './clock.js';
import { ErrandError, InvalidArgumentError } from './errors.js';
import type { Logger } from './logger.js';
import type {
  DefaultedRule,
  OptionBound,
  OptionRule,
  OptionRules,
  OptionsInput,
  OptionsResolver,
  ResolvedOptions,
} from './option-types.js';

/** How an absent option resolves: a fixed, documented `default`, or a `fallback` computed each time. */
interface RuleSettings<Output> {
  readonly default?: Output;
  readonly fallback?: () => Output;
}

type WithDefault<Output> = { readonly default: Output };
type WithFallback<Output> = { readonly fallback: () => Output };

function makeRule<Input, Output>(
  expected: string,
  settings: RuleSettings<unknown> & { readonly bound?: OptionBound },
  resolve: (value: unknown, path: string, where: string) => unknown,
): OptionRule<Input, Output> {
  const { default: fixed, fallback, bound } = settings;
  return Object.freeze({
    expected,
    required: false as const,
    fallback: () => (fallback === undefined ? fixed : fallback()) as Output,
    ...(fixed === undefined ? {} : { defaultValue: fixed as Output }),
    ...(bound === undefined ? {} : { bound }),
    resolve: resolve as (value: unknown, path: string, where: string) => Output,
  });
}

/** Resolves a value `isValid` accepts (converted by `convert`), else throws naming the field and the value. */
function checked(
  expected: string,
  isValid: (value: unknown, path: string) => boolean,
  convert: (value: unknown, path: string, where: string) => unknown = (value) => value,
): (value: unknown, path: string, where: string) => unknown {
  return (value, path, where) => {
    if (!isValid(value, path)) throw new InvalidArgumentError(path, expected, value);
    return convert(value, path, where);
  };
}

/** The one wording of an integer bound: "a positive integer no greater than 2147483647". */
export function describeIntegerRange(min: number | undefined, max: number | undefined): string {
  const top = max === undefined || max === Number.MAX_SAFE_INTEGER ? undefined : max;
  if (min === undefined || min === Number.MIN_SAFE_INTEGER) {
    return top === undefined ? 'an integer' : `an integer no greater than ${top}`;
  }
  if (min === 1)
    return top === undefined ? 'a positive integer' : `a positive integer no greater than ${top}`;
  if (min === 0 && top === undefined) return 'a non-negative integer';
  return top === undefined ? `an integer of at least ${min}` : `an integer from ${min} to ${top}`;
}

export interface IntegerSettings extends RuleSettings<number> {
  readonly min?: number;
  readonly max?: number;
  /** Accepts `Infinity` as "no limit". Default false. */
  readonly allowInfinity?: boolean;
  /** The option (of the same record) this one may not exceed; its default is clamped to it. */
  readonly atMost?: string;
  /** The option (of the same record) this one may not fall below; its default is raised to it. */
  readonly atLeast?: string;
}

/** A builder of one kind of rule, asked for with a fixed default, a computed fallback, or neither. */
interface RuleBuilder<Value, Settings> {
  (settings: Settings & WithDefault<Value>): DefaultedRule<Value, Value>;
  (settings: Settings & WithFallback<Value>): OptionRule<Value, Value>;
  (settings?: Settings): OptionRule<Value, Value | undefined>;
}

/** What a kind of rule accepts, from its settings: the wording, the check and a bound, if any. */
interface RuleShape {
  readonly expected: string;
  readonly isValid: (value: unknown) => boolean;
  readonly bound?: OptionBound | undefined;
}

function ruleBuilder<Value, Settings extends RuleSettings<Value>>(
  shape: (settings: Settings) => RuleShape,
): RuleBuilder<Value, Settings> {
  return ((settings: Settings = {} as Settings) => {
    const { expected, isValid, bound } = shape(settings);
    const rest = bound === undefined ? settings : { ...settings, bound };
    return makeRule(expected, rest, checked(expected, isValid));
  }) as RuleBuilder<Value, Settings>;
}

const integer = ruleBuilder<number, IntegerSettings>(
  ({ min, max, allowInfinity = false, atMost, atLeast }) => {
    const range = describeIntegerRange(min, max);
    return {
      expected: allowInfinity ? `${range} or Infinity` : range,
      isValid: (value) =>
        (allowInfinity && value === Number.POSITIVE_INFINITY) ||
        (typeof value === 'number' &&
          Number.isSafeInteger(value) &&
          (min === undefined || value >= min) &&
          (max === undefined || value <= max)),
      bound:
        atMost !== undefined
          ? { key: atMost, side: 'atMost' }
          : atLeast !== undefined
            ? { key: atLeast, side: 'atLeast' }
            : undefined,
    };
  },
);

const boolean = ruleBuilder<boolean, RuleSettings<boolean>>(() => ({
  expected: 'a boolean',
  isValid: (value) => typeof value === 'boolean',
}));

export interface StringSettings extends RuleSettings<string> {
  /** Refuses the empty string. Default true. */
  readonly nonEmpty?: boolean;
  /** Refuses a NUL character (a path, a program argument). Default false. */
  readonly withoutNul?: boolean;
}

const string = ruleBuilder<string, StringSettings>(({ nonEmpty = true, withoutNul = false }) => ({
  expected: `${nonEmpty ? 'a non-empty string' : 'a string'}${withoutNul ? ' without NUL characters' : ''}`,
  isValid: (value) =>
    typeof value === 'string' && (!nonEmpty || value !== '') && (!withoutNul || !value.includes('\0')),
}));

type Literal = string | number | boolean;

function oneOf<const Values extends readonly Literal[]>(
  values: Values,
  settings: WithDefault<Values[number]>,
): DefaultedRule<Values[number], Values[number]>;
function oneOf<const Values extends readonly Literal[]>(
  values: Values,
  settings?: RuleSettings<Values[number]>,
): OptionRule<Values[number], Values[number] | undefined>;
function oneOf(
  values: readonly Literal[],
  settings: RuleSettings<Literal> = {},
): OptionRule<Literal, unknown> {
  const expected = values
    .map((value) => JSON.stringify(value))
    .join(', ')
    .replace(/, ([^,]*)$/, ' or $1');
  return makeRule(
    expected,
    settings,
    checked(expected, (value) => values.includes(value as Literal)),
  );
}

// biome-ignore lint/suspicious/noExplicitAny: any function signature
type AnyFunction = (...args: any[]) => unknown;

function func<F extends AnyFunction>(settings: WithDefault<F>): DefaultedRule<F, F>;
function func<F extends AnyFunction>(settings: WithFallback<F>): OptionRule<F, F>;
function func<F extends AnyFunction>(settings?: RuleSettings<F>): OptionRule<F, F | undefined>;
function func(settings: RuleSettings<AnyFunction> = {}): OptionRule<AnyFunction, unknown> {
  return makeRule(
    'a function',
    settings,
    checked('a function', (value) => typeof value === 'function'),
  );
}

/**
 * An object recognised by the functions it must have (a task service, a store): `expected` names it in
 * messages ("a TaskService"), `methods` are checked to be functions.
 */
function shaped<T extends object>(
  expected: string,
  methods: readonly string[],
  settings: WithDefault<T>,
): DefaultedRule<T, T>;
function shaped<T extends object>(
  expected: string,
  methods: readonly string[],
  settings: WithFallback<T>,
): OptionRule<T, T>;
function shaped<T extends object>(
  expected: string,
  methods: readonly string[],
  settings?: RuleSettings<T>,
): OptionRule<T, T | undefined>;
function shaped(
  expected: string,
  methods: readonly string[],
  settings: RuleSettings<object> = {},
): OptionRule<object, unknown> {
  const isValid = (value: unknown) =>
    typeof value === 'object' &&
    value !== null &&
    methods.every((method) => typeof (value as Record<string, unknown>)[method] === 'function');
  return makeRule(expected, settings, checked(expected, isValid));
}

/** The logger option every part takes: an object with a `warn` function. */
function logger(settings: WithDefault<Logger>): DefaultedRule<Logger, Logger>;
function logger(): OptionRule<Logger, Logger | undefined>;
function logger(settings: RuleSettings<Logger> = {}): OptionRule<Logger, unknown> {
  return shaped<Logger>('a Logger (an object with a warn function)', ['warn'], settings);
}

/** The clock option of parts that schedule: an object with `now` and `schedule` functions. */
function clock(settings: WithDefault<Clock>): DefaultedRule<Clock, Clock>;
function clock(): OptionRule<Clock, Clock | undefined>;
function clock(settings: RuleSettings<Clock> = {}): OptionRule<Clock, unknown> {
  return shaped<Clock>('a Clock ({ now, schedule })', ['now', 'schedule'], settings);
}

/**
 * A value checked by `isValid` (which may throw its own error for a part of the value, under `path`),
 * passed through unchanged or converted by `settings.convert` (which may throw naming `path` too, or
 * resolve a nested record at `path` for `where`).
 */
type Check = (value: unknown, path: string) => boolean;
type Convert<Input, Output> = (value: Input, path: string, where: string) => Output;
interface Converting<I, O> {
  readonly convert?: Convert<I, O>;
}

function custom<I, O = I>(
  expected: string,
  isValid: Check,
  settings: Converting<I, O> & WithDefault<O>,
): DefaultedRule<I, O>;
function custom<I, O = I>(
  expected: string,
  isValid: Check,
  settings: Converting<I, O> & WithFallback<O>,
): OptionRule<I, O>;
function custom<I, O = I>(
  expected: string,
  isValid: Check,
  settings?: Converting<I, O> & RuleSettings<O>,
): OptionRule<I, O | undefined>;
function custom(
  expected: string,
  isValid: Check,
  settings: Converting<never, unknown> & RuleSettings<unknown> = {},
): OptionRule<unknown, unknown> {
  return makeRule(
    expected,
    settings,
    checked(expected, isValid, settings.convert as Convert<unknown, unknown>),
  );
}

/** An array whose items each follow `item`, checked under `path[index]`; resolved to a frozen copy. */
function list<Input, Output>(
  item: OptionRule<Input, Output, boolean>,
  settings: WithDefault<readonly Exclude<Output, undefined>[]>,
): DefaultedRule<readonly Input[], readonly Exclude<Output, undefined>[]>;
function list<Input, Output>(
  item: OptionRule<Input, Output, boolean>,
  settings?: RuleSettings<readonly Exclude<Output, undefined>[]>,
): OptionRule<readonly Input[], readonly Exclude<Output, undefined>[] | undefined>;
function list(
  item: OptionRule<unknown, unknown, boolean>,
  settings: RuleSettings<readonly unknown[]> = {},
): OptionRule<readonly unknown[], unknown> {
  return makeRule('an array', settings, (value, path, where) => {
    if (!Array.isArray(value)) throw new InvalidArgumentError(path, 'an array', value);
    return Object.freeze(value.map((entry, index) => item.resolve(entry, `${path}[${index}]`, where)));
  });
}

/** What the keys of a `record` must be. */
export interface RecordKeys {
  /** As messages say it: "task kinds". */
  readonly expected: string;
  readonly isValid: (key: string) => boolean;
}

/**
 * An object of entries that each follow `value`, checked under `path.key`, whose keys pass `keys` (any by
 * default); resolved to a frozen copy without its undefined entries. Absent resolves to `{}`.
 */
function record<K extends string, Input, Output>(
  value: OptionRule<Input, Output, boolean>,
  settings: { readonly keys?: RecordKeys } = {},
): OptionRule<Readonly<Partial<Record<K, Input>>>, Readonly<Partial<Record<K, Exclude<Output, undefined>>>>> {
  const { keys } = settings;
  const expected = keys === undefined ? 'an object' : `an object whose keys are ${keys.expected}`;
  return makeRule(expected, { fallback: () => Object.freeze({}) }, (given, path, where) => {
    if (typeof given !== 'object' || given === null || Array.isArray(given)) {
      throw new InvalidArgumentError(path, expected, given);
    }
    const entries = Object.entries(given).flatMap(([key, entry]) => {
      if (keys !== undefined && !keys.isValid(key)) throw new InvalidArgumentError(path, expected, key);
      return entry === undefined ? [] : [[key, value.resolve(entry, `${path}.${key}`, where)]];
    });
    return Object.freeze(Object.fromEntries(entries));
  });
}

function nested<R extends OptionRules>(
  declaration: OptionsResolver<R>,
  settings: { readonly optional: true },
): OptionRule<OptionsInput<R>, ResolvedOptions<R> | undefined>;
function nested<R extends OptionRules>(
  declaration: OptionsResolver<R>,
): OptionRule<OptionsInput<R>, ResolvedOptions<R>>;
/**
 * A nested options record, checked by its own declaration under this option's path. Absent, it resolves
 * to its defaults — or, with `{ optional: true }`, to undefined (a part that is off unless configured).
 */
function nested<R extends OptionRules>(
  declaration: OptionsResolver<R>,
  settings: { readonly optional?: boolean } = {},
): OptionRule<OptionsInput<R>, ResolvedOptions<R> | undefined> {
  return Object.freeze({
    expected: 'an object',
    required: false as const,
    fallback: (path: string, where: string) =>
      settings.optional === true ? undefined : declaration.resolve({}, { where, path }),
    resolve: (value: unknown, path: string, where: string) => declaration.resolve(value, { where, path }),
  });
}

/**
 * The same rule, but `false` is accepted too (a part turned off, a limit switched off); `{ default: false }`
 * makes false the default.
 */
function orFalse<Input, Output>(
  rule: OptionRule<Input, Output>,
  settings: WithDefault<false>,
): DefaultedRule<Input | false, Exclude<Output, undefined> | false>;
function orFalse<Input, Output>(
  rule: DefaultedRule<Input, Output>,
): DefaultedRule<Input | false, Output | false>;
function orFalse<Input, Output>(rule: OptionRule<Input, Output>): OptionRule<Input | false, Output | false>;
function orFalse(
  rule: OptionRule<unknown, unknown>,
  settings: RuleSettings<false> = {},
): OptionRule<unknown, unknown> {
  const expected = `${rule.expected}, or false`;
  const offByDefault = settings.default === false;
  return Object.freeze({
    ...rule,
    ...(offByDefault ? { defaultValue: false, fallback: () => false } : {}),
    expected,
    resolve(value: unknown, path: string, where: string) {
      if (value === false) return false;
      try {
        return rule.resolve(value, path, where);
      } catch (error) {
        // The value itself was refused (not a part of it): say that false would do too.
        const whole = ErrandError.hasCode(error, 'INVALID_ARGUMENT') && error.context.field === path;
        throw whole ? new InvalidArgumentError(path, expected, value) : error;
      }
    },
  });
}

/**
 * The same rule, its resolved value (and its fallback) converted by `convert`, which may throw naming
 * `path` (an index built from a list that refuses duplicates).
 */
function transform<Input, Output, Converted>(
  rule: OptionRule<Input, Output>,
  convert: (value: Output, path: string) => Converted,
): OptionRule<Input, Converted> {
  return Object.freeze({
    expected: rule.expected,
    required: false as const,
    ...(rule.bound === undefined ? {} : { bound: rule.bound }),
    fallback: (path: string, where: string) => convert(rule.fallback(path, where), path),
    resolve: (value: unknown, path: string, where: string) => convert(rule.resolve(value, path, where), path),
  });
}

/** The same rule, but the option must be given (its input type loses the `?`). */
function required<Input, Output>(
  rule: OptionRule<Input, Output, boolean>,
): OptionRule<Input, Exclude<Output, undefined>, true> {
  return Object.freeze({ ...rule, required: true as const }) as OptionRule<
    Input,
    Exclude<Output, undefined>,
    true
  >;
}

/** The rule builders of `defineOptions`. */
export const option = Object.freeze({
  integer,
  boolean,
  string,
  oneOf,
  func,
  shaped,
  logger,
  clock,
  custom,
  list,
  record,
  nested,
  orFalse,
  transform,
  required,
});
