/**
 * Real pipes for commands' stdout and stderr, against real processes: a command can open /dev/stdout and
 * /dev/stderr (on Node's socket pairs that fails with ENXIO), `ERRAND_SOCKET_STDIO=1` brings the socket
 * pairs back, and no launch — finished, failed at once or refused by the spawn — leaves a descriptor open.
 */

import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bashRequest as bash, type Ended, ended } from '../../../test/fixtures/process/launches.js';
import { createSpawnLauncher, type Spawner } from './process-launcher.js';
import { realPipesAvailable, SOCKET_STDIO_VARIABLE } from './stdio-pipes.js';

afterEach(() => {
  delete process.env[SOCKET_STDIO_VARIABLE];
});

beforeAll(() => {
  // Built by `npm install` (scripts/build-native.mjs) with the compiler the SQLite store needs too.
  if (!realPipesAvailable()) {
    throw new Error(
      'the native pipe helper is not built: run `npm rebuild` (needs python3, make and a C compiler)',
    );
  }
});

/** What a command sees on its descriptors 1 and 2, and what opening /dev/stdout and /dev/stderr gives. */
const PROBE = [
  'readlink /proc/$$/fd/1 /proc/$$/fd/2 | sed "s/:.*//"',
  'echo to-stdout > /dev/stdout',
  'echo to-stderr > /dev/stderr',
  'echo teed | tee /dev/stderr',
].join('; ');

function descriptors(pid: number | 'self' = 'self'): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/** Waits until `pid` holds at most `count` descriptors (a closed socket's close is asynchronous). */
async function settlesTo(count: number, pid: number | 'self' = 'self'): Promise<number> {
  const deadline = Date.now() + 5000;
  let now = descriptors(pid);
  while (now > count && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    now = descriptors(pid);
  }
  return now;
}

describe('real pipes for stdout and stderr', () => {
  it('a command started directly writes to /dev/stdout and /dev/stderr: both are pipes', async () => {
    const result = await ended(createSpawnLauncher().launch(bash(PROBE)));
    expect(result).toEqual({
      stdout: 'pipe\npipe\nto-stdout\nteed\n',
      stderr: 'to-stderr\nteed\n',
      code: 0,
      signal: null,
    });
  });

  it(`${SOCKET_STDIO_VARIABLE}=1 gives socket pairs, as Node does, on which opening /dev/stderr fails`, async () => {
    process.env[SOCKET_STDIO_VARIABLE] = '1';
    // The launcher reads it per launch; both ways (without and with a fork) give socket pairs then.
    const results = [
      createSpawnLauncher().launch(bash(PROBE)),
      createSpawnLauncher(spawn as Spawner).launch(bash(PROBE)),
    ].map(ended);
    for (const result of await Promise.all(results)) {
      expect(result.stdout).toBe('socket\nsocket\nteed\n');
      expect(result.stderr).toMatch(/\/dev\/stdout: No such device or address/);
      expect(result.stderr).toMatch(/\/dev\/stderr: No such device or address/);
      expect(result.code).toBe(1);
    }
  });

  it('leaves no descriptor open, whether a launch ran, failed or was refused', async () => {
    const launcher = createSpawnLauncher();
    // One launch first: what Node opens once (lazy handles) is not a leak.
    await ended(launcher.launch(bash('echo warm')));
    const here = descriptors();
    const runs: Array<Promise<Ended>> = [];
    for (let index = 0; index < 40; index += 1)
      runs.push(ended(launcher.launch(bash('echo out; echo err >&2'))));
    for (const result of await Promise.all(runs))
      expect(result).toEqual({ stdout: 'out\n', stderr: 'err\n', code: 0, signal: null });
    // A program that does not exist: the spawn's error, with the pipes never read.
    const failures = [launcher, launcher].map(
      (each) =>
        new Promise<string | undefined>((resolve) =>
          each.launch({ ...bash('true'), file: '/nonexistent/errand-program' }).on('error', (error) => {
            resolve((error as NodeJS.ErrnoException).code);
          }),
        ),
    );
    expect(await Promise.all(failures)).toEqual(['ENOENT', 'ENOENT']);
    // A spawn that throws before anything started.
    const refusing: Spawner = () => {
      throw new Error('refused');
    };
    expect(() => createSpawnLauncher(refusing).launch(bash('true'))).toThrow('refused');
    expect(await settlesTo(here)).toBeLessThanOrEqual(here);
  });
});
