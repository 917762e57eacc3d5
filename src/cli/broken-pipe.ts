/**
 * Quiet ends on a closed pipe: `errand install … --print | head` closes the pipe after the lines it wanted,
 * and the next write fails with `EPIPE`. A command that only prints then exits at once, with status 0 and
 * without a word (as `head`-friendly tools do), instead of dying with a stack trace. Commands that run a
 * runtime (mcp, chat, serve, worker, demo, hook) handle their own streams and shut down properly.
 */
import type { Writable } from 'node:stream';

export function exitQuietlyOnBrokenPipe(
  streams: readonly Writable[],
  exit: (code: number) => never = process.exit,
): void {
  for (const stream of streams) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE') exit(0);
      throw error;
    });
  }
}
