/**
 * Where the session store lives: `$ERRAND_HOME`, default `~/.errand`. The directory is created private
 * (0700) and the database file is created owner-only (0600) before SQLite opens it; SQLite gives its
 * -wal and -shm files the database file's permissions.
 */
import { chmodSync, closeSync, mkdirSync, openSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { InvalidArgumentError } from '../tasks/errors.js';

export const DATABASE_FILE_NAME = 'errand.sqlite';
export const DIRECTORY_MODE = 0o700;
export const DATABASE_FILE_MODE = 0o600;

export interface HomeEnvironment {
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly homedir?: () => string;
}

/** `$ERRAND_HOME` if set and non-empty (resolved to an absolute path), else `~/.errand`. */
export function resolveErrandHome(environment: HomeEnvironment = {}): string {
  const env = environment.env ?? process.env;
  const configured = env.ERRAND_HOME;
  if (configured !== undefined && configured !== '') return resolve(configured);
  const home = (environment.homedir ?? homedir)();
  if (!isAbsolute(home)) {
    throw new InvalidArgumentError('homedir()', 'an absolute path (or set ERRAND_HOME)', home);
  }
  return join(home, '.errand');
}

/** Creates `directory` (and missing parents) with mode 0700. An existing directory is left as it is. */
export function ensurePrivateDirectory(directory: string): void {
  const created = mkdirSync(directory, { recursive: true, mode: DIRECTORY_MODE });
  // The umask may have removed bits we need (a umask of 0200 would leave it unwritable); set it exactly.
  if (created !== undefined) chmodSync(directory, DIRECTORY_MODE);
}

/** Creates the database file with mode 0600 if it does not exist yet, and its directory with 0700. */
export function ensureDatabaseFile(file: string): void {
  ensurePrivateDirectory(dirname(file));
  let descriptor: number;
  try {
    descriptor = openSync(file, 'wx', DATABASE_FILE_MODE);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return;
    throw error;
  }
  try {
    chmodSync(file, DATABASE_FILE_MODE);
  } finally {
    closeSync(descriptor);
  }
}
