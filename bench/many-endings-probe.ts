/**
 * Many endings at once in one runtime (`node .bench/bench/many-endings-probe.js [N]`, default 3000): the
 * MCP runtime with `maxTasks` N starts N background commands that each wait for one byte of a FIFO, then
 * writes the N bytes, so all end together, and prints how long the starts took and how long until every
 * ending was queued in the session. Run it with `--cpu-prof` to see where the endings' time goes.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMcpRuntime } from '../src/mcp/index.js';

const COUNT = Number(process.argv[2] ?? 3000);
const directory = mkdtempSync(join(tmpdir(), 'errand-bench-endings-'));
const gate = join(directory, 'gate');
execFileSync('mkfifo', [gate]);
const holder = openSync(gate, 'r+');
const runtime = await createMcpRuntime({ home: join(directory, 'home'), maxTasks: COUNT, cwd: directory });
try {
  const session = runtime.createSession({ title: 'endings' });
  let queued = 0;
  session.on((event) => {
    if (event.type === 'notification-queued') queued += 1;
  });
  console.log(
    `load average ${loadavg()
      .map((value) => value.toFixed(2))
      .join(' ')}`,
  );
  let began = performance.now();
  for (let index = 0; index < COUNT; index += 1) {
    await runtime.bash.start({ command: 'read -r -N 1 _ < gate', owner: session.owner, cwd: directory });
  }
  console.log(`${COUNT} started in ${(performance.now() - began).toFixed(0)} ms`);
  began = performance.now();
  writeSync(holder, Buffer.alloc(COUNT, 'x'));
  while (queued < COUNT) await new Promise((resolve) => setTimeout(resolve, 20));
  console.log(`${queued} endings queued ${(performance.now() - began).toFixed(0)} ms after the release`);
} finally {
  await runtime.dispose();
  closeSync(holder);
  rmSync(directory, { recursive: true, force: true });
}
