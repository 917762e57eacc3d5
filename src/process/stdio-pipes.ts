/**
 * Real pipes for a command's stdout and stderr. `child_process` gives a child's stdio socket pairs, and
 * on Linux a program that opens `/dev/stdout` or `/dev/stderr` (`echo x > /dev/stderr`,
 * `tee /dev/stdout`, `cmd -o /dev/stdout`) fails on a socket with "No such device or address"; on a
 * pipe it works, as it does in a terminal's shell. Errand's native helper (`native/pipes.c`, built by
 * node-gyp at install) makes the pipes; a launch hands the write ends to the child as its descriptors 1
 * and 2, closes them here, and reads the read ends. Both ends are close-on-exec, so no other child
 * inherits them.
 *
 * Through the spawner sidecar the runtime makes the pipes and the sidecar opens their write sides
 * through the runtime's /proc entry (`createSharedReadEnds`, `openSharedStdio`), so no pipe handle has to
 * come back over the channel.
 *
 * Without the helper (it was not built, or `ERRAND_SOCKET_STDIO=1` asks for the old behaviour) a launch
 * falls back to Node's socket pairs, and everything but opening those two paths works the same.
 */
import { closeSync, existsSync, fstatSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SharedPipe, SharedStdio } from './lifeline-protocol.js';

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

interface NativePipes {
  createPipe(): [number, number];
  /** Two pipes' read ends and their inodes, their write ends closed: [out, outIno, err, errIno]. */
  createReadEnds(): [number, string, number, string];
  /** A blocking, close-on-exec descriptor writing to the pipe at `path`; a FIFO with no reader throws ENXIO. */
  openForWriting(path: string): number;
}

const ADDON = join('build', 'Release', 'errand_pipes.node');
/** How many directories above this module the package root may be (src/process, dist/process, ...). */
const MAX_LEVELS_UP = 4;

let native: NativePipes | null | undefined;

function loadNative(): NativePipes | null {
  if (native !== undefined) return native;
  native = null;
  let directory = dirname(fileURLToPath(import.meta.url));
  for (let level = 0; level <= MAX_LEVELS_UP; level += 1) {
    const candidate = join(directory, ADDON);
    if (existsSync(candidate)) {
      try {
        const loaded = createRequire(import.meta.url)(candidate) as Partial<NativePipes>;
        if (
          typeof loaded.createPipe === 'function' &&
          typeof loaded.createReadEnds === 'function' &&
          typeof loaded.openForWriting === 'function'
        )
          native = loaded as NativePipes;
      } catch {
        // Built for another Node or platform: socket pairs it is.
      }
      break;
    }
    const parent = dirname(directory);
    if (parent === directory) break;
    directory = parent;
  }
  return native;
}

/** Whether launches here give commands real pipes (the helper is built and not turned off). */
export function realPipesAvailable(): boolean {
  return process.env[SOCKET_STDIO_VARIABLE] !== '1' && loadNative() !== null;
}

/**
 * A stdout and a stderr pipe, or undefined when launches use socket pairs (see `realPipesAvailable`).
 * Throws what pipe(2) failed with (`EMFILE`, `ENFILE`): a spawn would have failed the same way.
 */
export function createStdioPipes(): StdioPipes | undefined {
  if (!realPipesAvailable()) return undefined;
  const helper = native!;
  const [outRead, outWrite] = helper.createPipe();
  let errEnds: [number, number];
  try {
    errEnds = helper.createPipe();
  } catch (error) {
    closeQuietly(outRead);
    closeQuietly(outWrite);
    throw error;
  }
  return {
    stdout: { read: outRead, write: outWrite },
    stderr: { read: errEnds[0], write: errEnds[1] },
  };
}

/** Closes this process's write ends, once the spawn gave the child its own copies (or failed). */
export function closeWriteEnds(pipes: StdioPipes): void {
  closeQuietly(pipes.stdout.write);
  closeQuietly(pipes.stderr.write);
}

/** Closes every end still held here: the launch failed before the read ends became streams. */
export function closeAllEnds(pipes: StdioPipes): void {
  closeWriteEnds(pipes);
  closeQuietly(pipes.stdout.read);
  closeQuietly(pipes.stderr.read);
}

/** The read ends of a command's stdout and stderr pipes, for a spawner to open the write sides of. */
export interface SharedReadEnds {
  readonly stdout: SharedPipe;
  readonly stderr: SharedPipe;
}

/**
 * Two pipes whose write ends are closed here at once: a spawner process opens them again through
 * `/proc/<this pid>/fd/<read end>` (see `openSharedStdio`), so the command writes into pipes this process
 * made and no pipe handle has to come back over a channel. Undefined when launches use socket pairs.
 * The read ends are not read until the command holds the write sides (an end of file would come first).
 */
export function createSharedReadEnds(): SharedReadEnds | undefined {
  if (!realPipesAvailable()) return undefined;
  const [outFd, outIno, errFd, errIno] = native!.createReadEnds();
  return { stdout: { fd: outFd, ino: outIno }, stderr: { fd: errFd, ino: errIno } };
}

/** Closes both read ends of shared pipes that no stream took. */
export function closeSharedReadEnds(ends: SharedReadEnds): void {
  closeQuietly(ends.stdout.fd);
  closeQuietly(ends.stderr.fd);
}

/**
 * In the spawner: the write sides of the runtime's shared pipes, opened through its /proc entry and
 * checked to be the very pipes it named (a FIFO with that inode), or undefined when they cannot be (the
 * runtime is gone, its /proc entry is closed to this process): the caller then makes pipes itself.
 * The open never waits for a reader: Linux opens an anonymous pipe through /proc at once, and a named
 * FIFO without a reader (a descriptor number reused since) fails it.
 */
export function openSharedStdio(stdio: SharedStdio): { stdout: number; stderr: number } | undefined {
  const stdout = openSharedWriteSide(stdio.pid, stdio.stdout);
  if (stdout === undefined) return undefined;
  const stderr = openSharedWriteSide(stdio.pid, stdio.stderr);
  if (stderr === undefined) {
    closeQuietly(stdout);
    return undefined;
  }
  return { stdout, stderr };
}

function openSharedWriteSide(pid: number, pipe: SharedPipe): number | undefined {
  const helper = loadNative();
  if (helper === null) return undefined;
  let fd: number;
  try {
    fd = helper.openForWriting(`/proc/${pid}/fd/${pipe.fd}`);
  } catch {
    return undefined;
  }
  try {
    const stat = fstatSync(fd, { bigint: true });
    if (stat.isFIFO() && String(stat.ino) === pipe.ino) return fd;
  } catch {
    // Not checkable: not used.
  }
  closeQuietly(fd);
  return undefined;
}

/** A read end as a stream, the way `child_process` gives a child's stdout: reading from now on. */
export function readEndStream(fd: number): Socket {
  return new Socket({ fd, readable: true, writable: false });
}

/** Closes descriptors of this process, any already closed ignored. */
export function closeDescriptors(...fds: readonly number[]): void {
  for (const fd of fds) closeQuietly(fd);
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Closed already; nothing is lost.
  }
}
