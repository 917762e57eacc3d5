/**
 * Errand's native helpers, built by node-gyp at install, each its own loadable unit so that one that
 * failed to compile costs only its own feature: `errand_pipes.node` (`native/pipes.c`: real pipes for a
 * command's stdout and stderr, `stdio-pipes.ts`) and `errand_spawn.node` (`native/spawn.c`: a spawn
 * without fork, `native-spawn.ts`). Each loader gives null where its unit was not built or does not load
 * (built for another Node or platform): Errand then uses Node's socket pairs, or `child_process.spawn`.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface PipesAddon {
  createPipe(): [number, number];
}

export interface SpawnAddon {
  /** Once per process, before any `spawnCommand`: hears every exit, by the id its spawn was given. */
  setExitListener(listener: (id: number, code: number, signo: number) => void): void;
  /** The child's pid, or a negative errno when it could not be spawned; closes `stdout` and `stderr`. */
  spawnCommand(
    file: string,
    argv: readonly string[],
    envp: readonly string[],
    cwd: string,
    stdout: number,
    stderr: number,
    id: number,
  ): number;
}

/** How many directories above this module the package root may be (src/process, dist/process, ...). */
const MAX_LEVELS_UP = 4;

const loaded = new Map<string, unknown>();

/** `build/Release/<name>.node` of this package, loaded once; null when it is not there or does not load. */
function loadUnit(name: string): unknown {
  if (loaded.has(name)) return loaded.get(name);
  let unit: unknown = null;
  let directory = dirname(fileURLToPath(import.meta.url));
  for (let level = 0; level <= MAX_LEVELS_UP; level += 1) {
    const candidate = join(directory, 'build', 'Release', `${name}.node`);
    if (existsSync(candidate)) {
      try {
        unit = createRequire(import.meta.url)(candidate);
      } catch {
        // Built for another Node or platform: Node's own ways it is.
      }
      break;
    }
    const parent = dirname(directory);
    if (parent === directory) break;
    directory = parent;
  }
  loaded.set(name, unit);
  return unit;
}

/** The pipes helper, or null. */
export function loadPipesAddon(): PipesAddon | null {
  const unit = loadUnit('errand_pipes') as Partial<PipesAddon> | null;
  return typeof unit?.createPipe === 'function' ? (unit as PipesAddon) : null;
}

/**
 * The spawn helper, or null — also where it loaded but exports nothing: not Linux, or a glibc older than
 * 2.29.
 */
export function loadSpawnAddon(): SpawnAddon | null {
  const unit = loadUnit('errand_spawn') as Partial<SpawnAddon> | null;
  return typeof unit?.setExitListener === 'function' && typeof unit.spawnCommand === 'function'
    ? (unit as SpawnAddon)
    : null;
}
