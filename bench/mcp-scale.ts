/**
 * Thousands of live commands in one `errand mcp` (`npm run bench:mcp-scale`), against raw Node `spawn`
 * in the same run. For each size N (BENCH_MCP_SIZES, default 1000,5000):
 * - Errand: the built `errand mcp --max-tasks N` driven by the MCP client SDK over stdio starts N
 *   background commands that each wait for one byte of a FIFO this process holds open (a `sleep` that
 *   ends when told), BENCH_MCP_WINDOW (16) calls in flight; once all are running the N bytes are written
 *   and every command ends at once. Printed: starts admitted N/N, endings pushed N/N (logging
 *   notifications received), descriptors and resident memory of the server per live command, host
 *   memory per live command (the server's growth in proportional set size plus the commands' own, from
 *   `/proc/<pid>/smaps_rollup`), and commands run per second (N over the time from the first start to
 *   the last ending pushed).
 * - raw Node: the same N commands spawned by `child_process.spawn('bash', ['-c', …])` with piped stdio
 *   from this process, the same FIFO, the same measure (N over first spawn → last `exit`).
 * The commands differ by a comment (`# <n>`), so the duplicate guard admits each. BENCH_MCP_RUNS (1)
 * repeats the whole comparison and ends with the min and median of each ratio over the runs.
 * The soft `ulimit -n` of this process is raised to the hard limit (Node does so at start; printed), and
 * the server inherits it.
 */
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  type CallToolResult,
  CallToolResultSchema,
  LoggingMessageNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

const SIZES = (process.env.BENCH_MCP_SIZES ?? '1000,5000').split(',').map(Number);
const RUNS = Number(process.env.BENCH_MCP_RUNS ?? 1);
const WINDOW = Number(process.env.BENCH_MCP_WINDOW ?? 16);
/** How long the endings may take to be pushed before the figure is printed as it stands. */
const END_TIMEOUT_MS = Number(process.env.BENCH_MCP_END_TIMEOUT_MS ?? 600_000);
const root = new URL('../..', import.meta.url).pathname;
const CLI = join(root, 'dist', 'cli', 'main.js');
/** The n-th command: each waits for one byte of the gate; the comment makes it distinct. */
const command = (index: number) => `read -r -N 1 _ < gate # ${index}`;

function openFileLimits(pid: number | 'self'): string {
  const line = readFileSync(`/proc/${pid}/limits`, 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('Max open files'));
  const [soft, hard] = (line ?? '').split(/\s{2,}/).slice(1, 3);
  return `soft ${soft}, hard ${hard}`;
}

const descriptorsOf = (pid: number | 'self') => readdirSync(`/proc/${pid}/fd`).length;

function residentKiB(pid: number | 'self'): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('VmRSS:'));
  return Number(/(\d+)/.exec(line ?? '')?.[1] ?? 0);
}

