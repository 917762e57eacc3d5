/**
 * A command spawned without fork(2), through Errand's native helper (`native/spawn.c`): `posix_spawn`,
 * which never copies the spawner's page tables, and the exit heard by the helper's reaper thread. Node's
 * `child_process.spawn` forks, and a fork's cost grows with the spawner's memory — about 1 ms of a quick
 * command's start from the lifeline sidecar, a small Node process, on a 2-core VM. The child gets what
 * `spawn(file, args, { cwd, env, detached: true, stdio: ['ignore', stdout, stderr] })` gives it: a session
 * of its own, signals at their defaults and none blocked, stdin on `/dev/null`.
 *
 * Used where the helper is built (Linux), unless `ERRAND_NODE_SPAWN=1` asks
 * for `child_process` (to compare them, or as a way out). An exit is matched to its spawn by an id given
 * at the spawn, never by pid. Errors are Node's: an `Error` with `code`,
 * `errno`, `syscall` (`spawn <file>`) and `path`.
 */
import { constants as osConstants } from 'node:os';
import { getSystemErrorName } from 'node:util';
import { loadSpawnAddon, type SpawnAddon } from './native-addon.js';
import { findOnPath } from './spawn-check.js';

/** The environment variable that turns spawns without fork off (`1`): commands are spawned by Node. */
export const NODE_SPAWN_VARIABLE = 'ERRAND_NODE_SPAWN';

/** The search path of a command without a slash when its environment has no PATH (libuv's, and glibc's). */
const DEFAULT_SEARCH_PATH = '/usr/bin:/bin';

export interface NativeSpawnRequest {
  readonly file: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /**
   * The descriptors the child gets as its stdout and stderr. A spawn takes them: they are closed before
   * `spawnNative` returns a pid or throws, and left alone only when it returns undefined.
   */
  readonly stdout: number;
  readonly stderr: number;
}

/** How the child ended, as a ChildProcess's `exit` event says it: a code, or the signal that killed it. */
export type NativeExitListener = (code: number | null, signal: NodeJS.Signals | null) => void;

/** Exit listeners by spawn id: an id is never reused, so a pid reused before an exit is delivered cannot fake it. */
const listeners = new Map<number, NativeExitListener>();
let spawner: SpawnAddon | null | undefined;
let lastSpawnId = 0;

const signalNames = new Map<number, NodeJS.Signals>(
  Object.entries(osConstants.signals).map(([name, number]) => [number, name as NodeJS.Signals]),
);

function load(): SpawnAddon | null {
  if (spawner !== undefined) return spawner;
  spawner = null;
  const addon = loadSpawnAddon();
  if (addon === null) return null;
  addon.setExitListener((id, code, signo) => {
    const listener = listeners.get(id);
    listeners.delete(id);
    // A throw here is an uncaught exception (the helper raises it), as from a ChildProcess 'exit' listener.
    listener?.(code >= 0 ? code : null, signo > 0 ? (signalNames.get(signo) ?? null) : null);
  });
  spawner = addon;
  return spawner;
}

/** Whether `spawnNative` can spawn here (the helper is built for this platform, and it is not turned off). */
export function nativeSpawnAvailable(): boolean {
  return process.env[NODE_SPAWN_VARIABLE] !== '1' && load() !== null;
}

/**
 * Spawns `request.file` with `request.args` and returns its pid; `onExit` hears its end, once. Throws
 * Node's spawn error when it cannot run (`ENOENT`, `EACCES`, a `cwd` that is not there), a TypeError for
 * a string with a NUL in it. Either way `request.stdout` and `request.stderr` are closed. Undefined, with
 * nothing spawned and nothing closed, when it cannot be spawned here — the helper is not available, or a
 * name without a slash is on no directory of the environment's PATH: `child_process.spawn` then runs it,
 * or reports it as Node does.
 */
export function spawnNative(request: NativeSpawnRequest, onExit: NativeExitListener): number | undefined {
  if (!nativeSpawnAvailable()) return undefined;
  const { file, args, cwd, env } = request;
  // A name is looked up on the child's PATH, as libuv does; a path is the child's to resolve.
  const executable = file.includes('/') ? file : findOnPath(file, env.PATH ?? DEFAULT_SEARCH_PATH, { cwd });
  if (executable === undefined) return undefined;
  const envp: string[] = [];
  for (const name in env) {
    const value = env[name];
    if (value !== undefined) envp.push(`${name}=${value}`);
  }
  // Wraps past 2^32 - 1 spawns; an id still listened to then is skipped.
  do lastSpawnId = lastSpawnId >= 0xffff_ffff ? 1 : lastSpawnId + 1;
  while (listeners.has(lastSpawnId));
  const id = lastSpawnId;
  const result = spawner!.spawnCommand(
    executable,
    [file, ...args],
    envp,
    cwd,
    request.stdout,
    request.stderr,
    id,
  );
  if (result < 0) throw spawnError(file, args, result);
  listeners.set(id, onExit);
  return result;
}

function spawnError(file: string, args: readonly string[], errno: number): NodeJS.ErrnoException {
  const code = getSystemErrorName(errno);
  return Object.assign(new Error(`spawn ${file} ${code}`), {
    errno,
    code,
    syscall: `spawn ${file}`,
    path: file,
    spawnargs: [...args],
  });
}
