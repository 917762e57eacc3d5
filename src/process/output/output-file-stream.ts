/**
 * An output file as a task's byte stream (`TaskOutputStream`): what the bash and pty producers expose for
 * observation cursors. The file holds the stream from its first byte up to the writer's cap, so nothing
 * is ever dropped from its start; readers see what completed writes put there (`writtenBytes`), read by
 * path with a descriptor of their own, so any number of them never disturb the writer or each other.
 */
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import type { TaskOutputChunk, TaskOutputStream } from '../../tasks/index.js';
import type { OutputFileWriter } from './output-file-writer.js';

const READ_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW;

const NO_BYTES = new Uint8Array(0);

/**
 * At most `maxBytes` of the regular file at `path` from `offset`. A file that is missing (not created
 * yet, or deleted), not a regular file, or unreadable yields no bytes: a reader sees no output, never an
 * error.
 */
export async function readFileRange(path: string, offset: number, maxBytes: number): Promise<Uint8Array> {
  if (maxBytes <= 0) return NO_BYTES;
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, READ_FLAGS);
  } catch {
    return NO_BYTES;
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile() || offset >= stats.size) return NO_BYTES;
    const length = Math.min(maxBytes, stats.size - offset);
    const buffer = Buffer.allocUnsafe(length);
    let filled = 0;
    while (filled < length) {
      const { bytesRead } = await handle.read(buffer, filled, length - filled, offset + filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    return filled === length ? buffer : buffer.subarray(0, filled);
  } catch {
    return NO_BYTES;
  } finally {
    await handle.close().catch(() => {});
  }
}

/** The byte stream of the file `writer` writes: from 0 to what it wrote so far. */
export function outputFileStream(writer: OutputFileWriter): TaskOutputStream {
  return {
    get end() {
      return writer.writtenBytes;
    },
    retainedFrom: 0,
    location: writer.path,
    async read(offset: number, maxBytes: number): Promise<TaskOutputChunk> {
      // Never past what the writer finished: a write in flight may have reached the file only partly.
      const limit = Math.min(maxBytes, writer.writtenBytes - offset);
      return { from: offset, bytes: await readFileRange(writer.path, offset, limit) };
    },
    onGrow: (listener) => writer.onGrow(listener),
  };
}
