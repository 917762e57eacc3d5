/**
 * How long `errand mcp` takes to answer `initialize`, and then its first `tools/list`
 * (`npm run bench:mcp-initialize`): from the spawn of the server process to each answer read on its
 * stdout, against the smallest MCP server the official SDK makes (bench/minimal-mcp-server.ts) and
 * the peers' servers (shell-command MCP servers from the npm registry, installed into `.bench/peers`
 * on the first run with `npm install`; `BENCH_PEERS=0` leaves them out), all in the same run.
 * BENCH_ERRAND_BEFORE names another build's `dist/cli/main.js` to time beside this one.
 * BENCH_ROUNDS (default 11) rounds rotate which server goes first; medians are compared. Each errand
 * server gets a fresh data directory.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 11);
const root = new URL('../..', import.meta.url).pathname;
const PEERS_DIR = process.env.BENCH_PEERS_DIR ?? join(root, '.bench/peers');

/** The peers: MCP servers that run shell commands for a client, as published (name, version, bin). */
const PEERS = [
  { name: 'bash-command-mcp', version: '0.1.5', bin: 'dist/index.js' },
  { name: 'mcp-server-commands', version: '0.5.0', bin: 'build/index.js' },
  { name: '@mako10k/mcp-shell-server', version: '2.7.1', bin: 'dist/index.js' },
  { name: '@wonderwhy-er/desktop-commander', version: '0.2.52', bin: 'dist/index.js' },
] as const;

const line = (message: object) => `${JSON.stringify(message)}\n`;
const INITIALIZE = line({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'bench', version: '1.0.0' },
  },
});
const INITIALIZED = line({ jsonrpc: '2.0', method: 'notifications/initialized' });
const TOOLS_LIST = line({ jsonrpc: '2.0', id: 2, method: 'tools/list' });

interface Timing {
  initialize: number;
  toolsList: number;
}

