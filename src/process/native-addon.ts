/**
 * Errand's native helper (`native/pipes.c`, `native/spawn.c`), built by node-gyp at install: real pipes
 * for a command's stdout and stderr (`stdio-pipes.ts`), and a spawn without fork (`native-spawn.ts`).
 * Null where it was not built or does not load (built for another Node or platform): Errand then uses
 * Node's socket pairs and `child_process.spawn`.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface NativeAddon {
  createPipe(): [number, number];
  /** Two pipes' read ends and their inodes, their write ends closed: [out, outIno, err, errIno]. */
  createReadEnds(): [number, string, number, string];
  /** A blocking, close-on-exec descriptor writing to the pipe at `path`; a FIFO with no reader throws ENXIO. */
  openForWriting(path: string): number;
  /** Where spawns without fork work (Linux with pidfds): once per process, before any `spawnCommand`. */
  setExitListener?(listener: (pid: number, code: number, signo: number) => void): void;
  /** The child's pid, or a negative errno when it could not be spawned; closes `stdout` and `stderr`. */
  spawnCommand?(
    file: string,
    argv: readonly string[],
    envp: readonly string[],
    cwd: string,
    stdout: number,
    stderr: number,
  ): number;
}

const ADDON = join('build', 'Release', 'errand_native.node');
/** How many directories above this module the package root may be (src/process, dist/process, ...). */
const MAX_LEVELS_UP = 4;

let addon: NativeAddon | null | undefined;

export function loadNativeAddon(): NativeAddon | null {
  if (addon !== undefined) return addon;
  addon = null;
  let directory = dirname(fileURLToPath(import.meta.url));
  for (let level = 0; level <= MAX_LEVELS_UP; level += 1) {
    const candidate = join(directory, ADDON);
    if (existsSync(candidate)) {
      try {
        const loaded = createRequire(import.meta.url)(candidate) as Partial<NativeAddon>;
        if (
          typeof loaded.createPipe === 'function' &&
          typeof loaded.createReadEnds === 'function' &&
          typeof loaded.openForWriting === 'function'
        )
          addon = loaded as NativeAddon;
      } catch {
        // Built for another Node or platform: Node's own ways it is.
      }
      break;
    }
    const parent = dirname(directory);
    if (parent === directory) break;
    directory = parent;
  }
  return addon;
}
