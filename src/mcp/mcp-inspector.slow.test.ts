/**
 * MCP Inspector's `mcpdo` CLI (`tools/call … --task`) against `errand mcp --http`, in both of its protocol
 * eras: `modern` (2026-07-28, the Tasks extension: the server answers with a task, the Inspector polls
 * `tasks/get`) and `legacy` (2025-11-25 task augmentation and `tasks/result`). Inspector needs Node 22: it
 * is fetched into the tool cache with the conformance suite (scripts/mcp-conformance.mjs); where that
 * cannot happen the suite is skipped with one line — an error under ERRAND_REQUIRE_EXTERNALS (CI).
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { externalsRequired } from '../../test/support/external-requirement.js';
import { TextCapture } from '../../test/support/mcp-client.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const script = join(root, 'scripts', 'mcp-conformance.mjs');

function inspector(): { node: string; mcpdo: string } | undefined {
  const found = spawnSync(process.execPath, [script, '--inspector'], { encoding: 'utf8', timeout: 600_000 });
  const answer = JSON.parse(found.stdout.trim() || '{}') as {
    node?: string;
    mcpdo?: string;
    unavailable?: string;
  };
  if (answer.node !== undefined && answer.mcpdo !== undefined)
    return { node: answer.node, mcpdo: answer.mcpdo };
  const line = `Skipping MCP Inspector's --task: ${answer.unavailable ?? found.stderr.trim()}`;
  if (externalsRequired())
    throw new Error(`${line.replace(/^Skipping/, 'Cannot run')} (ERRAND_REQUIRE_EXTERNALS is set)`);
  process.stderr.write(`${line}\n`);
  return undefined;
}

const tools = inspector();
const directories: string[] = [];
let server: ChildProcess | undefined;

afterAll(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((done) => server?.once('exit', done));
    server.kill('SIGTERM');
    await exited;
  }
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

describe.runIf(tools !== undefined)("MCP Inspector's tools/call --task against errand mcp --http", () => {
  it('runs a task-augmented bash call to its result in the modern and the legacy era', {
    timeout: 300_000,
  }, async () => {
    const { node, mcpdo } = tools as { node: string; mcpdo: string };
    const home = realpathSync(mkdtempSync(join(tmpdir(), 'errand-inspector-')));
    directories.push(home);
    server = spawn(
      process.execPath,
      [join(root, 'dist/cli/main.js'), 'mcp', '--http', '127.0.0.1:0', '--home', home],
      {
        cwd: home,
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    const stderr = new TextCapture(server.stderr);
    const url = (await stderr.waitFor(/MCP endpoint at (\S+)/))[1] as string;
    const token = (await stderr.waitFor(/bearer token (\S+)/))[1] as string;
    // mcpdo keeps its catalog and a connection daemon under HOME: a private one, removed afterwards.
    const env = { ...process.env, HOME: home, MCP_CATALOG_PATH: join(home, 'catalog.json') };
    const run = (...args: string[]) =>
      execFileSync(node, [mcpdo, ...args], { env, encoding: 'utf8', timeout: 120_000 });
    try {
      for (const era of ['modern', 'legacy']) {
        run(
          'connect',
          '--connection',
          era,
          '--era',
          era,
          '--header',
          `Authorization: Bearer ${token}`,
          '--',
          url,
        );
        const output = run(
          '--conn',
          era,
          '--format',
          'json',
          'tools/call',
          'bash',
          JSON.stringify({ command: `echo from-${era}; exit 3`, run_in_background: true }),
          '--task',
        );
        const result = JSON.parse(output) as { content: { text: string }[]; isError: boolean };
        expect(result.content[0]?.text).toContain(`from-${era}`);
        expect(result.content[0]?.text).toContain('[exit code: 3]');
        expect(result.isError).toBe(false);
      }
    } finally {
      // The connection daemon outlives its connections: stop it, then wait for (or end) the one this
      // test's HOME started, by its pid.
      spawnSync(node, [mcpdo, 'daemon', 'stop'], { env, timeout: 60_000 });
      for (const pid of daemonsOf(home)) {
        const gone = () => {
          try {
            process.kill(pid, 0);
            return false;
          } catch {
            return true;
          }
        };
        try {
          await expect.poll(gone, { timeout: 5_000 }).toBe(true);
        } catch {
          process.kill(pid, 'SIGKILL');
          await expect.poll(gone, { timeout: 5_000 }).toBe(true);
        }
      }
    }
  });
});

/** Pids of the `mcpdod` daemons started with HOME=`home`. */
function daemonsOf(home: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return (
          readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'mcpdod' &&
          readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`HOME=${home}`)
        );
      } catch {
        return false;
      }
    })
    .map(Number);
}
