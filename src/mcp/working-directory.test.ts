import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { capturingLogger } from '../../test/support/registry.js';
import { firstDirectory, WorkingDirectory } from './working-directory.js';

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function directory(): string {
  const path = realpathSync(mkdtempSync(join(tmpdir(), 'errand-wd-')));
  directories.push(path);
  return path;
}

describe('WorkingDirectory', () => {
  it('takes the first file: root that is a directory', () => {
    const project = directory();
    writeFileSync(join(project, 'file'), '');
    expect(
      firstDirectory([
        { uri: 'https://example.com/repo' },
        { uri: pathToFileURL(join(project, 'file')).href },
        { uri: pathToFileURL(join(project, 'missing')).href },
        { uri: 'not a uri' },
        { uri: pathToFileURL(project).href },
      ]),
    ).toBe(project);
    expect(firstDirectory([])).toBeUndefined();
  });

  it('starts at the launch directory, moves to the root once answered, and back when no root is usable', async () => {
    const launch = directory();
    const project = directory();
    const logger = capturingLogger();
    const wd = new WorkingDirectory({ fallback: launch, timeoutMs: 60_000, logger });
    expect([wd.current, wd.source]).toEqual([launch, 'launch']);
    const ready = wd.whenReady();
    await wd.refresh(async () => ({ roots: [{ uri: pathToFileURL(project).href }] }));
    await ready;
    expect([wd.current, wd.source]).toEqual([project, 'root']);
    await wd.refresh(async () => ({ roots: [{ uri: 'https://example.com' }] }));
    expect([wd.current, wd.source]).toEqual([launch, 'launch']);
    expect(logger.warnings.map((warning) => warning.message)).toEqual([
      'no client root is a local directory; using the launch directory',
    ]);
    await wd.refresh(async () => {
      throw new Error('client went away');
    });
    expect(wd.current).toBe(launch);
    expect(logger.warnings).toHaveLength(2);
  });

  it('a fixed directory (--cwd) ignores roots and is ready at once', async () => {
    const fixed = directory();
    const wd = new WorkingDirectory({
      fixed,
      fallback: directory(),
      timeoutMs: 60_000,
      logger: capturingLogger(),
    });
    await wd.whenReady();
    await wd.refresh(async () => ({ roots: [{ uri: pathToFileURL(directory()).href }] }));
    expect([wd.current, wd.source]).toEqual([fixed, 'fixed']);
  });
});
