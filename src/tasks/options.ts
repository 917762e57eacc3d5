/**
 * One declaration per options record. `defineOptions(where, rules)` yields the record's keys, its defaults,
 * its input and resolved types and one `resolve` step that rejects unknown keys (`UNKNOWN_OPTION`, with a
 * "did you mean"), checks every value with one wording per bound and fills in the defaults — nested records
 * included, in one pass, each problem reported under its full path (`bash.executor.killGraceMs`). The rules
 * themselves are built with `option.*` (`option-rules.ts`).
 */
import { InvalidArgumentError } from './errors.js';
import { rejectUnknownOptions } from './option-keys.js';
import type {
  AnyOptionRule,
  OptionBound,
  OptionDefaults,
  OptionRules,
  OptionsResolver,
  ResolvedOptions,
} from './option-types.js';

export interface DefineOptionsSettings<R extends OptionRules> {
  /** Old names mapped to their new ones, suggested whatever their spelling distance. */
  readonly renamed?: Readonly<Record<string, string>>;
  /**
   * Checks that span several options (beyond `atMost` / `atLeast` bounds), on the resolved record; throw
   * `InvalidArgumentError` at `path(key)`. A record narrowed with `omit` drops it.
   */
  readonly check?: (resolved: ResolvedOptions<R>, path: (key: keyof R & string) => string) => void;
}

/** The declaration of one options record. */
export interface OptionsDeclaration<R extends OptionRules> extends OptionsResolver<R> {
  /** The function the record is handed to, as messages name it: `createTaskTools`. */
  readonly where: string;
  readonly rules: R;
  /** Every key, in declaration order; any other key is rejected with `UNKNOWN_OPTION`. */
  readonly keys: readonly (keyof R & string)[];
  /** The fixed defaults, by key (options whose default is computed are left out). */
  readonly defaults: OptionDefaults<R>;
  /** Old names mapped to their new ones (kept by `omit`). */
  readonly renamed: Readonly<Record<string, string>>;
  /** The same record without `keys` (a host that sets them itself accepts the rest from its caller). */
  omit<K extends keyof R & string>(...keys: K[]): OptionsDeclaration<Omit<R, K>>;
}

/**
 * Declares an options record. Values resolve in declaration order, except that an option bounded by
 * another resolves after the others, so its bound is known; a `check` sees every value.
 */
export function defineOptions<R extends OptionRules>(
  where: string,
  rules: R,
  settings: DefineOptionsSettings<R> = {},
): OptionsDeclaration<R> {
  const keys = Object.freeze(Object.keys(rules)) as readonly (keyof R & string)[];
  const ruleOf = (key: string) => rules[key] as AnyOptionRule;
  const defaults: Record<string, unknown> = {};
  for (const key of keys) {
    const rule = ruleOf(key);
    if ('defaultValue' in rule) defaults[key] = rule.defaultValue;
    if (rule.bound !== undefined) checkBound(where, key, rule.bound, rules, keys);
  }
  const order = [
    ...keys.filter((key) => ruleOf(key).bound === undefined),
    ...keys.filter((key) => ruleOf(key).bound !== undefined),
  ];
  const renamed = Object.freeze({ ...settings.renamed });
  const declaration: OptionsDeclaration<R> = {
    where,
    rules,
    keys,
    defaults: Object.freeze(defaults) as OptionDefaults<R>,
    renamed,
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
        renamed,
      });
      const given = input as Record<string, unknown>;
      const values: Record<string, unknown> = {};
      for (const key of order) {
        const rule = ruleOf(key);
        const path = join(key);
        const value = given[key];
        if (value === undefined && rule.required) throw new InvalidArgumentError(path, rule.expected, value);
        const resolved =
          value === undefined ? rule.fallback(path, inWhere) : rule.resolve(value, path, inWhere);
        values[key] = keepToBound(rule.bound, resolved, value !== undefined, values, path, join);
      }
      const record = Object.fromEntries(keys.map((key) => [key, values[key]])) as ResolvedOptions<R>;
      settings.check?.(record, join);
      return Object.freeze(record);
    },
    omit(...omitted) {
      const kept: Record<string, AnyOptionRule> = {};
      for (const key of keys) if (!omitted.includes(key as never)) kept[key] = ruleOf(key);
      // A cross-option check may read an omitted key: the narrowed record keeps only per-option rules.
      return defineOptions(where, kept as unknown as Omit<R, (typeof omitted)[number]>, { renamed });
    },
  };
  return Object.freeze(declaration);
}

/** A bound names another option of the record, resolved before it (a programming error otherwise). */
function checkBound(
  where: string,
  key: string,
  bound: OptionBound,
  rules: OptionRules,
  keys: readonly string[],
): void {
  const target = rules[bound.key];
  if (target === undefined || (target.bound !== undefined && keys.indexOf(bound.key) > keys.indexOf(key))) {
    throw new Error(`${where}: option ${key} is bounded by ${bound.key}, which is not an earlier option`);
  }
}

/** Clamps a defaulted value to its bound, and refuses a given one beyond it. */
function keepToBound(
  bound: OptionBound | undefined,
  value: unknown,
  given: boolean,
  values: Readonly<Record<string, unknown>>,
  path: string,
  join: (key: string) => string,
): unknown {
  if (bound === undefined) return value;
  const limit = values[bound.key];
  if (typeof value !== 'number' || typeof limit !== 'number') return value;
  const atMost = bound.side === 'atMost';
  if (atMost ? value <= limit : value >= limit) return value;
  if (!given) return limit;
  const relation = atMost ? 'no greater than' : 'no less than';
  throw new InvalidArgumentError(path, `${relation} \`${join(bound.key)}\` (${limit})`, value);
}

export { option } from './option-rules.js';
export type {
  DefaultedRule,
  OptionDefaults,
  OptionRule,
  OptionsInput,
  ResolvedOptions,
} from './option-types.js';
