/**
 * npm's install step: builds Errand's two native helpers with the node-gyp that npm carries, each its own
 * unit so that one failing to compile costs only its own feature — errand_pipes (native/pipes.c: real
 * pipes for a command's stdout and stderr, src/process/launch/stdio-pipes.ts) and errand_spawn (native/spawn.c:
 * a spawn without fork, src/process/launch/native-spawn.ts). A failed build does not fail the install. It ends
 * with one line saying which way this install starts commands, and why.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const nodeGyp = process.env.npm_config_node_gyp;
// -k: make carries on past a unit that fails, so the other one is still built.
const env = { ...process.env, MAKEFLAGS: `${process.env.MAKEFLAGS ?? ''} -k`.trim() };
const args = ['rebuild', '--loglevel=warn'];
const result =
  nodeGyp === undefined
    ? spawnSync('node-gyp', args, { stdio: 'inherit', env })
    : spawnSync(process.execPath, [nodeGyp, ...args], { stdio: 'inherit', env });

/** The exports of a built unit, or undefined when it is not there or does not load here. */
function load(name) {
  const path = join(process.cwd(), 'build', 'Release', `${name}.node`);
  if (!existsSync(path)) return undefined;
  try {
    return createRequire(import.meta.url)(path);
  } catch {
    return undefined;
  }
}

const pipes = typeof load('errand_pipes')?.createPipe === 'function';
const spawnUnit = load('errand_spawn');
const spawnBuilt = spawnUnit !== undefined;
const unforked = typeof spawnUnit?.spawnCommand === 'function';
const how = unforked
  ? 'spawned without fork (posix_spawn, exits heard by one reaper thread)'
  : spawnBuilt
    ? 'spawned by child_process (a fork): the spawn helper needs Linux with glibc 2.29 or later (or musl)'
    : `spawned by child_process (a fork): the spawn helper did not build${result.error ? ` (${result.error.message})` : ''}`;
const output = pipes
  ? 'their output on real pipes'
  : 'their output on socket pairs (opening /dev/stdout or /dev/stderr inside one fails): the pipes helper did not build';
process.stderr.write(
  `errand: commands are ${how}, ${output}.${unforked && pipes ? '' : ' Rebuild with `npm rebuild errand` (needs python3, make and a C compiler).'}\n`,
);
