import {
  appendFileSync,
  mkdtempSync,
  renameSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
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

/** Everything the follower hands out until it has nothing new. */
function drain(follower: FileFollower): string {
  let text = '';
  for (let chunk = follower.read(); chunk.length > 0; chunk = follower.read()) text += chunk.toString();
  return text;
}

describe('FileFollower', () => {
  it('says so when the file is truncated below what was read, and reads the new content from its start', () => {
    const path = file();
    writeFileSync(path, Array.from({ length: 9 }, (_, index) => `line ${index + 1}\n`).join(''));
    const follower = new FileFollower(path, { maxBytes: 1 << 20 });
    expect(drain(follower).split('\n')).toHaveLength(10);
    // Seven more lines are written, the follower sees the size grow, then the file is truncated.
    appendFileSync(path, Array.from({ length: 7 }, (_, index) => `line ${index + 10}\n`).join(''));
    expect(follower.size()).toBeGreaterThan(follower.position);
    const seenSize = follower.size()!;
    const read = follower.position;
    truncateSync(path, 0);
    appendFileSync(path, 'after\n');
    // The seven lines it knew of and never read are counted; reading goes on from the start.
    expect(seenSize - read).toBe(56);
    expect(drain(follower)).toBe(
      `[... 56 bytes skipped; full output: ${path} (truncated: read again from its start) ...]\nafter\n`,
    );
    expect(follower.discontinuities).toBe(1);
    follower.close();
  });

  it('counts the bytes it saw but did not read yet, and breaks the line before its marker', () => {
    const path = file();
    writeFileSync(path, 'partial');
    const follower = new FileFollower(path, { maxBytes: 1 << 20, maxChunkBytes: 4 });
    expect(follower.read().toString()).toBe('part');
    // Sized at 7, read 4: 3 bytes known and never read.
    truncateSync(path, 0);
    appendFileSync(path, 'x\n');
    expect(drain(follower)).toBe(
      `\n[... 3 bytes skipped; full output: ${path} (truncated: read again from its start) ...]\nx\n`,
    );
    follower.close();
  });

  it('says so when the path names another file now, and follows that one; never through a link', () => {
    const path = file();
    writeFileSync(path, 'old one\n');
    const follower = new FileFollower(path, { maxBytes: 1 << 20 });
    expect(drain(follower)).toBe('old one\n');
    appendFileSync(path, 'unread\n');
    expect(follower.size()).toBe(15);
    writeFileSync(`${path}.new`, 'new one\n');
    renameSync(`${path}.new`, path);
    expect(drain(follower)).toBe(
      `[... 7 bytes skipped; full output: ${path} (replaced: read again from its start) ...]\nnew one\n`,
    );
    // Replaced by a link: marked, and nothing is read through it.
    writeFileSync(`${path}.secret`, 'secret\n');
    rmSync(path);
    symlinkSync(`${path}.secret`, path);
    expect(drain(follower)).toContain('(replaced: read again from its start)');
    expect(drain(follower)).toBe('');
    follower.close();
  });

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
