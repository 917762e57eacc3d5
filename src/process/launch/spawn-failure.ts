/** Says what kept a command from starting, looking at the disk only once a spawn has failed. */
import { statSync } from 'node:fs';

export function errnoOf(error: unknown): string | null {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' ? code : null;
}

/** Names what was wrong: the working directory (missing, not a directory) or the shell. */
export function diagnoseSpawnFailure(cwd: string, shell: string, error: unknown): string {
  const directory = JSON.stringify(cwd);
  try {
    if (!statSync(cwd).isDirectory()) return `the working directory ${directory} is not a directory`;
  } catch (problem) {
    return errnoOf(problem) === 'ENOENT'
      ? `the working directory ${directory} does not exist`
      : `the working directory ${directory} cannot be used`;
  }
  const name = JSON.stringify(shell);
  return errnoOf(error) === 'ENOENT' ? `the shell ${name} was not found` : `could not start ${name}`;
}
