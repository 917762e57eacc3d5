/**
 * The private per-runtime directory that holds pty output files: created lazily with mode 0700, files
 * created exclusively with mode 0600 under random names (never derived from task ids or labels, so a
 * predictable id cannot be used to guess, pre-create or symlink-attack a path).
 */
import { randomBytes } from 'node:crypto';
import { type FileHandle, mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface OutputFile {
  readonly path: string;
  readonly handle: FileHandle;
}

export class OutputDirectory {
  readonly #root: string;
  #path: Promise<string> | undefined;
  #removed = false;

  constructor(root: string = tmpdir()) {
    this.#root = root;
  }

  /** The directory's path, once created. */
  async path(): Promise<string> {
    if (this.#path === undefined) {
      // mkdtemp creates the directory with mode 0700.
      const creating = mkdtemp(join(this.#root, 'errand-pty-'));
      this.#path = creating;
      // A failure (a missing parent, a full disk) is not remembered: the next program tries again.
      creating.catch(() => {
        if (this.#path === creating) this.#path = undefined;
      });
    }
    return this.#path;
  }

  async createFile(): Promise<OutputFile> {
    const directory = await this.path();
    const path = join(directory, `${randomBytes(12).toString('hex')}.log`);
    const handle = await open(path, 'wx', 0o600);
    return { path, handle };
  }

  /** Removes the directory and every file in it. Idempotent. */
  async remove(): Promise<void> {
    if (this.#path === undefined || this.#removed) return;
    this.#removed = true;
    const directory = await this.#path.catch(() => undefined);
    if (directory !== undefined) await rm(directory, { recursive: true, force: true });
  }
}
