/**
 * One declaration per options record. `defineOptions(where, rules)` yields the record's keys, its defaults,
 * its input and resolved types and one `resolve` step that rejects unknown keys (`UNKNOWN_OPTION`, with a
 * "did you mean"), checks every value with one wording per bound and fills in the defaults — nested records
 * included, in one pass, each problem reported under its full path (`bash.executor.killGraceMs`).
 */
import { InvalidArgumentError } from './errors.js';
import { rejectUnknownOptions } from './option-keys.js';

/** How one option is checked and resolved. Build rules with `option.*`; the type parameters are phantoms. */
export interface OptionRule<Input, Output, IsRequired extends boolean = false> {
  /** What a valid value is, as messages say it: "a positive integer". */
  readonly expected: string;
  readonly required: IsRequired;
  /** The resolved value of an absent (undefined) option. */
  readonly fallback: () => Output;
  /** The default a reader can document, when there is a fixed one. */
  readonly defaultValue?: Output;
  /** Resolves a given value; throws `INVALID_ARGUMENT` naming `path` when the value is not valid. */
  resolve(value: unknown, path: string, where: string): Output;
  /** Phantom: the type a caller may pass. */
  readonly __input?: Input;
}

// biome-ignore lint/suspicious/noExplicitAny: a rule of any input and output type
export type AnyOptionRule = OptionRule<any, any, boolean>;
export type OptionRules = Readonly<Record<string, AnyOptionRule>>;

type InputOfRule<R> = R extends OptionRule<infer Input, unknown, boolean> ? Input : never;
type OutputOfRule<R> = R extends OptionRule<unknown, infer Output, boolean> ? Output : never;
type RequiredKeys<R extends OptionRules> = {
  [K in keyof R]: R[K] extends OptionRule<unknown, unknown, true> ? K : never;
}[keyof R];

/** What a caller passes: every option optional except those declared `required`. */
export type OptionsInput<R extends OptionRules> = {
  readonly [K in keyof R]?: InputOfRule<R[K]>;
} & { readonly [K in RequiredKeys<R>]-?: InputOfRule<R[K]> };

/** What `resolve` returns: every option present, defaults filled in. */
export type ResolvedOptions<R extends OptionRules> = { readonly [K in keyof R]: OutputOfRule<R[K]> };

export interface DefineOptionsSettings<R extends OptionRules> {
  /** Old names mapped to their new ones, suggested whatever their spelling distance. */
  readonly renamed?: Readonly<Record<string, string>>;
  /** Checks that span several options, on the resolved record; throw `InvalidArgumentError` at `path`. */
  readonly check?: (resolved: ResolvedOptions<R>, path: (key: keyof R & string) => string) => void;
}

export interface ResolveAt {
  /** The function (or options) the record is handed to, as messages name it. Default: the declaration's. */
  readonly where?: string;
  /** Where the record sits inside the caller's options (`bash.executor`). */
  readonly path?: string;
}

/** The declaration of one options record. */
export interface OptionsDeclaration<R extends OptionRules> {
  /** The function the record is handed to, as messages name it: `createTaskTools`. */
  readonly where: string;
  readonly rules: R;
  /** Every key, in declaration order; any other key is rejected with `UNKNOWN_OPTION`. */
  readonly keys: readonly (keyof R & string)[];
  /** The fixed defaults, by key (options whose default depends on others are left out). */
  readonly defaults: Readonly<Partial<ResolvedOptions<R>>>;
  /** Checks `input` whole (unknown keys, values, cross-option rules) and fills in the defaults. */
  resolve(input: unknown, at?: ResolveAt): ResolvedOptions<R>;
  /** The same record without `keys` (a host that sets them itself accepts the rest from its caller). */
  omit<K extends keyof R & string>(...keys: K[]): OptionsDeclaration<Omit<R, K>>;
}

/** Declares an options record. Resolution runs in declaration order, so a `check` sees every value. */
export function defineOptions<R extends OptionRules>(
  where: string,
  rules: R,
  settings: DefineOptionsSettings<R> = {},
): OptionsDeclaration<R> {
  const keys = Object.freeze(Object.keys(rules)) as readonly (keyof R & string)[];
  const defaults: Record<string, unknown> = {};
  for (const key of keys) {
    const rule = rules[key] as AnyOptionRule;
    if ('defaultValue' in rule) defaults[key] = rule.defaultValue;
  }
  const declaration: OptionsDeclaration<R> = {
    where,
    rules,
    keys,
    defaults: Object.freeze(defaults) as Partial<ResolvedOptions<R>>,
    resolve(input, at = {}) {
      const inWhere = at.where ?? where;
      const join = (key: string) => (at.path === undefined ? key : `${at.path}.${key}`);
      if (input === undefined) input = {};
      if (typeof input !== 'object' || input === null || Array.isArray(input)) {
        throw new InvalidArgumentError(at.path ?? 'options', 'an object', input);
      }
      rejectUnknownOptions(input, keys, {
        where: inWhere,
        ...(at.path === undefined ? {} : { path: at.path }),
        ...(settings.renamed === undefined ? {} : { renamed: settings.renamed }),
      });
      const given = input as Record<string, unknown>;
      const resolved: Record<string, unknown> = {};
      for (const key of keys) {
        const rule = rules[key] as AnyOptionRule;
        const value = given[key];
        if (value === undefined) {
          if (rule.required) throw new InvalidArgumentError(join(key), rule.expected, value);
          resolved[key] = rule.fallback();
        } else {
          resolved[key] = rule.resolve(value, join(key), inWhere);
        }
      }
      const record = resolved as ResolvedOptions<R>;
      settings.check?.(record, join);
      return Object.freeze(record);
    },
    omit(...omitted) {
      const kept: Record<string, AnyOptionRule> = {};
      for (const key of keys) if (!omitted.includes(key as never)) kept[key] = rules[key] as AnyOptionRule;
      // A cross-option check may read an omitted key: the narrowed record keeps only per-option rules.
      return defineOptions(
        where,
        kept as unknown as Omit<R, (typeof omitted)[number]>,
        settings.renamed === undefined ? {} : { renamed: settings.renamed },
      );
    },
  };
  return Object.freeze(declaration);
}

