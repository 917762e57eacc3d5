/**
 * The types of the options kit: a rule (how one option is checked and resolved), and what a declaration of
 * rules makes of them — what a caller passes, what `resolve` returns, the fixed defaults.
 */

/** Another option of the same record that bounds this one (`defaultWaitMs` no greater than `maxWaitMs`). */
export interface OptionBound {
  readonly key: string;
  readonly side: 'atMost' | 'atLeast';
}

/** How one option is checked and resolved. Build rules with `option.*`; the type parameters are phantoms. */
export interface OptionRule<Input, Output, IsRequired extends boolean = false> {
  /** What a valid value is, as messages say it: "a positive integer". */
  readonly expected: string;
  readonly required: IsRequired;
  /** The resolved value of an absent (undefined) option, at `path` of a record handed to `where`. */
  fallback(path: string, where: string): Output;
  /** The default a reader can document, when there is a fixed one. */
  readonly defaultValue?: Output;
  /** A given value must keep to the bound; a defaulted one is clamped to it. */
  readonly bound?: OptionBound;
  /** Resolves a given value; throws `INVALID_ARGUMENT` naming `path` when the value is not valid. */
  resolve(value: unknown, path: string, where: string): Output;
  /** Phantom: the type a caller may pass. */
  readonly __input?: Input;
}

/** A rule with a fixed default: its declaration lists it in `defaults`. */
export interface DefaultedRule<Input, Output> extends OptionRule<Input, Output> {
  readonly defaultValue: Output;
}

// biome-ignore lint/suspicious/noExplicitAny: a rule of any input and output type
export type AnyOptionRule = OptionRule<any, any, boolean>;
export type OptionRules = Readonly<Record<string, AnyOptionRule>>;

type InputOfRule<R> = R extends OptionRule<infer Input, unknown, boolean> ? Input : never;
type OutputOfRule<R> = R extends OptionRule<unknown, infer Output, boolean> ? Output : never;
type RequiredKeys<R extends OptionRules> = {
  [K in keyof R]: R[K] extends OptionRule<unknown, unknown, true> ? K : never;
}[keyof R];
type DefaultedKeys<R extends OptionRules> = {
  [K in keyof R]: R[K] extends { readonly defaultValue: unknown } ? K : never;
}[keyof R];

/** What a caller passes: every option optional except those declared `required`. */
export type OptionsInput<R extends OptionRules> = {
  readonly [K in keyof R]?: InputOfRule<R[K]>;
} & { readonly [K in RequiredKeys<R>]-?: InputOfRule<R[K]> };

/** What `resolve` returns: every option present, defaults filled in. */
export type ResolvedOptions<R extends OptionRules> = { readonly [K in keyof R]: OutputOfRule<R[K]> };

/** The fixed defaults of a record, by key. */
export type OptionDefaults<R extends OptionRules> = { readonly [K in DefaultedKeys<R>]: OutputOfRule<R[K]> };

export interface ResolveAt {
  /** The function (or options) the record is handed to, as messages name it. Default: the declaration's. */
  readonly where?: string;
  /** Where the record sits inside the caller's options (`bash.executor`). */
  readonly path?: string;
}

/** What resolves an options record: a declaration (`defineOptions`), as `option.nested` takes it. */
export interface OptionsResolver<R extends OptionRules> {
  /** Checks `input` whole (unknown keys, values, bounds, cross-option rules) and fills in the defaults. */
  resolve(input: unknown, at?: ResolveAt): ResolvedOptions<R>;
}
