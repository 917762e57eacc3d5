/**
 * The private directory that holds a producer's output files: created on first use with mkdtemp
 * (mode 0700), files created exclusively with mode 0600 under random names, never derived from task
 * ids, labels or commands, and never through a link. Removed on disposal unless the owner asks to keep it.
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, constants, mkdtempSync, open, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OutputFileWriter, type OutputFileWriterOptions } from './output-file-writer.js';

const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/** Creates the file at `path` exclusively (mode 0600, never following a link), open for writing. */
function createExclusively(
  path: string,
  callback: (error: NodeJS.ErrnoException | null, fd: number) => void,
) {
  open(path, CREATE_FLAGS, 0o600, callback);
}

export class OutputDirectory {
  readonly #parent: string;
  readonly #prefix: string;
  #path: string | undefined;
  #disposed = false;

  /**
   * The directory is created under `parent`; `prefix` names it (`<prefix>XXXXXX`, for example
   * `errand-bash-`) so a person can tell whose files it holds.
   */
  constructor(prefix: string, parent: string = tmpdir()) {
    this.#parent = parent;
    this.#prefix = prefix;
  }

  /** The directory, once it was created. */
  get path(): string | undefined {
    return this.#path;
  }

  /**
   * A fresh random path in the directory, creating the directory on first use (a directory that could
   * not be created is tried again next time). Nothing exists at the path until something creates it.
   */
  newPath(): string {
    return join(this.ensure(), `${randomUUID()}.log`);
  }

  /**
   * A writer for a new output file at a fresh random path; the file is created exclusively by its first
   * write or by `open()`. Throws when the directory cannot be created.
   */
  newFile(options: OutputFileWriterOptions): OutputFileWriter {
    return new OutputFileWriter(this.newPath(), createExclusively, options);
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
