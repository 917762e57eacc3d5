/**
 * A small flag parser for `errand` commands: `--name value`, `--name=value` and boolean `--name`, each
 * at most once; no positional arguments. Mistakes throw a `UsageError` naming the flag and the value,
 * which the command reports with exit code 2.
 */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { describeIntegerRange } from '../tasks/option-rules.js';

/**
 * `path`: resolved against the working directory, need not exist; `directory`: must exist; `count`: a
 * positive integer no greater than 1000000; `integer`: a non-negative integer.
 */
export type FlagType = 'boolean' | 'string' | 'port' | 'count' | 'integer' | 'path' | 'directory';

/** The largest `count` flag: beyond it a count is a typo, not a bound anyone means. */
const MAX_COUNT = 1_000_000;

export interface FlagSpec {
  readonly type: FlagType;
  /** One line for the help text. */
  readonly description: string;
  /** The value's placeholder in the help text, e.g. `<dir>`. */
  readonly placeholder?: string;
}

export type FlagSpecs = Readonly<Record<string, FlagSpec>>;

export type FlagValue = string | number | boolean;

/** A mistake on the command line: the message names the flag and the value; exit code 2. */
export class UsageError extends Error {
  readonly code = 'CLI_USAGE';
  readonly exitCode = 2;
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export interface ParsedFlags {
  readonly values: Readonly<Record<string, FlagValue>>;
  /** `--help` or `-h` was given. */
  readonly help: boolean;
}

/** Parses `argv` (the arguments after the command name) against `specs`. Directories resolve against `cwd`. */
export function parseFlags(
  argv: readonly string[],
  specs: FlagSpecs,
  cwd: string = process.cwd(),
): ParsedFlags {
  const values: Record<string, FlagValue> = {};
  let help = false;
  for (let index = 0; index < argv.length; index += 1) {
    const argument = argv[index] as string;
    if (argument === '--help' || argument === '-h') {
      help = true;
      continue;
    }
    if (!argument.startsWith('--') || argument === '--') {
      throw new UsageError(`unexpected argument ${JSON.stringify(argument)}`);
    }
    const equals = argument.indexOf('=');
    const name = argument.slice(2, equals < 0 ? undefined : equals);
    const spec = Object.hasOwn(specs, name) ? specs[name] : undefined;
    if (!spec) throw new UsageError(`unknown option \`--${name}\``);
    if (Object.hasOwn(values, name)) throw new UsageError(`\`--${name}\` was given more than once`);
    if (spec.type === 'boolean') {
      if (equals >= 0)
        throw new UsageError(
          `\`--${name}\` takes no value, got ${JSON.stringify(argument.slice(equals + 1))}`,
        );
      values[name] = true;
      continue;
    }
    let raw: string | undefined;
    if (equals >= 0) raw = argument.slice(equals + 1);
    else {
      const next = argv[index + 1];
      if (next === undefined || next.startsWith('--')) {
        throw new UsageError(`\`--${name}\` needs a value${spec.placeholder ? ` ${spec.placeholder}` : ''}`);
      }
      raw = next;
      index += 1;
    }
    values[name] = convert(name, spec.type, raw, cwd);
  }
  return { values, help };
}

function convert(name: string, type: Exclude<FlagType, 'boolean'>, raw: string, cwd: string): FlagValue {
  if (raw === '') throw new UsageError(`\`--${name}\` needs a non-empty value`);
  switch (type) {
    case 'string':
      return raw;
    case 'integer': {
      const value = /^\d{1,15}$/.test(raw) ? Number(raw) : Number.NaN;
      if (!Number.isSafeInteger(value)) {
        throw new UsageError(
          `Expected \`--${name}\` to be a non-negative integer, got ${JSON.stringify(raw)}`,
        );
      }
      return value;
    }
    case 'path':
      return resolve(cwd, raw);
    case 'port': {
      const port = /^\d{1,5}$/.test(raw) ? Number(raw) : Number.NaN;
      if (!Number.isInteger(port) || port > 65_535) {
        throw new UsageError(
          `Expected \`--${name}\` to be a port from 0 to 65535, got ${JSON.stringify(raw)}`,
        );
      }
      return port;
    }
    case 'count': {
      const count = /^\d{1,7}$/.test(raw) ? Number(raw) : Number.NaN;
      if (!Number.isInteger(count) || count < 1 || count > MAX_COUNT) {
        throw new UsageError(
          `Expected \`--${name}\` to be ${describeIntegerRange(1, MAX_COUNT)}, got ${JSON.stringify(raw)}`,
        );
      }
      return count;
    }
    case 'directory': {
      const path = resolve(cwd, raw);
      let isDirectory = false;
      try {
        isDirectory = statSync(path).isDirectory();
      } catch {
        throw new UsageError(
          `Expected \`--${name}\` to be an existing directory, got ${JSON.stringify(raw)} (not found)`,
        );
      }
      if (!isDirectory) {
        throw new UsageError(
          `Expected \`--${name}\` to be a directory, got ${JSON.stringify(raw)} (not a directory)`,
        );
      }
      return path;
    }
  }
}

/** The help lines of `specs`: `  --port <n>   the dashboard's port`. */
export function describeFlags(specs: FlagSpecs): string {
  const entries = Object.entries(specs).map(([name, spec]) => [
    `--${name}${spec.placeholder ? ` ${spec.placeholder}` : ''}`,
    spec.description,
  ]);
  const width = Math.max(...entries.map(([flag]) => (flag as string).length), '--help'.length);
  return [...entries, ['--help', 'show this help']]
    .map(([flag, description]) => `  ${(flag as string).padEnd(width)}  ${description}`)
    .join('\n');
}
