/**
 * The README's sentence that lists the package's entries names exactly the subpaths of package.json's
 * `exports` map (less `./package.json`), so a new entry cannot ship unmentioned and a removed one cannot
 * linger in the prose.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = new URL('..', import.meta.url).pathname;

/** The entry names in package.json: `errand`, `errand/host`, ... */
function exportedEntries(): string[] {
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    readonly name: string;
    readonly exports: Record<string, unknown>;
  };
  return Object.keys(manifest.exports)
    .filter((key) => key !== './package.json')
    .map((key) => (key === '.' ? manifest.name : `${manifest.name}/${key.slice(2)}`))
    .sort();
}

/** The entry names the README's "The package's entries are exactly ..." paragraph quotes. */
function readmeEntries(): string[] {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const start = readme.indexOf("The package's entries are exactly those of its `exports` map:");
  if (start < 0) throw new Error('README.md lost its paragraph listing the package entries');
  const end = readme.indexOf('Every name each of them exports', start);
  const paragraph = readme.slice(start, end < 0 ? undefined : end);
  const names = [...paragraph.matchAll(/`(errand(?:\/[a-z0-9-]+)?)`/g)].map((match) => match[1] ?? '');
  return [...new Set(names)].sort();
}

describe('the README lists the package entries', () => {
  it('names every subpath of the exports map, and nothing else', () => {
    expect(readmeEntries()).toEqual(exportedEntries());
  });

  it('reads the real list: errand/redis is among them', () => {
    expect(exportedEntries()).toContain('errand/redis');
    expect(readmeEntries().length).toBeGreaterThan(5);
  });
});
