/**
 * The files of Errand itself that a confined command must never see: the data directory (the store, the
 * hook sockets in `run/`, the dashboard's token), a store file kept elsewhere, and the output directories
 * of every runtime on this machine. Whatever starts them registers them here, process-wide, and every
 * sandbox covers them when it confines a launch (an empty tmpfs over a directory, `/dev/null` over a
 * file), whichever part resolved that sandbox.
 */
import { readdirSync, realpathSync, statSync } from 'node:fs';
import { resolve } from 'node:path';

/** Hidden paths with how many registrations hold each. */
const paths = new Map<string, number>();
/** Directories whose entries starting with a prefix are hidden (output directories, ours and others'). */
const entryPrefixes = new Map<string, number>();

/** At most this many entries of one parent are hidden one by one (leftovers beyond are rare). */
export const MAX_HIDDEN_ENTRIES_PER_PARENT = 256;

/** Hides `path` (a directory or a file) from confined commands until the returned function is called. */
export function hideFromSandboxes(path: string): () => void {
  return hold(paths, resolve(path));
}

/** Hides the entries of `parent` whose names start with `prefix` (each looked up at every launch). */
export function hideEntriesFromSandboxes(parent: string, prefix: string): () => void {
  return hold(entryPrefixes, `${resolve(parent)}\0${prefix}`);
}

export interface HiddenPath {
  readonly path: string;
  readonly directory: boolean;
}

/** What is to be hidden now: only paths that exist (bwrap cannot cover what is not there). */
export function hiddenPaths(): HiddenPath[] {
  const found = new Map<string, boolean>();
  for (const path of paths.keys()) {
    const real = realPathOf(path);
    if (real !== undefined) found.set(real.path, real.directory);
  }
  for (const key of entryPrefixes.keys()) {
    const [parent, prefix] = key.split('\0') as [string, string];
    let names: string[];
    try {
      names = readdirSync(parent);
    } catch {
      continue;
    }
    let count = 0;
    for (const name of names) {
      if (!name.startsWith(prefix) || count >= MAX_HIDDEN_ENTRIES_PER_PARENT) continue;
      const real = realPathOf(`${parent === '/' ? '' : parent}/${name}`);
      if (real === undefined) continue;
      found.set(real.path, real.directory);
      count += 1;
    }
  }
  // Parents before their children, so a hidden directory's own hidden entries stay hidden inside it.
  return [...found]
    .sort(([a], [b]) => a.length - b.length || (a < b ? -1 : 1))
    .map(([path, directory]) => ({ path, directory }));
}

/** Where `path` really is (bwrap mounts over the target of a link, so the target is what to cover). */
function realPathOf(path: string): HiddenPath | undefined {
  try {
    const real = realpathSync(path);
    return { path: real, directory: statSync(real).isDirectory() };
  } catch {
    return undefined;
  }
}

function hold(map: Map<string, number>, key: string): () => void {
  map.set(key, (map.get(key) ?? 0) + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const count = (map.get(key) ?? 1) - 1;
    if (count <= 0) map.delete(key);
    else map.set(key, count);
  };
}
