#!/usr/bin/env node
// Enforces Errand's layering: imports only point down the layer list, and no module imports itself
// through a circle. Prints each violation and exits non-zero when there is one.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(dirname(new URL(import.meta.url).pathname), '..');
const sourceRoot = join(root, 'src');

// Lower rank = lower layer. A module may import its own unit or any unit of a lower or equal rank;
// circles are caught separately below.
const layers = [
  ['tasks', 0],
  ['text', 0],
  ['registry', 1],
  ['store', 1],
  ['tools', 2],
  ['notifications', 2],
  ['events', 2],
  ['producers/bash', 3],
  ['producers/pty', 3],
  ['session', 4],
  ['producers/subagent', 5],
  ['producers/workflow', 5],
  ['adapters', 5],
  ['server', 6],
  ['host', 6],
  ['mcp', 7],
  ['testing', 8],
  ['cli', 9],
  ['index.ts', 10],
];
// Units that must import nothing of ours outside themselves.
const isolated = new Set(['tasks', 'text']);

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
