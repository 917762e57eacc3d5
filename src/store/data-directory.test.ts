import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ensureDatabaseFile, ensurePrivateDirectory } from './data-directory.js';

const directories: string[] = [];

afterEach(() => {
  for (const directory of directories.splice(0)) {
    chmodSync(directory, 0o700);
    rmSync(directory, { recursive: true, force: true });
  }
});

function scratch(): string {
  const directory = mkdtempSync(join(tmpdir(), 'errand-data-directory-'));
  directories.push(directory);
  return directory;
}

function failure(action: () => void): { code?: string; message?: string; context?: unknown } {
  try {
    action();
  } catch (error) {
    return error as { code?: string; message?: string; context?: unknown };
  }
  throw new Error('expected a failure');
}

describe('the data directory', () => {
  it('is created private (0700) with its missing parents, and an existing one is left as it is', () => {
    const root = scratch();
    const home = join(root, 'a', 'b', 'home');
    ensurePrivateDirectory(home);
    expect(statSync(home).mode & 0o777).toBe(0o700);
    mkdirSync(join(root, 'shared'), { mode: 0o755 });
    chmodSync(join(root, 'shared'), 0o755);
    ensurePrivateDirectory(join(root, 'shared'));
    expect(statSync(join(root, 'shared')).mode & 0o777).toBe(0o755);
  });

  it('names the directory and the cause when a file is in the way', () => {
    const root = scratch();
    writeFileSync(join(root, 'file'), 'x');
    const inside = failure(() => ensurePrivateDirectory(join(root, 'file', 'home')));
    expect(inside).toMatchObject({
      code: 'DATA_DIRECTORY_UNAVAILABLE',
      message: `Cannot use the data directory ${join(root, 'file', 'home')}: a part of the path is a file, not a directory (ENOTDIR)`,
      context: { directory: join(root, 'file', 'home'), errno: 'ENOTDIR' },
    });
    const itself = failure(() => ensurePrivateDirectory(join(root, 'file')));
    expect(itself).toMatchObject({ code: 'DATA_DIRECTORY_UNAVAILABLE', context: { errno: 'EEXIST' } });
    expect(itself.message).toContain('it exists and is not a directory (EEXIST)');
  });

  it.skipIf(process.getuid?.() === 0)(
    'names the directory and EACCES when it may not be written (skipped as root: root writes anywhere)',
    () => {
      const root = scratch();
      const locked = join(root, 'locked');
      mkdirSync(locked);
      chmodSync(locked, 0o500);
      directories.push(locked);
      expect(failure(() => ensurePrivateDirectory(join(locked, 'home')))).toMatchObject({
        code: 'DATA_DIRECTORY_UNAVAILABLE',
        context: { errno: 'EACCES' },
      });
      expect(failure(() => ensureDatabaseFile(join(locked, 'errand.sqlite')))).toMatchObject({
        code: 'DATA_DIRECTORY_UNAVAILABLE',
        context: { directory: locked, errno: 'EACCES' },
      });
    },
  );
});
