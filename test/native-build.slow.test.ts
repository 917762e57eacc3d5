/**
 * The install step's native build (`scripts/build-native.mjs`) in a copy of the package: the two helpers
 * are separate units, so a spawn helper that does not compile still leaves the pipes helper built, and
 * the install says in one line which way commands start and why.
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const root = new URL('..', import.meta.url).pathname;
const copy = mkdtempSync(join(tmpdir(), 'errand-native-build-'));
afterAll(() => rmSync(copy, { recursive: true, force: true }));

/** npm's own node-gyp, as an install runs it. */
function nodeGyp(): string {
  const npm = spawnSync('npm', ['root', '-g'], { encoding: 'utf8' }).stdout.trim();
  return join(npm, 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
}

describe('the native build', () => {
  it('builds the pipes helper even when the spawn helper fails to compile, and says what this install uses', () => {
    for (const part of ['binding.gyp', 'native', 'scripts'])
      cpSync(join(root, part), join(copy, part), { recursive: true });
    appendFileSync(
      join(copy, 'native', 'spawn.c'),
      '\n#error this copy of the spawn helper does not compile\n',
    );
    const result = spawnSync(process.execPath, [join(copy, 'scripts', 'build-native.mjs')], {
      cwd: copy,
      encoding: 'utf8',
      env: { ...process.env, npm_config_node_gyp: process.env.npm_config_node_gyp ?? nodeGyp() },
    });
    expect(result.status).toBe(0);
    expect(existsSync(join(copy, 'build', 'Release', 'errand_pipes.node'))).toBe(true);
    expect(existsSync(join(copy, 'build', 'Release', 'errand_spawn.node'))).toBe(false);
    const lines = result.stderr.split('\n').filter((line) => line.startsWith('errand: '));
    expect(lines).toEqual([
      'errand: commands are spawned by child_process (a fork): the spawn helper did not build, their output on real pipes. Rebuild with `npm rebuild errand` (needs python3, make and a C compiler).',
    ]);
  }, 120_000);
});