/** Milliseconds from spawn to the `initialize` answer and to the `tools/list` answer sent after it. */
function timeServer(command: string[], cwd: string): Promise<Timing> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, command, {
      cwd,
      stdio: ['pipe', 'pipe', 'ignore'],
      env: { ...process.env, PUPPETEER_SKIP_DOWNLOAD: '1' },
    });
    let text = '';
    let initialize: number | undefined;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${command.join(' ')}: no answer within 60 s`));
    }, 60_000);
    child.stdout.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (initialize === undefined && /"id":\s*1\b/.test(text)) {
        initialize = performance.now() - started;
        child.stdin.write(INITIALIZED + TOOLS_LIST);
      }
      if (initialize !== undefined && /"id":\s*2\b/.test(text)) {
        const toolsList = performance.now() - started;
        clearTimeout(timer);
        child.once('exit', () => resolve({ initialize: initialize as number, toolsList }));
        child.stdin.end();
        // A peer that ignores the end of its input is stopped.
        setTimeout(() => child.kill('SIGTERM'), 2_000).unref();
      }
    });
    child.once('error', reject);
    child.stdin.write(INITIALIZE);
  });
}

/** The peers' entry points, installed on the first run; those that could not be installed are left out. */
function installPeers(): { name: string; entry: string }[] {
  if (process.env.BENCH_PEERS === '0') return [];
  const entries = PEERS.map((peer) => ({
    name: `${peer.name}@${peer.version}`,
    entry: join(PEERS_DIR, 'node_modules', peer.name, peer.bin),
    version: peer.version,
    package: peer.name,
  }));
  const installed = (entry: (typeof entries)[number]) => {
    try {
      const manifest = join(PEERS_DIR, 'node_modules', entry.package, 'package.json');
      return existsSync(entry.entry) && JSON.parse(readFileSync(manifest, 'utf8')).version === entry.version;
    } catch {
      return false;
    }
  };
  const missing = entries.filter((entry) => !installed(entry));
  if (missing.length > 0) {
    mkdirSync(PEERS_DIR, { recursive: true });
    if (!existsSync(join(PEERS_DIR, 'package.json'))) {
      writeFileSync(join(PEERS_DIR, 'package.json'), '{"name":"errand-bench-peers","private":true}\n');
    }
    console.log(`installing the peers into ${PEERS_DIR}: ${missing.map((entry) => entry.name).join(', ')}`);
    try {
      execFileSync(
        'npm',
        [
          'install',
          '--no-audit',
          '--no-fund',
          '--ignore-scripts',
          ...missing.map((entry) => `${entry.package}@${entry.version}`),
        ],
        { cwd: PEERS_DIR, stdio: 'ignore', env: { ...process.env, PUPPETEER_SKIP_DOWNLOAD: '1' } },
      );
    } catch (error) {
      console.log(`npm install failed (${(error as Error).message.split('\n')[0]}); peers left out`);
    }
  }
  return entries.filter(installed).map((entry) => ({ name: entry.name, entry: entry.entry }));
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
  const peers = installPeers();
  console.log(
    `load average ${loadavg()
      .map((value) => value.toFixed(2))
      .join(' ')}`,
  );
  const work = mkdtempSync(join(tmpdir(), 'errand-bench-init-cwd-'));
  const servers: { name: string; args: (home: string) => string[] }[] = [
    { name: 'errand mcp', args: (home) => [join(root, 'dist/cli/main.js'), 'mcp', '--home', home] },
    // Another build's CLI (say, the commit before a change) beside this one, in the same rounds.
    ...(process.env.BENCH_ERRAND_BEFORE
      ? [
          {
            name: 'errand mcp (BENCH_ERRAND_BEFORE)',
            args: (home: string) => [process.env.BENCH_ERRAND_BEFORE!, 'mcp', '--home', home],
          },
        ]
      : []),
    { name: 'minimal SDK server', args: () => [join(root, '.bench/bench/minimal-mcp-server.js')] },
    ...peers.map((peer) => ({ name: peer.name, args: () => [peer.entry] })),
  ];
  const timings = new Map<string, Timing[]>(servers.map((server) => [server.name, []]));
  const failed = new Set<string>();
  for (let round = 0; round < ROUNDS; round += 1) {
    const home = mkdtempSync(join(tmpdir(), 'errand-bench-init-'));
    // Each round starts with another server, so none is always the first after a pause.
    for (let index = 0; index < servers.length; index += 1) {
      const server = servers[(round + index) % servers.length]!;
      if (failed.has(server.name)) continue;
      try {
        timings.get(server.name)!.push(await timeServer(server.args(home), work));
      } catch (error) {
        console.log(`${server.name}: ${(error as Error).message}; left out`);
        failed.add(server.name);
      }
    }
    rmSync(home, { recursive: true, force: true });
  }
  rmSync(work, { recursive: true, force: true });
  const minimal = timings.get('minimal SDK server')!;
  const minimalInit = median(minimal.map((timing) => timing.initialize));
  const minimalTools = median(minimal.map((timing) => timing.toolsList));
  console.log(
    `spawn -> answer, median of ${ROUNDS} rounds (ratio to the minimal SDK server of the same run):`,
  );
  for (const server of servers) {
    const runs = timings.get(server.name)!;
    if (failed.has(server.name) || runs.length === 0) continue;
    const init = median(runs.map((timing) => timing.initialize));
    const tools = median(runs.map((timing) => timing.toolsList));
    console.log(
      `  ${server.name.padEnd(40)} initialize ${init.toFixed(0).padStart(5)} ms (${(init / minimalInit).toFixed(2)}x)` +
        `   tools/list ${tools.toFixed(0).padStart(5)} ms (${(tools / minimalTools).toFixed(2)}x)`,
    );
  }
  const errand = timings.get('errand mcp')!;
  const errandInit = median(errand.map((timing) => timing.initialize));
  const peerInits = peers
    .filter((peer) => !failed.has(peer.name))
    .map((peer) => median(timings.get(peer.name)!.map((timing) => timing.initialize)));
  if (peerInits.length > 0) {
    console.log(
      `errand mcp / fastest peer, initialize: ${(errandInit / Math.min(...peerInits)).toFixed(2)}x (target: errand <= 150 ms, at or ahead of the peers)`,
    );
  }
  console.log(
    `load average ${loadavg()
      .map((value) => value.toFixed(2))
      .join(' ')}`,
  );
}

await main();
