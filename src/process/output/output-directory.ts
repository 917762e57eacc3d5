/**
 * The private directory that holds a producer's output files: created on first use with mkdtemp
 * (mode 0700), files created exclusively with mode 0600 under random names, never derived from task
 * ids, labels or commands, and never through a link. Removed on disposal unless the owner asks to keep it.
 *
 * Its name says which process made it (`<prefix><pid>-<start time>-XXXXXX`), so that the directories of
 * a process that died without removing them (SIGKILL, a power loss) are found and removed later, once
 * they are old (`removeLeftoverOutputDirectories`): until then a resumed session still reads its tasks'
 * output and exit statuses from them.
 */

import { randomUUID } from 'node:crypto';
import {
  chmodSync,
  constants,
  lstatSync,
  mkdtempSync,
  open,
  readdirSync,
  rmSync,
  type Stats,
  unlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hideEntriesFromSandboxes } from '../launch/private-paths.js';
import { isDead, type ProcessSource, procfsSource } from '../trees/process-table.js';
import { OutputFileWriter, type OutputFileWriterOptions } from './output-file-writer.js';

/** `<pid>-<start time>-` of this process, read once; empty where the process table cannot tell. */
let ownerPart: string | undefined;

function thisProcessPart(): string {
  if (ownerPart === undefined) {
    const startTime = procfsSource().read(process.pid)?.startTime;
    ownerPart = startTime === undefined ? '' : `${process.pid}-${startTime}-`;
  }
  return ownerPart;
}

const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/** Creates the file at `path` exclusively (mode 0600, never following a link), open for writing. */
function createExclusively(
  path: string,
  callback: (error: NodeJS.ErrnoException | null, fd: number) => void,
) {
  open(path, CREATE_FLAGS, 0o600, callback);
}

const REOPEN_FLAGS = constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW;

/** Opens the file at `path`, created before, again to write at its end (never creating it, never through a link). */
function reopenForAppending(
  path: string,
  callback: (error: NodeJS.ErrnoException | null, fd: number) => void,
) {
  open(path, REOPEN_FLAGS, callback);
}

export class OutputDirectory {
  readonly #parent: string;
  readonly #prefix: string;
  #path: string | undefined;
  #disposed = false;
  readonly #unhide: () => void;

