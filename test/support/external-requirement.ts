/**
 * An external program a test suite needs (a browser, `redis-server`, `bwrap`), found the way a person
 * has it installed: a variable naming it, else the first of its usual commands on PATH. Found: the suite
 * runs. Missing: the suite is skipped with one line on stderr saying how to install it. Required (the
 * variable `ERRAND_REQUIRE_EXTERNALS=1`, which `.ci/run` sets): missing is an error, so a skip never
 * hides in CI. A variable that names something that is not an executable is always an error: a person
 * asked for that program.
 *
 * Plain Node (no vitest import), so scripts can use it too.
 */
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';

/** The variable that turns a missing requirement from a skip into an error. */
export const REQUIRE_EXTERNALS_VARIABLE = 'ERRAND_REQUIRE_EXTERNALS';

export interface ExternalRequirement {
  /** What is needed, for people: `a Chromium-based browser`. */
  readonly name: string;
  /** What the suites do with it, for the skip line: `the dashboard's browser tests`. */
  readonly neededBy: string;
  /** Variables that may name the executable (a path, or a command on PATH), first wins. */
  readonly variables: readonly string[];
  /** Commands looked up on PATH, in order, when no variable is set. */
  readonly commands: readonly string[];
  /** How to install it, one short phrase: `apt-get install chromium`. */
  readonly install: string;
}

export type ExternalResolution =
  | { readonly found: true; readonly path: string; readonly via: string }
  | { readonly found: false; readonly line: string };

/** A missing requirement where one is required, or a variable naming something that cannot run. */
export class ExternalRequirementError extends Error {
  readonly code = 'EXTERNAL_REQUIREMENT_MISSING';
  constructor(message: string) {
    super(message);
    this.name = 'ExternalRequirementError';
  }
}

export interface ResolveOptions {
  /** Default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Where the one skip line goes. Default: stderr. */
  readonly write?: (line: string) => void;
}

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The executable `command` names: a path (absolute or with a slash) as is, else the first match on PATH. */
export function findExecutable(
  command: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
): string | undefined {
  if (command.includes('/')) {
    const path = isAbsolute(command) ? command : resolve(command);
    return isExecutableFile(path) ? path : undefined;
  }
  for (const directory of (env.PATH ?? '').split(delimiter)) {
    if (directory === '') continue;
    const path = join(directory, command);
    if (isExecutableFile(path)) return path;
  }
  return undefined;
}

/** Whether a missing requirement is an error here. */
export function externalsRequired(env: Readonly<Record<string, string | undefined>> = process.env): boolean {
  const value = env[REQUIRE_EXTERNALS_VARIABLE];
  return value !== undefined && value !== '' && value !== '0' && value.toLowerCase() !== 'false';
}

/** Finds the requirement without side effects: where it is, or the one line that explains its absence. */
export function locateExternal(
  requirement: ExternalRequirement,
  env: Readonly<Record<string, string | undefined>> = process.env,
): ExternalResolution {
  for (const variable of requirement.variables) {
    const value = env[variable];
    if (value === undefined || value === '') continue;
    const path = findExecutable(value, env);
    if (path === undefined) {
      throw new ExternalRequirementError(
        `${variable}=${JSON.stringify(value)} does not name an executable file; fix it or unset it (${requirement.neededBy} need ${requirement.name})`,
      );
    }
    return { found: true, path, via: variable };
  }
  for (const command of requirement.commands) {
    const path = findExecutable(command, env);
    if (path !== undefined) return { found: true, path, via: command };
  }
  const looked = [...requirement.variables.map((variable) => `$${variable}`), ...requirement.commands];
  return {
    found: false,
    line: `Skipping ${requirement.neededBy}: no ${requirement.name} found (looked for ${looked.join(', ')}). Install one (${requirement.install}) or set ${requirement.variables[0] ?? 'PATH'} to its path.`,
  };
}

/**
 * Resolves a requirement for a suite: the path when found; when missing, writes the one skip line and
 * answers undefined — or throws `ExternalRequirementError` where externals are required.
 */
export function requireExternal(
  requirement: ExternalRequirement,
  options: ResolveOptions = {},
): string | undefined {
  const env = options.env ?? process.env;
  const resolution = locateExternal(requirement, env);
  if (resolution.found) return resolution.path;
  if (externalsRequired(env)) {
    throw new ExternalRequirementError(
      `${resolution.line.replace(/^Skipping /, 'Cannot run ')} ${REQUIRE_EXTERNALS_VARIABLE} is set, so this is an error, not a skip.`,
    );
  }
  (options.write ?? ((line: string) => process.stderr.write(`${line}\n`)))(resolution.line);
  return undefined;
}
