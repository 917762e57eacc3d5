import { mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readStatusFile, statusFileBeside, writeStatusFile } from './exit-status-file.js';

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function directory(): string {
  const path = mkdtempSync(join(tmpdir(), 'errand-status-'));
  directories.push(path);
  return path;
}

describe('exit-status files', () => {
  it('round-trips an exit status and a stop, atomically (no temporary file is left)', () => {
    const dir = directory();
    const file = join(dir, 'a.status');
    expect(writeStatusFile(file, { kind: 'exited', exitCode: 3 })).toBe(true);
    expect(readStatusFile(file)).toEqual({ kind: 'exited', exitCode: 3 });
    expect(writeStatusFile(file, { kind: 'stopped', by: 'lifeline', at: 42 })).toBe(true);
    expect(readStatusFile(file)).toEqual({ kind: 'stopped', by: 'lifeline', at: 42 });
    expect(readdirSync(dir)).toEqual(['a.status']);
  });

  it('reads what the durable wrapper writes, and nothing from a missing, malformed or oversized file', () => {
    const dir = directory();
    writeFileSync(join(dir, 'wrapper'), '{"exitCode":143}\n');
    expect(readStatusFile(join(dir, 'wrapper'))).toEqual({ kind: 'exited', exitCode: 143 });
    expect(readStatusFile(join(dir, 'missing'))).toBeUndefined();
    for (const [name, text] of [
      ['garbage', 'not json'],
      ['range', '{"exitCode":256}'],
      ['who', '{"stoppedBy":"someone","at":1}'],
      ['big', `{"exitCode":0,"pad":"${'x'.repeat(2000)}"}`],
    ] as const) {
      writeFileSync(join(dir, name), text);
      expect(readStatusFile(join(dir, name))).toBeUndefined();
    }
  });

  it('never writes through a link in place of its temporary file', () => {
    const dir = directory();
    const file = join(dir, 'b.status');
    symlinkSync(join(dir, 'elsewhere'), `${file}.${process.pid}.tmp`);
    expect(writeStatusFile(file, { kind: 'exited', exitCode: 0 })).toBe(false);
    // Nothing was written where the link points, and no status appeared.
    expect(readdirSync(dir).sort()).not.toContain('elsewhere');
    expect(readStatusFile(file)).toBeUndefined();
  });

  it('sits beside its output file', () => {
    expect(statusFileBeside('/tmp/d/abc.log')).toBe('/tmp/d/abc.status');
  });
});