/** Proportional set size of a process, KiB (its shared pages divided among their sharers); 0 once gone. */
function proportionalKiB(pid: number | 'self'): number {
  try {
    const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    return Number(/^Pss:\s+(\d+)/m.exec(text)?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** The children of `pid`, from every thread's children list. */
function childrenOf(pid: number | 'self'): number[] {
  const children: number[] = [];
  for (const thread of readdirSync(`/proc/${pid}/task`)) {
    try {
      const text = readFileSync(`/proc/${pid}/task/${thread}/children`, 'utf8').trim();
      if (text) children.push(...text.split(' ').map(Number));
    } catch {
      // The thread ended meanwhile.
    }
  }
  return children;
}

const sumOf = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);

function gateIn(directory: string): { path: string; holder: number } {
  const path = join(directory, 'gate');
  execFileSync('mkfifo', [path]);
  return { path, holder: openSync(path, 'r+') };
}

async function waitUntil(condition: () => boolean, what: string, timeoutMs = 300_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

interface Figures {
  readonly admitted: number;
  readonly ended: number;
  readonly descriptorsPerCommand: number;
  readonly kibPerCommand: number;
  /** The spawner's growth in proportional set size plus the commands' own, per command. */
  readonly hostKibPerCommand: number;
  readonly perSecond: number;
  readonly failure?: string;
}

async function rawNode(size: number): Promise<Figures> {
  const directory = mkdtempSync(join(tmpdir(), 'errand-bench-raw-'));
  const gate = gateIn(directory);
  // The spawner is this process: what earlier sides left in its heap must not count as a saving.
  (globalThis as { gc?: () => void }).gc?.();
  const baseDescriptors = descriptorsOf('self');
  const baseKiB = residentKiB('self');
  const basePss = proportionalKiB('self');
  const pids: number[] = [];
  let ended = 0;
  let admitted = 0;
  let failure: string | undefined;
  const started = performance.now();
  for (let index = 0; index < size; index += 1) {
    try {
      const child = spawn('bash', ['-c', command(index)], {
        cwd: directory,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      if (child.pid !== undefined) pids.push(child.pid);
      child.on('error', (error) => {
        failure ??= error.message;
      });
      child.stdout.resume();
      child.stderr.resume();
      child.on('exit', () => {
        ended += 1;
      });
      admitted += 1;
    } catch (error) {
      failure ??= (error as Error).message;
      break;
    }
  }
  const descriptorsPerCommand = (descriptorsOf('self') - baseDescriptors) / Math.max(1, admitted);
  const kibPerCommand = (residentKiB('self') - baseKiB) / Math.max(1, admitted);
  const hostKibPerCommand =
    (proportionalKiB('self') - basePss + sumOf(pids.map(proportionalKiB))) / Math.max(1, admitted);
  writeSync(gate.holder, Buffer.alloc(size, 'x'));
  await waitUntil(() => ended >= admitted, 'raw exits');
  const perSecond = (ended / (performance.now() - started)) * 1000;
  closeSync(gate.holder);
  rmSync(directory, { recursive: true, force: true });
  return {
    admitted,
    ended,
    descriptorsPerCommand,
    kibPerCommand,
    hostKibPerCommand,
    perSecond,
    ...(failure ? { failure } : {}),
  };
}

async function errandMcp(size: number): Promise<Figures> {
  const directory = mkdtempSync(join(tmpdir(), 'errand-bench-mcp-'));
  const home = join(directory, 'home');
  const gate = gateIn(directory);
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', '--home', home, '--cwd', directory, '--max-tasks', String(size)],
    env: process.env as Record<string, string>,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const client = new Client({ name: 'errand-bench', version: '1.0.0' });
  const pushed = new Set<string>();
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    const taskId = (notification.params.data as { taskId?: string } | undefined)?.taskId;
    if (taskId) pushed.add(taskId);
  });
  await client.connect(transport);
  const pid = transport.pid!;
  // Warm: one command through the whole path before the clock starts.
  await client.callTool({ name: 'bash', arguments: { command: 'true' } }, CallToolResultSchema);
  const baseDescriptors = descriptorsOf(pid);
  const baseKiB = residentKiB(pid);
  const basePss = proportionalKiB(pid);
  const baseChildren = new Set(childrenOf(pid));
  let admitted = 0;
  let refused = 0;
  let failure: string | undefined;
  let issued = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: WINDOW }, async () => {
      while (issued < size) {
        const index = issued;
        issued += 1;
        const result = await client.callTool(
          { name: 'bash', arguments: { command: command(index), run_in_background: true } },
          CallToolResultSchema,
        );
        const text = (result as CallToolResult).content
          .map((block) => (block.type === 'text' ? block.text : ''))
          .join('\n');
        if (/Started bash-\d+ in the background/.test(text)) admitted += 1;
        else {
          refused += 1;
          failure ??= text.slice(0, 300);
        }
      }
    }),
  );
  const descriptorsPerCommand = (descriptorsOf(pid) - baseDescriptors) / Math.max(1, admitted);
  const kibPerCommand = (residentKiB(pid) - baseKiB) / Math.max(1, admitted);
  const commands = childrenOf(pid).filter((child) => !baseChildren.has(child));
  const hostKibPerCommand =
    (proportionalKiB(pid) - basePss + sumOf(commands.map(proportionalKiB))) / Math.max(1, admitted);
  writeSync(gate.holder, Buffer.alloc(size, 'x'));
  await waitUntil(() => pushed.size >= admitted, 'pushed endings', END_TIMEOUT_MS).catch((error: Error) => {
    failure ??= error.message;
  });
  const perSecond = (pushed.size / (performance.now() - started)) * 1000;
  await client.close();
  closeSync(gate.holder);
  rmSync(directory, { recursive: true, force: true });
  if (refused > 0 && stderr) failure = `${failure} | stderr: ${stderr.slice(0, 300)}`;
  return {
    admitted,
    ended: pushed.size,
    descriptorsPerCommand,
    kibPerCommand,
    hostKibPerCommand,
    perSecond,
    ...(failure ? { failure } : {}),
  };
}

