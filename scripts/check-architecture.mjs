#!/usr/bin/env node
// Enforces Errand's layering: imports only point down the layer list, a producer imports a sibling
// producer only through its index, process and producer modules never read the clock themselves, every
// export is named (no `export *`), and no module imports itself through a circle. Prints each violation
// and exits non-zero when there is one.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(dirname(new URL(import.meta.url).pathname), '..');
const sourceRoot = join(root, 'src');

// Lower rank = lower layer. A module may import its own unit or any unit of a lower or equal rank;
// circles are caught separately below.
const layers = [
  ['tasks', 0],
  ['text', 0],
  // Processes, pipes and output files: under every producer, above nothing but the contract and text.
  ['process', 1],
  // Tracing: a port over OpenTelemetry and the task span, used by the registry, tools and sessions.
  ['tracing', 1],
  ['registry', 2],
  ['store', 2],
  ['tools', 3],
  ['notifications', 3],
  ['events', 3],
  ['producers/bash', 4],
  ['producers/pty', 4],
  // Notifications for the person (webhook, desktop, browser), built on the background events.
  ['notify-person', 4],
  // Schedules: time as a task kind; their firings reach sessions through a port the session layer gives.
  ['producers/schedule', 4],
  ['session', 5],
  // Scale-out: the Redis provider and remote commands (runtime side), the worker that runs them.
  ['redis', 5],
  ['worker', 6],
  ['producers/subagent', 6],
  ['producers/workflow', 6],
  ['adapters', 6],
  ['server', 7],
  ['host', 7],
  // Client hooks: the contracts and the socket protocol both the MCP server and the command line speak.
  ['hooks', 8],
  ['mcp', 8],
  ['testing', 9],
  ['cli', 10],
  // The package's entries: the root, and `errand/format` for custom notification formatters.
  ['index.ts', 11],
  ['format.ts', 11],
  // `errand/redis`: the Redis provider and the worker.
  ['scale-out.ts', 11],
];
// Units that must import nothing of ours outside themselves.
const isolated = new Set(['tasks', 'text']);
// Modules never read the wall clock themselves: they are given a `Clock`. Only the system clock itself
// (tasks/clock.ts) and the command line, which drives a terminal, read it.
const clockInjected = (unit, file) =>
  unit !== 'cli' && relative(sourceRoot, file).replaceAll('\\', '/') !== 'tasks/clock.ts';
const clockRead = /\b(?:Date\.now|performance\.now)\s*\(/;

function unitOf(file) {
  const path = relative(sourceRoot, file).replaceAll('\\', '/');
  let best;
  for (const [unit, rank] of layers) {
    if (path === unit || path.startsWith(`${unit}/`)) {
      if (!best || unit.length > best.unit.length) best = { unit, rank };
    }
  }
  return best;
}

function listSources(directory) {
  const files = [];
  for (const entry of readdirSync(directory)) {
    const path = join(directory, entry);
    if (statSync(path).isDirectory()) files.push(...listSources(path));
    else if (path.endsWith('.ts') && !path.endsWith('.test.ts') && !path.endsWith('.d.ts')) files.push(path);
  }
  return files;
}

const importPattern =
  /(?:import|export)\s[^'"]*?from\s*['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g;

/** Lines that read the clock directly, outside comments. */
function clockReadsOf(file) {
  const lines = readFileSync(file, 'utf8').split('\n');
  const found = [];
  lines.forEach((line, index) => {
    const code = line.trimStart();
    if (code.startsWith('//') || code.startsWith('*') || code.startsWith('/*')) return;
    if (clockRead.test(code.replace(/\/\/.*$/, ''))) found.push(index + 1);
  });
  return found;
}

/** Lines with `export * from` or `export type * from`. */
function wildcardExportsOf(file) {
  const found = [];
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((line, index) => {
      if (/^\s*export\s+(?:type\s+)?\*/.test(line)) found.push(index + 1);
    });
  return found;
}

function importsOf(file) {
  const text = readFileSync(file, 'utf8');
  const targets = [];
  for (const match of text.matchAll(importPattern)) {
    const specifier = match[1] ?? match[2];
    targets.push(resolve(dirname(file), specifier.replace(/\.js$/, '.ts')));
  }
  return targets;
}

const files = listSources(sourceRoot);
const graph = new Map(files.map((file) => [file, importsOf(file)]));
const problems = [];

for (const [file, targets] of graph) {
  const from = unitOf(file);
  if (!from) {
    problems.push(
      `${relative(root, file)}: not in any known layer (add it to scripts/check-architecture.mjs)`,
    );
    continue;
  }
  for (const target of targets) {
    if (!graph.has(target)) {
      problems.push(`${relative(root, file)}: imports ${relative(root, target)}, which does not exist`);
      continue;
    }
    const to = unitOf(target);
    if (!to || to.unit === from.unit) continue;
    if (isolated.has(from.unit) || to.rank > from.rank) {
      problems.push(
        `${relative(root, file)}: layer ${from.unit} must not import ${to.unit} (${relative(root, target)})`,
      );
    }
    // A producer's inside is its own: a sibling producer sees only what its index exports.
    if (
      from.unit.startsWith('producers/') &&
      to.unit.startsWith('producers/') &&
      target !== join(sourceRoot, to.unit, 'index.ts')
    ) {
      problems.push(
        `${relative(root, file)}: a producer imports a sibling producer only through its index (${relative(root, target)}; use src/${to.unit}/index.ts)`,
      );
    }
  }
  // Every export is named: `export *` would make whatever a file gains public by accident.
  for (const line of wildcardExportsOf(file)) {
    problems.push(`${relative(root, file)}:${line}: \`export *\` re-exports by accident; name each export`);
  }
  if (clockInjected(from.unit, file)) {
    for (const line of clockReadsOf(file)) {
      problems.push(
        `${relative(root, file)}:${line}: reads the clock directly (Date.now / performance.now); use the injected Clock`,
      );
    }
  }
}

// Circles: depth-first search with colours.
const state = new Map();
const stack = [];
function visit(file) {
  state.set(file, 'open');
  stack.push(file);
  for (const target of graph.get(file) ?? []) {
    if (!graph.has(target)) continue;
    if (state.get(target) === 'open') {
      const circle = stack.slice(stack.indexOf(target)).concat(target);
      problems.push(`import circle: ${circle.map((path) => relative(root, path)).join(' -> ')}`);
    } else if (!state.has(target)) {
      visit(target);
    }
  }
  stack.pop();
  state.set(file, 'done');
}
for (const file of files) if (!state.has(file)) visit(file);

if (problems.length > 0) {
  console.error(problems.join('\n'));
  console.error(`\n${problems.length} architecture problem(s).`);
  process.exit(1);
}
console.log(`architecture: ${files.length} modules, layers respected, no import circles`);
