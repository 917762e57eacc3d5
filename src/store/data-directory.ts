/**
 * Where the session store lives: `$ERRAND_HOME`, default `~/.errand`. The directory is created private
 * (0700) and the database file is created owner-only (0600) before SQLite opens it; SQLite gives its
 * -wal and -shm files the database file's permissions.
 */
import {
  accessSync,
  chmodSync,
  closeSync,
  constants,
  linkSync,
  mkdirSync,
  openSync,
  readSync,
  statSync,
  unlinkSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { ErrandError, InvalidArgumentError } from '../tasks/errors.js';

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

/** What an errno means to a person who has to fix it. */
const ERRNO_WORDS: Readonly<Record<string, string>> = {
  EROFS: 'the file system is read-only',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'the disk quota is exhausted',
  ENOTDIR: 'a part of the path is a file, not a directory',
  EEXIST: 'it exists and is not a directory',
  ENAMETOOLONG: 'the path is too long',
  ELOOP: 'the path has too many symbolic links',
  EIO: 'the disk reported an I/O error',
};

/**
 * The data directory cannot be created or written: read-only, no permission, no space, a file in the
 * way. The message names the directory and the cause the file system gave, for a person to fix.
 */
export class DataDirectoryError extends ErrandError {
  constructor(directory: string, errno: string | undefined, cause?: unknown) {
    const words = (errno && ERRNO_WORDS[errno]) ?? (cause instanceof Error ? cause.message : 'unknown cause');
    super(
      'DATA_DIRECTORY_UNAVAILABLE',
      'system',
      `Cannot use the data directory ${directory}: ${words}${errno ? ` (${errno})` : ''}`,
      { cause, context: { directory, ...(errno ? { errno } : {}) } },
    );
  }
}

function errnoOf(error: unknown): string | undefined {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * Why `directory` cannot be created: the first of its missing parts that cannot be made, made one at a
 * time, so the error is the file system's own (a recursive mkdir can report ENOENT for a read-only disk).
 */
function diagnoseMkdir(directory: string, error: unknown): DataDirectoryError {
  let existing = directory;
  const missing: string[] = [];
  for (;;) {
    try {
      statSync(existing);
      break;
    } catch (statError) {
      if (errnoOf(statError) !== 'ENOENT')
        return new DataDirectoryError(directory, errnoOf(statError), statError);
      const parent = dirname(existing);
      if (parent === existing) break;
      missing.unshift(existing);
      existing = parent;
    }
  }
  for (const part of missing) {
    try {
      mkdirSync(part, { mode: DIRECTORY_MODE });
    } catch (partError) {
      return new DataDirectoryError(directory, errnoOf(partError), partError);
    }
  }
  return new DataDirectoryError(directory, errnoOf(error), error);
}

/**
 * Creates `directory` (and missing parents) with mode 0700 and checks it can be written. An existing
 * directory is left as it is. Throws `DATA_DIRECTORY_UNAVAILABLE` naming the directory and the cause.
 */
export function ensurePrivateDirectory(directory: string): void {
  let created: string | undefined;
  try {
    created = mkdirSync(directory, { recursive: true, mode: DIRECTORY_MODE });
  } catch (error) {
    throw diagnoseMkdir(directory, error);
  }
  try {
    // The umask may have removed bits we need (a umask of 0200 would leave it unwritable); set it exactly.
    if (created !== undefined) chmodSync(directory, DIRECTORY_MODE);
    accessSync(directory, constants.W_OK | constants.X_OK);
  } catch (error) {
    throw new DataDirectoryError(directory, errnoOf(error), error);
  }
}

/** The first 16 bytes of every SQLite database file. */
const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');

/**
 * Creates the database file with mode 0600 if it does not exist yet, and its directory with 0700; returns
 * whether this call created it. A new file is made complete before it gets its name: created under a
 * temporary name, given its SQLite header by `initialize`, then linked to `file` (a link never replaces:
 * if another process created it meanwhile, that one is used). So a database file Errand made is never
 * empty, and an empty or foreign file at that name was not made by Errand.
 */
export function ensureDatabaseFile(file: string, initialize?: (path: string) => void): boolean {
  ensurePrivateDirectory(dirname(file));
  if (initialize === undefined) return createEmptyFile(file);
  try {
    statSync(file);
    return false;
  } catch (error) {
    if (errnoOf(error) !== 'ENOENT') throw new DataDirectoryError(dirname(file), errnoOf(error), error);
  }
  const temporary = `${file}.${process.pid}.new`;
  try {
    unlinkSync(temporary);
  } catch {
    // None was left.
  }
  createEmptyFile(temporary);
  try {
    initialize(temporary);
    try {
      linkSync(temporary, file);
      return true;
    } catch (error) {
      if (errnoOf(error) === 'EEXIST') return false;
      throw new DataDirectoryError(dirname(file), errnoOf(error), error);
    }
  } finally {
    for (const path of [temporary, `${temporary}-wal`, `${temporary}-shm`]) {
      try {
        unlinkSync(path);
      } catch {
        // Not there.
      }
    }
  }
}

function createEmptyFile(file: string): boolean {
  let descriptor: number;
  try {
    descriptor = openSync(file, 'wx', DATABASE_FILE_MODE);
  } catch (error) {
    if (errnoOf(error) === 'EEXIST') return false;
    throw new DataDirectoryError(dirname(file), errnoOf(error), error);
  }
  try {
    chmodSync(file, DATABASE_FILE_MODE);
  } finally {
    closeSync(descriptor);
  }
  return true;
}

/**
 * Why the file at `file` is not an SQLite database (empty, or another header), or undefined when it
 * starts like one. Read without following a link's target's type: a directory or device is for SQLite.
 */
export function notADatabase(file: string): string | undefined {
  let descriptor: number;
  try {
    descriptor = openSync(file, constants.O_RDONLY);
  } catch {
    return undefined;
  }
  try {
    const header = Buffer.alloc(SQLITE_HEADER.length);
    let filled = 0;
    for (;;) {
      const count = readSync(descriptor, header, filled, header.length - filled, filled);
      if (count === 0) break;
      filled += count;
      if (filled === header.length) break;
    }
    if (filled === 0) {
      return 'the file is empty (0 bytes), not an SQLite database: move it away to start a new store, or put back a copy of the store';
    }
    if (filled < header.length || !header.equals(SQLITE_HEADER)) {
      return 'the file is not an SQLite database (it does not start with "SQLite format 3"): move it away to start a new store, or put back a copy of the store';
    }
    return undefined;
  } catch {
    return undefined;
  } finally {
    closeSync(descriptor);
  }
}
