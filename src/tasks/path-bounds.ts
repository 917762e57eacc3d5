/**
 * The bound of every path a caller hands Errand (a working directory, a workspace): what Linux accepts
 * (`PATH_MAX`, 4096 bytes with its terminating NUL). Checked where the path enters, as the resolved
 * absolute path, so a longer one is a clear caller error naming the field, never a failed start whose
 * record then cannot be stored.
 */
import { resolve } from 'node:path';
import { ErrandError } from './errors.js';

/** The longest path accepted, in UTF-8 bytes (Linux's PATH_MAX less its NUL). */
export const MAX_PATH_BYTES = 4095;

/** A path over `MAX_PATH_BYTES`. */
export class PathTooLongError extends ErrandError {
  constructor(field: string, bytes: number, maxBytes: number = MAX_PATH_BYTES) {
    super(
      'PATH_TOO_LONG',
      'caller',
      `Expected \`${field}\` to be a path of at most ${maxBytes} bytes, got ${bytes} bytes`,
      { context: { field, bytes, maxBytes } },
    );
  }
}

/** Throws `PATH_TOO_LONG` when `path` (as given or as resolved) is longer than `MAX_PATH_BYTES`. */
export function checkPathLength(field: string, path: string): void {
  const bytes = Buffer.byteLength(path, 'utf8');
  if (bytes > MAX_PATH_BYTES) throw new PathTooLongError(field, bytes);
}

/**
 * A directory a model names (`workdir`), relative to `base`, as an absolute path: `base` itself when none
 * is given. `PATH_TOO_LONG` naming `field` when it, or what it resolves to, is over the bound.
 */
export function resolveWorkdir(base: string, workdir: string | undefined, field = 'workdir'): string {
  if (workdir === undefined) return resolve(base);
  checkPathLength(field, workdir);
  const path = resolve(base, workdir);
  checkPathLength(field, path);
  return path;
}
