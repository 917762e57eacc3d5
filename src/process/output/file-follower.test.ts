import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FileFollower } from './file-follower.js';

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function file(): string {
  const directory = mkdtempSync(join(tmpdir(), 'errand-follow-'));
  directories.push(directory);
  return join(directory, 'out.log');
}

describe('FileFollower', () => {
  it('returns what was appended since the last read, from an offset, up to the cap', () => {
    const path = file();
    writeFileSync(path, 'hello ');
    const follower = new FileFollower(path, { from: 2, maxBytes: 12 });
    expect(follower.read().toString()).toBe('llo ');
    expect(follower.read().length).toBe(0);
    appendFileSync(path, 'world, and more');
    expect(follower.read().toString()).toBe('world,');
    expect(follower.reachedCap()).toBe(true);
    expect(follower.position).toBe(12);
    follower.close();
    expect(follower.read().length).toBe(0);
  });

  it('reads at most one chunk per call, and nothing of a file that is not there (yet)', () => {
    const path = file();
    const follower = new FileFollower(path, { maxBytes: 100, maxChunkBytes: 4 });
    expect(follower.read().length).toBe(0);
    writeFileSync(path, 'abcdefghij');
    // Opened on first use once it exists.
    const reopened = new FileFollower(path, { maxBytes: 100, maxChunkBytes: 4 });
    expect(reopened.read().toString()).toBe('abcd');
    expect(reopened.read().toString()).toBe('efgh');
    expect(reopened.read().toString()).toBe('ij');
    reopened.close();
    follower.close();
  });
});
