/**
 * The private per-executor directory that holds output files: created on first use with mkdtemp
 * (mode 0700), files created exclusively with mode 0600 under random names, never derived from task
 * ids, labels or commands. Removed on disposal unless the owner asks to keep it.
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, constants, mkdtempSync, open, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

export class OutputDirectory {
  readonly #parent: string;
  readonly #prefix: string;
  #path: string | undefined;
  #disposed = false;

  /** `prefix` names the directory (`<prefix>XXXXXX`) so a person can tell whose files it holds. */
  constructor(parent: string = tmpdir(), prefix = 'errand-bash-') {
    this.#parent = parent;
    this.#prefix = prefix;
  }

  /** The directory, once a file was created in it. */
  get path(): string | undefined {
    return this.#path;
  }

  /**
   * A fresh random path in the directory, creating the directory on first use. Nothing exists at the
   * path until `open` creates it.
   */
  newPath(): string {
    return join(this.ensure(), `${randomUUID()}.log`);
  }

  /** Creates the file at `path` exclusively (mode 0600, never following a link), open for writing. */
  open(path: string, callback: (error: NodeJS.ErrnoException | null, fd: number) => void): void {
    open(path, CREATE_FLAGS, 0o600, callback);
  }

  /** Deletes one output file; a file that is already gone is fine. */
  removeFile(path: string): void {
    try {
      unlinkSync(path);
    } catch {
      // Already removed (or the directory is gone).
    }
  }

  /** Removes the directory and everything in it, unless `keep` is set. Later `newPath` calls fail. */
  dispose(keep: boolean): void {
    this.#disposed = true;
    if (keep || this.#path === undefined) return;
    rmSync(this.#path, { recursive: true, force: true });
  }

  /** The directory's path, creating it (mode 0700) on first use. */
  ensure(): string {
    if (this.#disposed) throw new Error('the output directory was removed');
    if (this.#path === undefined) {
      const path = mkdtempSync(join(this.#parent, this.#prefix));
      // mkdtemp already uses 0700; say so explicitly in case of an unusual umask or platform.
      chmodSync(path, 0o700);
      this.#path = path;
    }
    return this.#path;
  }
}
