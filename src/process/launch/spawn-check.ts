/**
 * Checks, before forking, that a pty program can start: node-pty forks first and reports a bad directory
 * or a missing program only as the child's exit code 1, which is indistinguishable from a program that
 * failed. Checking first turns both into a clear spawn error.
 */
import { accessSync, constants as fsConstants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';

/** Returns the problem, or undefined when spawning can proceed. */
export function checkSpawnable(file: string, cwd: string, path: string | undefined): string | undefined {
  try {
    if (!statSync(cwd).isDirectory())
      return `The working directory ${JSON.stringify(cwd)} is not a directory`;
    accessSync(cwd, fsConstants.X_OK);
  } catch (error) {
    return `The working directory ${JSON.stringify(cwd)} cannot be used: ${codeOf(error)}`;
  }
  if (file.includes('/')) {
    const candidate = isAbsolute(file) ? file : resolve(cwd, file);
    return isExecutableFile(candidate)
      ? undefined
      : `The program ${JSON.stringify(file)} is not an executable file`;
  }
  return findOnPath(file, path ?? DEFAULT_SEARCH_PATH, { cwd }) === undefined
    ? `The program ${JSON.stringify(file)} was not found on PATH`
    : undefined;
}

/** The search path `execvp` uses when PATH is unset. */
const DEFAULT_SEARCH_PATH = '/usr/local/bin:/usr/bin:/bin';

/**
 * The first executable file named `program` in the directories of `searchPath`, as `execvp` finds it:
 * relative entries (an empty one is `.`) against `cwd`, or skipped with `absoluteOnly` (for a program
 * whose path matters, like the sandbox's bwrap). Undefined when there is none.
 */
export function findOnPath(
  program: string,
  searchPath: string,
  options: { readonly cwd?: string; readonly absoluteOnly?: boolean } = {},
): string | undefined {
  for (const directory of searchPath.split(delimiter)) {
    if (options.absoluteOnly === true && !isAbsolute(directory)) continue;
    const candidate = join(resolve(options.cwd ?? process.cwd(), directory || '.'), program);
    if (isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}

/** Whether `path` is a regular file this process may execute. */
export function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  return error instanceof Error ? error.message : String(error);
}
