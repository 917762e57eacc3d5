/**
 * What `errand install` wrote, kept so `errand install --remove` can give a file back exactly as it was:
 * one record per settings file in the data directory's `installs/` folder, holding the file's text
 * before the first install (or that it was absent) and after the latest. A file still as install left
 * it gets its old text back byte for byte; one changed since is only cleaned of Errand's entries.
 */
import { createHash } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensurePrivateDirectory } from '../store/data-directory.js';

export const INSTALL_RECORD_SCHEMA_VERSION = 1;

export interface InstallRecord {
  readonly schemaVersion: number;
  readonly path: string;
  /** The file's text before Errand first wrote it; undefined when there was no file. */
  readonly before?: string;
  /** The text Errand wrote last. */
  readonly after: string;
}

function recordPath(home: string, path: string): string {
  return join(home, 'installs', `${createHash('sha256').update(path).digest('hex').slice(0, 32)}.json`);
}

export function recallInstall(home: string, path: string): InstallRecord | undefined {
  try {
    const record = JSON.parse(readFileSync(recordPath(home, path), 'utf8')) as Partial<InstallRecord>;
    if (record.schemaVersion !== INSTALL_RECORD_SCHEMA_VERSION || record.path !== path) return undefined;
    if (typeof record.after !== 'string') return undefined;
    if (record.before !== undefined && typeof record.before !== 'string') return undefined;
    return record as InstallRecord;
  } catch {
    return undefined;
  }
}

/** Records a write; an earlier record whose text this write replaced keeps its `before`. */
export function rememberInstall(
  home: string,
  file: { readonly path: string; readonly before: string | undefined; readonly after: string },
): void {
  const earlier = recallInstall(home, file.path);
  const before = earlier !== undefined && earlier.after === file.before ? earlier.before : file.before;
  ensurePrivateDirectory(join(home, 'installs'));
  const record: InstallRecord = {
    schemaVersion: INSTALL_RECORD_SCHEMA_VERSION,
    path: file.path,
    ...(before === undefined ? {} : { before }),
    after: file.after,
  };
  writeFileSync(recordPath(home, file.path), `${JSON.stringify(record)}\n`, { mode: 0o600 });
}

export function forgetInstall(home: string, path: string): void {
  rmSync(recordPath(home, path), { force: true });
}
