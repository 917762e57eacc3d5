/**
 * The private per-runtime directory that holds pty output files: the bash producer's output directory
 * (mode 0700, created on first use; files created exclusively with mode 0600 under random names, never
 * derived from task ids or labels), with files opened as handles for the pty's write stream.
 */
import { type FileHandle, open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { CREATE_FLAGS, OutputDirectory as PrivateDirectory } from '../bash/output-directory.js';

export interface OutputFile {
  readonly path: string;
  readonly handle: FileHandle;
}

export class OutputDirectory {
  readonly #directory: PrivateDirectory;

  constructor(root: string = tmpdir()) {
    this.#directory = new PrivateDirectory(root, 'errand-pty-');
  }

  /** The directory's path, once created. */
  async path(): Promise<string> {
    return this.#directory.ensure();
  }

  /** Creates a new output file; a directory that could not be created is tried again next time. */
  async createFile(): Promise<OutputFile> {
    const path = this.#directory.newPath();
    const handle = await open(path, CREATE_FLAGS, 0o600);
    return { path, handle };
  }

  /** Removes the directory and every file in it. Idempotent. */
  async remove(): Promise<void> {
    this.#directory.dispose(false);
  }
}