// ------------------------------------------------------------------------------------------------ rules

interface RuleSettings<Output> {
  /** The resolved value when the option is absent. */
  readonly default?: Output;
}

type Resolved<Value, S> = S extends { readonly default: unknown } ? Value : Value | undefined;

function makeRule<Input, Output>(
  expected: string,
  check: (value: unknown) => boolean,
  settings: { readonly default?: unknown },
  convert: (value: unknown) => Output = (value) => value as Output,
): OptionRule<Input, Output> {
  const hasDefault = 'default' in settings && settings.default !== undefined;
  return Object.freeze({
    expected,
    required: false as const,
    fallback: () => settings.default as Output,
    ...(hasDefault ? { defaultValue: settings.default as Output } : {}),
    resolve(value: unknown, path: string) {
      if (!check(value)) throw new InvalidArgumentError(path, expected, value);
      return convert(value);
    },
  });
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
}

function integer<S extends IntegerSettings>(settings: S = {} as S): OptionRule<number, Resolved<number, S>> {
  const { min, max, allowInfinity = false } = settings;
  const range = describeIntegerRange(min, max);
  return makeRule(
    allowInfinity ? `${range} or Infinity` : range,
    (value) => {
      if (allowInfinity && value === Number.POSITIVE_INFINITY) return true;
      return (
        typeof value === 'number' &&
        Number.isSafeInteger(value) &&
        (min === undefined || value >= min) &&
        (max === undefined || value <= max)
      );
    },
    settings,
  );
}

function boolean<S extends RuleSettings<boolean>>(
  settings: S = {} as S,
): OptionRule<boolean, Resolved<boolean, S>> {
  return makeRule('a boolean', (value) => typeof value === 'boolean', settings);
}

export interface StringSettings extends RuleSettings<string> {
  /** Refuses the empty string. Default true. */
  readonly nonEmpty?: boolean;
}

function string<S extends StringSettings>(settings: S = {} as S): OptionRule<string, Resolved<string, S>> {
  const nonEmpty = settings.nonEmpty ?? true;
  return makeRule(
    nonEmpty ? 'a non-empty string' : 'a string',
    (value) => typeof value === 'string' && (!nonEmpty || value !== ''),
    settings,
  );
}

function oneOf<
  const Values extends readonly (string | number | boolean)[],
  S extends RuleSettings<Values[number]>,
>(values: Values, settings: S = {} as S): OptionRule<Values[number], Resolved<Values[number], S>> {
  const expected = values
    .map((value) => JSON.stringify(value))
    .join(', ')
    .replace(/, ([^,]*)$/, ' or $1');
  return makeRule(expected, (value) => values.includes(value as Values[number]), settings);
}

// biome-ignore lint/suspicious/noExplicitAny: any function signature
type AnyFunction = (...args: any[]) => unknown;

function func<F extends AnyFunction, S extends RuleSettings<F> = RuleSettings<F>>(
  settings: S = {} as S,
): OptionRule<F, Resolved<F, S>> {
  return makeRule('a function', (value) => typeof value === 'function', settings);
}

/**
 * An object recognised by the functions it must have (a logger, a clock, a task service): `expected` names it
 * in messages ("a TaskService"), `methods` are checked to be functions.
 */
function shaped<T extends object, S extends RuleSettings<T> = RuleSettings<T>>(
  expected: string,
  methods: readonly string[],
  settings: S = {} as S,
): OptionRule<T, Resolved<T, S>> {
  return makeRule(
    expected,
    (value) =>
      typeof value === 'object' &&
      value !== null &&
      methods.every((method) => typeof (value as Record<string, unknown>)[method] === 'function'),
    settings,
  );
}

/** A value checked by `isValid`, passed through unchanged (or converted by `convert`). */
function custom<Input, Output = Input, S extends RuleSettings<Output> = RuleSettings<Output>>(
  expected: string,
  isValid: (value: unknown) => boolean,
  settings: S = {} as S,
  convert?: (value: Input) => Output,
): OptionRule<Input, Resolved<Output, S>> {
  return makeRule(
    expected,
    isValid,
    settings,
    convert as ((value: unknown) => Resolved<Output, S>) | undefined,
  );
}

/** A nested options record, resolved by its own declaration under this key's path; absent resolves to `{}`. */
function nested<R extends OptionRules>(
  declaration: OptionsDeclaration<R>,
): OptionRule<OptionsInput<R>, ResolvedOptions<R>> {
  return Object.freeze({
    expected: 'an object',
    required: false as const,
    fallback: () => declaration.resolve({}),
    resolve: (value: unknown, path: string, where: string) => declaration.resolve(value, { where, path }),
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
  custom,
  nested,
  required,
});
