/** The UTF-8-safe end of a file: what output views and results show of a command's output file. */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

/**
 * The end of a file, at most `maxBytes`, starting on a UTF-8 character boundary and never before
 * `fromBytes` (a reader's cursor: what it read already is not read again; default 0). Only a regular file
 * is read: anything else where the output file was (a directory, a named pipe — opened without blocking)
 * is no output. `startBytes` is where the text starts in the file.
 */
export function readFileTail(
  path: string,
  maxBytes: number,
  fromBytes = 0,
): { text: string; totalBytes: number; startBytes: number } | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) return undefined;
    const totalBytes = stats.size;
    const from = Math.min(totalBytes, Math.max(0, fromBytes));
    const length = Math.min(totalBytes - from, Math.max(0, maxBytes));
    const buffer = Buffer.alloc(length);
    const read = readSync(fd, buffer, 0, length, totalBytes - length);
    let start = 0;
    // A cut inside a character leaves continuation bytes (10xxxxxx) at the start: skip them.
    if (totalBytes > length) while (start < read && ((buffer[start] ?? 0) & 0xc0) === 0x80) start += 1;
    return {
      text: buffer.subarray(start, read).toString('utf8'),
      totalBytes,
      startBytes: totalBytes - length + start,
    };
  } finally {
    closeSync(fd);
  }
}
