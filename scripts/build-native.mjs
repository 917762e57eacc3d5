/**
 * npm's install step: builds Errand's one native helper with the node-gyp that npm carries — the pipes
 * a command's stdout and stderr are made of (native/pipes.c, src/process/stdio-pipes.ts) and the spawn
 * without fork (native/spawn.c, src/process/native-spawn.ts). A failed build does not fail the install:
 * Errand then gives commands Node's socket pairs and spawns them with child_process — starts cost a fork,
 * and only opening /dev/stdout or /dev/stderr inside a command fails (with "No such device or address").
 */
import { spawnSync } from 'node:child_process';

const nodeGyp = process.env.npm_config_node_gyp;
const result =
  nodeGyp === undefined
    ? spawnSync('node-gyp', ['rebuild', '--loglevel=warn'], { stdio: 'inherit' })
    : spawnSync(process.execPath, [nodeGyp, 'rebuild', '--loglevel=warn'], { stdio: 'inherit' });
if (result.status !== 0) {
  process.stderr.write(
    'errand: the native helper did not build (see above); commands get socket pairs for stdout and ' +
      'stderr (opening /dev/stdout or /dev/stderr inside one fails) and are spawned with a fork. ' +
      'Rebuild with `npm rebuild errand`.\n',
  );
}
