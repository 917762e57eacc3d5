/**
 * A runtime killed with SIGKILL leaves its output directory behind; a later runtime on the same home
 * removes it at its start once it is older than `leftoverOutputMaxAgeMs` — not before (a resumed session
 * still reads its output and exit statuses there), never a live runtime's, never with the option false.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { killMarked, newMark, startRuntimeChild } from '../../test/support/crash.js';
import { OutputDirectory } from '../process/index.js';
import { scriptedModel } from '../testing/index.js';
import { createErrandRuntime, type ErrandRuntimeOptions } from './errand-runtime.js';

const directories: string[] = [];
const marks: string[] = [];

afterEach(() => {
  for (const mark of marks.splice(0)) killMarked(mark);
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function temporary(prefix: string): string {
  const path = mkdtempSync(join(tmpdir(), prefix));
  directories.push(path);
  return path;
}

/** A runtime on `home` whose bash output goes under `parent`, started and disposed (its start-up sweep ran). */
async function startAndStop(
  home: string,
  parent: string,
  options: Partial<ErrandRuntimeOptions>,
): Promise<void> {
  const runtime = await createErrandRuntime({
    model: scriptedModel([]),
    home,
    pty: false,
    subagents: false,
    bash: { executor: { outputDirectoryParent: parent } },
    ...options,
  });
  await runtime.dispose();
}

describe('the output directory of a killed runtime', () => {
  it('is removed by a later runtime once old enough, and a live runtime’s is kept', async () => {
    const home = temporary('errand-leftover-home-');
    const parent = temporary('errand-leftover-out-');
    const mark = newMark();
    marks.push(mark);
    const host = await startRuntimeChild(
      {
        home,
        commands: ['echo hello; exec sleep 1000'],
        ready: 'hello',
        outputDirectoryParent: parent,
      },
      mark,
    );
    const [left] = readdirSync(parent);
    expect(left).toMatch(new RegExp(`^errand-bash-${host.child.pid}-\\d+-[A-Za-z0-9]{6}$`));
    expect(readdirSync(join(parent, left!)).some((name) => name.endsWith('.log'))).toBe(true);
    await host.kill();

    // A directory this process holds open names a live maker: no sweep removes it.
    const live = new OutputDirectory('errand-bash-', parent);
    const livePath = live.ensure();
    try {
      await startAndStop(home, parent, { leftoverOutputMaxAgeMs: 60_000 });
      expect(existsSync(join(parent, left!))).toBe(true);
      await startAndStop(home, parent, { leftoverOutputMaxAgeMs: false });
      expect(existsSync(join(parent, left!))).toBe(true);
      await startAndStop(home, parent, { leftoverOutputMaxAgeMs: 0 });
      expect(existsSync(join(parent, left!))).toBe(false);
      expect(existsSync(livePath)).toBe(true);
    } finally {
      live.dispose(false);
    }
  });

  it('refuses a negative or fractional age, naming the option', async () => {
    await expect(
      createErrandRuntime({
        model: scriptedModel([]),
        home: temporary('errand-leftover-home-'),
        leftoverOutputMaxAgeMs: -1,
      }),
    ).rejects.toThrow(/leftoverOutputMaxAgeMs/);
    await expect(
      createErrandRuntime({
        model: scriptedModel([]),
        home: temporary('errand-leftover-home-'),
        leftoverOutputMaxAgeMs: 1.5,
      }),
    ).rejects.toThrow(/leftoverOutputMaxAgeMs/);
  });
});
