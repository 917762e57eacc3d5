/**
 * Counts the fsync and fdatasync calls a process makes, on every thread (the SQLite store's checkpointer
 * thread syncs too), by attaching `strace -f -c` to it. Without strace, or without the right to attach,
 * the count is `undefined` and the benchmark prints none.
 */
import { spawn } from 'node:child_process';

export interface FsyncCounter {
  /** Detaches and returns the calls counted since attaching. */
  stop(): Promise<number | undefined>;
}

export async function countFsyncs(pid: number): Promise<FsyncCounter | undefined> {
  const tracer = spawn('strace', ['-f', '-c', '-e', 'trace=fsync,fdatasync', '-p', String(pid)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let report = '';
  tracer.stderr.on('data', (chunk: Buffer) => {
    report += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => tracer.on('close', () => resolve()));
  const attached = await new Promise<boolean>((resolve) => {
    tracer.on('error', () => resolve(false));
    tracer.stderr.on('data', () => {
      if (report.includes('attached')) resolve(true);
    });
    void exited.then(() => resolve(false));
  });
  if (!attached) return undefined;
  return {
    async stop() {
      tracer.kill('SIGINT');
      await exited;
      let calls = 0;
      for (const line of report.split('\n')) {
        const match = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(fsync|fdatasync)\s*$/.exec(line);
        if (match) calls += Number(match[1]);
      }
      return calls;
    },
  };
}