  /**
   * The directory is created under `parent`; `prefix` names it (`<prefix>XXXXXX`, for example
   * `errand-bash-`) so a person can tell whose files it holds. Every directory of that name in `parent`
   * (this one, and those of other runtimes) is hidden from confined commands while this one is in use.
   */
  constructor(prefix: string, parent: string = tmpdir()) {
    this.#parent = parent;
    this.#prefix = prefix;
    this.#unhide = hideEntriesFromSandboxes(parent, prefix);
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
   * write or by `open()`, and its descriptor is held only while something waits to be written (the
   * writer reopens the file to append). Throws when the directory cannot be created.
   */
  newFile(options: Omit<OutputFileWriterOptions, 'reopenFile'>): OutputFileWriter {
    return new OutputFileWriter(this.newPath(), createExclusively, {
      ...options,
      reopenFile: reopenForAppending,
    });
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
    this.#unhide();
    if (keep || this.#path === undefined) return;
    rmSync(this.#path, { recursive: true, force: true });
  }

  /** The directory's path, creating it (mode 0700) on first use. */
  ensure(): string {
    if (this.#disposed) throw new Error('the output directory was removed');
    if (this.#path === undefined) {
      const path = mkdtempSync(join(this.#parent, `${this.#prefix}${thisProcessPart()}`));
      // mkdtemp already uses 0700; say so explicitly in case of an unusual umask or platform.
      chmodSync(path, 0o700);
      this.#path = path;
    }
    return this.#path;
  }
}

export interface LeftoverOutputSweepOptions {
  /** Where the directories are (an executor's `outputDirectoryParent`, a pty producer's `outputRoot`). */
  readonly parent: string;
  /** The prefixes of the directories to look at (`errand-bash-`, `errand-pty-`). */
  readonly prefixes: readonly string[];
  /** A directory is removed only when nothing in it changed for this long, in ms. */
  readonly maxAgeMs: number;
  /** Where the processes that made them are looked for. Default the /proc table. */
  readonly source?: ProcessSource;
  /** Milliseconds since the epoch. Default `Date.now`. */
  readonly now?: () => number;
  /** The most directories removed by one sweep; the rest wait for the next. Default 1000. */
  readonly maxRemovals?: number;
}

export interface LeftoverOutputSweep {
  /** The directories removed. */
  readonly removed: readonly string[];
  /** Directories of dead processes kept because something in them changed within `maxAgeMs`. */
  readonly recent: number;
}

/** The most entries of one directory looked at for its age; one with more counts as recent. */
const MAX_ENTRIES_AGED = 10_000;

/**
 * Removes the output directories under `parent` that a process which is no longer running made and
 * left behind, once nothing in them changed for `maxAgeMs`. A directory is removed only when its name
 * says which process made it (see `OutputDirectory`), no process with that pid and start time runs, it
 * is a real directory (not a link) owned by this user, and neither it nor any entry in it changed within
 * `maxAgeMs`. Anything else — another user's directory, a name of another shape, one still written to —
 * is left alone. Never throws: what cannot be read or removed stays.
 */
export function removeLeftoverOutputDirectories(options: LeftoverOutputSweepOptions): LeftoverOutputSweep {
  const source = options.source ?? procfsSource();
  const now = options.now ?? Date.now;
  const maxRemovals = options.maxRemovals ?? 1000;
  const removed: string[] = [];
  let recent = 0;
  let names: string[];
  try {
    names = readdirSync(options.parent);
  } catch {
    return { removed, recent };
  }
  const uid = process.getuid?.();
  for (const name of names) {
    if (removed.length >= maxRemovals) break;
    const owner = ownerOfName(name, options.prefixes);
    if (owner === undefined) continue;
    const entry = source.read(owner.pid);
    if (entry !== undefined && !isDead(entry) && entry.startTime === owner.startTime) continue;
    const path = join(options.parent, name);
    let stats: Stats;
    try {
      stats = lstatSync(path);
    } catch {
      continue;
    }
    if (!stats.isDirectory() || (uid !== undefined && stats.uid !== uid)) continue;
    if (now() - newestChange(path, stats) < options.maxAgeMs) {
      recent += 1;
      continue;
    }
    try {
      rmSync(path, { recursive: true, force: true });
      removed.push(path);
    } catch {
      // Left for a later sweep.
    }
  }
  return { removed, recent };
}

/** The pid and start time a directory's name gives, when it has one of the prefixes and the shape. */
function ownerOfName(
  name: string,
  prefixes: readonly string[],
): { pid: number; startTime: number } | undefined {
  const prefix = prefixes.find((candidate) => name.startsWith(candidate));
  if (prefix === undefined) return undefined;
  const match = /^(\d+)-(\d+)-[A-Za-z0-9]{6}$/.exec(name.slice(prefix.length));
  if (match === null) return undefined;
  const pid = Number(match[1]);
  const startTime = Number(match[2]);
  return Number.isSafeInteger(pid) && pid > 0 && Number.isSafeInteger(startTime)
    ? { pid, startTime }
    : undefined;
}

/**
 * The latest modification time of a directory and its entries (ms); infinite (recent) for one that cannot
 * be listed or holds too many entries to age.
 */
function newestChange(path: string, stats: Stats): number {
  let newest = stats.mtimeMs;
  let entries: string[];
  try {
    entries = readdirSync(path);
  } catch {
    return Number.POSITIVE_INFINITY;
  }
  if (entries.length > MAX_ENTRIES_AGED) return Number.POSITIVE_INFINITY;
  for (const entry of entries) {
    try {
      const entryStats = lstatSync(join(path, entry));
      newest = Math.max(newest, entryStats.mtimeMs);
    } catch {
      // Removed meanwhile.
    }
  }
  return newest;
}
