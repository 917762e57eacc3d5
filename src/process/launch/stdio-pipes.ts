/**
 * Real pipes for a command's stdout and stderr. `child_process` gives a child's stdio socket pairs, and
 * on Linux a program that opens `/dev/stdout` or `/dev/stderr` (`echo x > /dev/stderr`,
 * `tee /dev/stdout`, `cmd -o /dev/stdout`) fails on a socket with "No such device or address"; on a
 * pipe it works, as it does in a terminal's shell. Errand's native helper (`native/pipes.c`, loaded by
 * `native-addon.ts`, built by node-gyp at install) makes the pipes; a launch hands the write ends to the child as its descriptors 1
 * and 2, closes them here, and reads the read ends. Both ends are close-on-exec, so no other child
 * inherits them.
 *
 * Without the helper (it was not built, or `ERRAND_SOCKET_STDIO=1` asks for the old behaviour) a launch
 * falls back to Node's socket pairs, and everything but opening those two paths works the same.
 */
import type { ChildProcess, SpawnOptions } from 'node:child_process';
import { closeSync } from 'node:fs';
import { Socket } from 'node:net';
import { loadPipesAddon } from './native-addon.js';

/** The two ends of one pipe, as file descriptors of this process. */
export interface PipeEnds {
  readonly read: number;
  readonly write: number;
}

/** A command's stdout and stderr pipes. */
export interface StdioPipes {
  readonly stdout: PipeEnds;
  readonly stderr: PipeEnds;
}

/** The environment variable that turns real pipes off (`1`): commands get socket pairs, as from Node. */
export const SOCKET_STDIO_VARIABLE = 'ERRAND_SOCKET_STDIO';

/** Whether launches here give commands real pipes (the helper is built and not turned off). */
export function realPipesAvailable(): boolean {
  return process.env[SOCKET_STDIO_VARIABLE] !== '1' && loadPipesAddon() !== null;
}

/**
 * A stdout and a stderr pipe, or undefined when launches use socket pairs (see `realPipesAvailable`).
 * Throws what pipe(2) failed with (`EMFILE`, `ENFILE`): a spawn would have failed the same way.
 */
export function createStdioPipes(): StdioPipes | undefined {
  if (!realPipesAvailable()) return undefined;
  const helper = loadPipesAddon()!;
  const [outRead, outWrite] = helper.createPipe();
  let errEnds: [number, number];
  try {
    errEnds = helper.createPipe();
  } catch (error) {
    closeDescriptors(outRead, outWrite);
    throw error;
  }
  return {
    stdout: { read: outRead, write: outWrite },
    stderr: { read: errEnds[0], write: errEnds[1] },
  };
}

/** What `spawnOntoPipes` started: the child, and the read ends of its stdout and stderr as streams. */
export interface PipedSpawn {
  readonly child: ChildProcess;
  readonly stdout: Socket | null;
  readonly stderr: Socket | null;
  /** True when the streams are pipes made here; false when they are the child's own (Node's socket pairs). */
  readonly madeHere: boolean;
}

/**
 * `spawn(file, args, options)` with stdin on `/dev/null` and stdout and stderr on real pipes (Node's
 * socket pairs without the helper). The write ends are closed here once the synchronous spawn returned
 * (the child holds its own copies), every end when it threw (the error is rethrown); a child that never
 * started (`error` without a pid) has its read ends destroyed, as nothing will read them.
 */
export function spawnOntoPipes(
  spawn: (file: string, args: readonly string[], options: SpawnOptions) => ChildProcess,
  file: string,
  args: readonly string[],
  options: Omit<SpawnOptions, 'stdio'>,
): PipedSpawn {
  const pipes = createStdioPipes();
  if (pipes === undefined) {
    const child = spawn(file, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    return {
      child,
      stdout: child.stdout as Socket | null,
      stderr: child.stderr as Socket | null,
      madeHere: false,
    };
  }
  const { stdout: out, stderr: err } = pipes;
  let child: ChildProcess;
  try {
    child = spawn(file, args, { ...options, stdio: ['ignore', out.write, err.write] });
  } catch (error) {
    closeDescriptors(out.write, err.write, out.read, err.read);
    throw error;
  }
  closeDescriptors(out.write, err.write);
  const stdout = readEndStream(out.read);
  const stderr = readEndStream(err.read);
  child.once('error', () => {
    if (child.pid !== undefined) return;
    stdout.destroy();
    stderr.destroy();
  });
  return { child, stdout, stderr, madeHere: true };
}

/** A read end as a stream, the way `child_process` gives a child's stdout: reading from now on. */
export function readEndStream(fd: number): Socket {
  return new Socket({ fd, readable: true, writable: false });
}

/** Closes descriptors of this process, any already closed ignored. */
export function closeDescriptors(...fds: readonly number[]): void {
  for (const fd of fds) {
    try {
      closeSync(fd);
    } catch {
      // Closed already; nothing is lost.
    }
  }
}
