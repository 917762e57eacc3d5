/**
 * How long `errand mcp` takes to answer `initialize` (`npm run bench:mcp-initialize`): from the spawn
 * of the server process to the answer read on its stdout, against the smallest MCP server the official
 * SDK makes (bench/minimal-mcp-server.ts) in the same run. BENCH_ROUNDS (default 11) rounds alternate
 * which server goes first; medians are compared. Each errand server gets a fresh data directory.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 11);
const root = new URL('../..', import.meta.url).pathname;

const INITIALIZE = `${JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'bench', version: '1.0.0' },
  },
})}\n`;

/** Milliseconds from spawn to the `initialize` answer. */
function timeInitialize(args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'ignore'] });
    let text = '';
    child.stdout.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes('"id":1')) {
        const elapsed = performance.now() - started;
        child.once('exit', () => resolve(elapsed));
        child.stdin.end();
      }
    });
    child.once('error', reject);
    child.stdin.write(INITIALIZE);
  });
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
  console.log(
    `load average ${loadavg()
      .map((value) => value.toFixed(2))
      .join(' ')}`,
  );
  const errand: number[] = [];
  const minimal: number[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    const home = mkdtempSync(join(tmpdir(), 'errand-bench-init-'));
    const runErrand = async () =>
      errand.push(await timeInitialize([join(root, 'dist/cli/main.js'), 'mcp', '--home', home]));
    const runMinimal = async () =>
      minimal.push(await timeInitialize([join(root, '.bench/bench/minimal-mcp-server.js')]));
    if (round % 2 === 0) {
      await runErrand();
      await runMinimal();
    } else {
      await runMinimal();
      await runErrand();
    }
    rmSync(home, { recursive: true, force: true });
  }
  const errandMs = median(errand);
  const minimalMs = median(minimal);
  console.log(`errand mcp: spawn -> initialize answered, median of ${ROUNDS}: ${errandMs.toFixed(0)} ms`);
  console.log(`minimal SDK server (same run): ${minimalMs.toFixed(0)} ms`);
  console.log(`ratio errand / minimal: ${(errandMs / minimalMs).toFixed(2)}x (target: errand <= 150 ms)`);
  console.log(
    `load average ${loadavg()
      .map((value) => value.toFixed(2))
      .join(' ')}`,
  );
}

await main();
