/**
 * `errand worker` processes for the scale-out suites: the built CLI, each worker in a process of its own,
 * started and awaited until it says it takes jobs; stopped by signal, reaped, never left behind.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

const cli = new URL('../../dist/cli/main.js', import.meta.url).pathname;

export interface WorkerProcess {
  readonly name: string;
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  stderr(): string;
  /** Sends `signal` and resolves once the process is reaped. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export async function startWorkerProcess(args: {
  readonly url: string;
  readonly prefix: string;
  readonly name: string;
  readonly home: string;
  readonly extra?: readonly string[];
}): Promise<WorkerProcess> {
  const child = spawn(
    process.execPath,
    [
      cli,
      'worker',
      '--redis',
      args.url,
      '--redis-prefix',
      args.prefix,
      '--name',
      args.name,
      '--home',
      args.home,
      ...(args.extra ?? []),
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const onData = () => {
      if (stderr.includes('takes jobs')) {
        child.stderr!.off('data', onData);
        resolve();
      }
    };
    child.stderr!.on('data', onData);
    void exited.then(() => reject(new Error(`worker ${args.name} exited early: ${stderr}`)));
  });
  return {
    name: args.name,
    child,
    exited,
    stderr: () => stderr,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/** Pids of live processes whose command line or environment holds `token`. */
export function processesWith(token: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    for (const file of ['cmdline', 'environ']) {
      try {
        if (readFileSync(`/proc/${entry}/${file}`).includes(token)) {
          found.push(Number(entry));
          break;
        }
      } catch {
        // Gone meanwhile, or not ours to read.
      }
    }
  }
  return found.filter((pid) => pid !== process.pid);
}