interface Ratios {
  readonly perSecond: number;
  readonly descriptors: number;
  readonly memory: number;
  readonly hostMemory: number;
}

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

async function main(): Promise<void> {
  console.log(
    `load average ${loadavg()
      .map((value) => value.toFixed(2))
      .join(' ')}`,
  );
  console.log(`ulimit -n of this process (and the server it starts): ${openFileLimits('self')}`);
  const ratios = new Map<number, Ratios[]>();
  for (let run = 1; run <= RUNS; run += 1) {
    if (RUNS > 1) console.log(`\nrun ${run} of ${RUNS}`);
    for (const size of SIZES) {
      // Alternate which side goes first, so neither always runs on a cooler machine.
      const order = (size / 1000 + run) % 2 === 0 ? ['errand', 'raw'] : ['raw', 'errand'];
      const figures: Record<string, Figures> = {};
      for (const side of order) figures[side] = side === 'raw' ? await rawNode(size) : await errandMcp(size);
      const raw = figures.raw!;
      const errand = figures.errand!;
      const ratio: Ratios = {
        perSecond: errand.perSecond / raw.perSecond,
        descriptors: errand.descriptorsPerCommand / raw.descriptorsPerCommand,
        memory: errand.kibPerCommand / raw.kibPerCommand,
        hostMemory: errand.hostKibPerCommand / raw.hostKibPerCommand,
      };
      ratios.set(size, [...(ratios.get(size) ?? []), ratio]);
      console.log(`\n${size} live commands (${order.join(' first, then ')})`);
      console.log(
        `  errand mcp: starts admitted ${errand.admitted}/${size}, endings pushed ${errand.ended}/${size}, ` +
          `${errand.perSecond.toFixed(0)} commands/s, ${errand.descriptorsPerCommand.toFixed(2)} descriptors, ` +
          `${errand.kibPerCommand.toFixed(1)} KiB resident in the server and ${errand.hostKibPerCommand.toFixed(1)} KiB ` +
          'of host memory per live command',
      );
      console.log(
        `  raw spawn:  started ${raw.admitted}/${size}, exits ${raw.ended}/${size}, ` +
          `${raw.perSecond.toFixed(0)} commands/s, ${raw.descriptorsPerCommand.toFixed(2)} descriptors, ` +
          `${raw.kibPerCommand.toFixed(1)} KiB resident in the spawner and ${raw.hostKibPerCommand.toFixed(1)} KiB ` +
          'of host memory per live command',
      );
      console.log(
        `  ratios (errand / raw): commands/s ${ratio.perSecond.toFixed(2)}x (target >= 0.9), descriptors ` +
          `${ratio.descriptors.toFixed(2)}x (<= 1, i.e. <= 2 per command), host memory ${ratio.hostMemory.toFixed(2)}x ` +
          `(<= 1.2), the spawner's own resident memory ${ratio.memory.toFixed(2)}x`,
      );
      if (errand.failure) console.log(`  errand: ${errand.failure}`);
      if (raw.failure) console.log(`  raw: ${raw.failure}`);
    }
  }
  if (RUNS > 1) {
    console.log(`\nover ${RUNS} runs, min / median of each ratio (errand / raw):`);
    for (const [size, list] of ratios) {
      const line = (key: keyof Ratios) =>
        `${Math.min(...list.map((entry) => entry[key])).toFixed(2)} / ${median(list.map((entry) => entry[key])).toFixed(2)}`;
      console.log(
        `  ${size} live: commands/s ${line('perSecond')}, descriptors ${line('descriptors')}, host memory ` +
          `${line('hostMemory')}, the spawner's resident memory ${line('memory')}`,
      );
    }
  }
  console.log(
    `\nload average ${loadavg()
      .map((value) => value.toFixed(2))
      .join(' ')}`,
  );
}

await main();
