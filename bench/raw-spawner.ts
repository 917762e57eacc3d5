/**
 * A baseline of `bench:bash`: raw `child_process.spawn` from a small Node process (nothing else loaded),
 * so the raw figure is not the cost of forking the benchmark's own heavy heap. Reads `<count> <shell>`
 * lines on stdin; for each, spawns `<shell> -c true` that many times in sequence (own process group,
 * stdin on /dev/null, stdout and stderr piped and read, finished once it exited and both pipes closed)
 * and prints the milliseconds per spawn.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

function finished(child: ChildProcess): Promise<void> {
  const closed = (stream: NodeJS.ReadableStream | null) =>
    stream ? new Promise<void>((resolve) => stream.once('close', () => resolve())) : Promise.resolve();
  child.stdout?.resume();
  child.stderr?.resume();
  return Promise.all([
    new Promise<void>((resolve) => child.once('exit', () => resolve())),
    closed(child.stdout),
    closed(child.stderr),
  ]).then(() => undefined);
}

for await (const line of createInterface({ input: process.stdin })) {
  const [count, shell] = line.split(' ') as [string, string];
  const began = performance.now();
  for (let index = 0; index < Number(count); index += 1) {
    await finished(spawn(shell, ['-c', 'true'], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] }));
  }
  process.stdout.write(`${(performance.now() - began) / Number(count)}\n`);
}
