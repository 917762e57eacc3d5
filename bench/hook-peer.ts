/**
 * Hook socket peer check benchmark: what naming the peer of a connection (`peerProcessesOf`: one `ss -xp`
 * listing, shared by checks that arrive together) adds to a hook's round trip. Baseline, in the same run:
 * a connection accepted and answered without the check. Sequential connections, then 8 at once; p50 and
 * p90 in ms and the ratio to the baseline. Run: `npm run bench:hook-peer`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { peerProcessesOf } from '../src/process/index.js';

const ROUNDS = Number(process.env.ROUNDS ?? 40);

function percentile(values: number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? 0;
}

async function serve(path: string, check: boolean): Promise<Server> {
  const server = createServer((socket: Socket) => {
    const answer = () => socket.end('ok\n');
    if (check) void peerProcessesOf(socket).then(answer, answer);
    else answer();
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return server;
}

function roundTrip(path: string): Promise<number> {
  const start = performance.now();
  return new Promise((resolve) => {
    const socket = createConnection(path);
    socket.on('data', () => {});
    socket.on('close', () => resolve(performance.now() - start));
    socket.on('error', () => resolve(performance.now() - start));
  });
}

async function measure(path: string, parallel: number): Promise<number[]> {
  const times: number[] = [];
  for (let round = 0; round < ROUNDS; round += parallel) {
    times.push(...(await Promise.all(Array.from({ length: parallel }, () => roundTrip(path)))));
  }
  return times;
}

const directory = mkdtempSync(join(tmpdir(), 'errand-bench-peer-'));
try {
  for (const parallel of [1, 8]) {
    const results: Record<string, number[]> = {};
    for (const check of [false, true]) {
      const path = join(directory, `${check ? 'checked' : 'plain'}-${parallel}.sock`);
      const server = await serve(path, check);
      await measure(path, parallel); // warm-up
      results[check ? 'checked' : 'plain'] = await measure(path, parallel);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    const plain = results.plain!;
    const checked = results.checked!;
    const p50 = percentile(checked, 0.5);
    const base = Math.max(percentile(plain, 0.5), 0.001);
    console.log(
      `${parallel} at a time: without the check p50 ${base.toFixed(2)} ms p90 ${percentile(plain, 0.9).toFixed(2)} ms; ` +
        `with it p50 ${p50.toFixed(2)} ms p90 ${percentile(checked, 0.9).toFixed(2)} ms (${(p50 / base).toFixed(1)}x)`,
    );
  }
} finally {
  rmSync(directory, { recursive: true, force: true });
}
