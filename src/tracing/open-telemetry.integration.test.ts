/**
 * Without `@opentelemetry/api` installed, tracing is the no-op and nothing is loaded: the built tracing
 * module (and the contract it imports), copied where no `node_modules` can be found, runs in a fresh Node process and reports what it
 * resolved and which modules it loaded.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const dist = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist');
const directories: string[] = [];

afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

describe('defaultTracing without @opentelemetry/api', () => {
  it('is the no-op, spans are the shared no-op span, and no OpenTelemetry module is loaded', () => {
    // Under the system's temporary directory: no node_modules above it to find the package in.
    const directory = mkdtempSync(join(tmpdir(), 'errand-no-otel-'));
    directories.push(directory);
    // The tracing layer and the contract below it, the only layer it imports.
    for (const layer of ['tracing', 'tasks']) {
      cpSync(join(dist, layer), join(directory, layer), { recursive: true });
    }
    writeFileSync(
      join(directory, 'probe.mjs'),
      [
        "import { createRequire } from 'node:module';",
        "import { defaultTracing, NOOP_TRACING, resolveTracing } from './tracing/index.js';",
        'const tracing = defaultTracing();',
        "const span = tracing.startSpan('task bash');",
        'const loaded = Object.keys(createRequire(import.meta.url).cache).filter((path) => path.includes("opentelemetry"));',
        'console.log(JSON.stringify({',
        '  noop: tracing === NOOP_TRACING,',
        '  enabled: tracing.enabled,',
        "  shared: span === tracing.startSpan('other'),",
        '  traceparent: span.traceparent ?? null,',
        '  again: defaultTracing() === tracing && resolveTracing(undefined) === tracing,',
        '  loaded,',
        '}));',
      ].join('\n'),
    );
    const output = execFileSync(process.execPath, [join(directory, 'probe.mjs')], {
      cwd: directory,
      encoding: 'utf8',
    });
    expect(JSON.parse(output)).toEqual({
      noop: true,
      enabled: false,
      shared: true,
      traceparent: null,
      again: true,
      loaded: [],
    });
  });
});
