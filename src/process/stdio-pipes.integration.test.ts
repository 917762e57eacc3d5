/**
 * Real pipes for commands' stdout and stderr, against real processes: a command started directly or by
 * the spawner sidecar can open /dev/stdout and /dev/stderr (on Node's socket pairs that fails with
 * ENXIO), `ERRAND_SOCKET_STDIO=1` brings the socket pairs back, and no launch — finished, failed at once
 * or refused by the spawn — leaves a descriptor open here or in the sidecar. Through the sidecar the
 * command writes into pipes made here (opened again through /proc, checked by inode), and the sidecar
 * makes its own and sends them back when it cannot open them.
 */

import { spawnSync } from 'node:child_process';
import {
  closeSync,
  constants,
  fstatSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  bashRequest as bash,
  type Ended,
  ended,
  linkOf,
  pipeLinks,
} from '../../test/fixtures/process/launches.js';
import { systemClock } from '../tasks/clock.js';
import { Lifeline } from './lifeline.js';
import { createSpawnLauncher, type Spawner } from './process-launcher.js';
import { SidecarLauncher } from './sidecar-launcher.js';
import {
  closeDescriptors,
  closeSharedReadEnds,
  createSharedReadEnds,
  openSharedStdio,
  realPipesAvailable,
  SOCKET_STDIO_VARIABLE,
} from './stdio-pipes.js';

const lifelines: Lifeline[] = [];
const quiet = { warn() {} };

afterEach(async () => {
  delete process.env[SOCKET_STDIO_VARIABLE];
  await Promise.all(lifelines.splice(0).map((lifeline) => lifeline.release()));
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

async function sidecarLauncher(): Promise<{ launcher: SidecarLauncher; lifeline: Lifeline }> {
  const lifeline = new Lifeline({ clock: systemClock, logger: quiet });
  lifelines.push(lifeline);
  expect(await lifeline.ready).toBe(true);
  return { launcher: new SidecarLauncher({ lifeline, clock: systemClock, logger: quiet }), lifeline };
}

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

  it('a command the spawner sidecar started does too', async () => {
    const { launcher, lifeline } = await sidecarLauncher();
    const result = await ended(launcher.launch(bash(`echo $PPID; ${PROBE}`)));
    expect(result).toEqual({
      stdout: `${lifeline.pid}\npipe\npipe\nto-stdout\nteed\n`,
      stderr: 'to-stderr\nteed\n',
      code: 0,
      signal: null,
    });
  });

  it(`${SOCKET_STDIO_VARIABLE}=1 gives socket pairs, as Node does, on which opening /dev/stderr fails`, async () => {
    process.env[SOCKET_STDIO_VARIABLE] = '1';
    // The sidecar reads it from the environment it starts with, as the launcher here reads it per launch.
    const { launcher } = await sidecarLauncher();
    // Both are listened to from their launch: an exit is an event, gone for a listener added after it.
    const results = [createSpawnLauncher().launch(bash(PROBE)), launcher.launch(bash(PROBE))].map(ended);
    for (const result of await Promise.all(results)) {
      expect(result.stdout).toBe('socket\nsocket\nteed\n');
      expect(result.stderr).toMatch(/\/dev\/stdout: No such device or address/);
      expect(result.stderr).toMatch(/\/dev\/stderr: No such device or address/);
      expect(result.code).toBe(1);
    }
  });

  it('leaves no descriptor open here or in the sidecar, whether a launch ran, failed or was refused', async () => {
    const { launcher, lifeline } = await sidecarLauncher();
    // One launch each way first: what Node opens once (the sidecar's channel state, lazy handles) is not a leak.
    await ended(createSpawnLauncher().launch(bash('echo warm')));
    await ended(launcher.launch(bash('echo warm')));
    const here = descriptors();
    const inSidecar = descriptors(lifeline.pid!);
    const runs: Array<Promise<Ended>> = [];
    for (let index = 0; index < 20; index += 1) {
      runs.push(ended(createSpawnLauncher().launch(bash('echo out; echo err >&2'))));
      runs.push(ended(launcher.launch(bash('echo out; echo err >&2'))));
    }
    for (const result of await Promise.all(runs))
      expect(result).toEqual({ stdout: 'out\n', stderr: 'err\n', code: 0, signal: null });
    // A program that does not exist: the spawn's error, with the pipes never read.
    const failures = [createSpawnLauncher(), launcher].map(
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
    expect(await settlesTo(inSidecar, lifeline.pid!)).toBeLessThanOrEqual(inSidecar);
  });

  it('through the sidecar the command writes into pipes made here: no pipe handle crosses the channel', async () => {
    const { launcher, lifeline } = await sidecarLauncher();
    const answers: Array<{ type: string; stdio?: string }> = [];
    lifeline.sidecar!.on('message', (message: { type: string; stdio?: string }) => answers.push(message));
    const directory = mkdtempSync(join(tmpdir(), 'errand-shared-pipes-'));
    try {
      const gate = join(directory, 'gate');
      const child = launcher.launch(
        bash(`readlink /proc/$$/fd/1 /proc/$$/fd/2; while [ ! -e ${gate} ]; do sleep 0.01; done; echo done`),
      );
      const result = ended(child);
      const links = await firstLines(child.stdout! as unknown as Socket, 2);
      // While the command runs, the sidecar holds neither of its pipes.
      const inSidecar = readdirSync(`/proc/${lifeline.pid}/fd`).map((fd) => linkOf(lifeline.pid!, fd));
      expect(links.every((link) => link.startsWith('pipe:['))).toBe(true);
      for (const link of links) expect(inSidecar).not.toContain(link);
      writeFileSync(gate, '');
      expect((await result).stdout).toBe(`${links.join('\n')}\ndone\n`);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
    // Its exit may be heard from the table before the sidecar's `exited`; no `pipe` comes either way.
    expect(answers[0]).toMatchObject({ type: 'spawned', stdio: 'shared' });
    expect(answers.filter(({ type }) => type === 'pipe')).toEqual([]);
  });

  it('the sidecar makes pipes of its own and sends them back when the ones named cannot be opened', async () => {
    const { lifeline } = await sidecarLauncher();
    const sidecar = lifeline.sidecar!;
    const ends = createSharedReadEnds()!;
    const id = 9_000_001;
    const answers: string[] = [];
    let sawStderr: () => void = () => {};
    const stderrCame = new Promise<void>((resolve) => {
      sawStderr = resolve;
    });
    const output = new Promise<string>((resolve) => {
      let text = '';
      sidecar.on('message', (message: { type: string; id: number; stream?: string }, handle?: Socket) => {
        if (message.id !== id) return;
        answers.push(message.stream === undefined ? message.type : `${message.type}:${message.stream}`);
        if (message.type === 'pipe' && message.stream === 'stdout' && handle !== undefined) {
          handle.on('data', (chunk: Buffer) => {
            text += chunk.toString('utf8');
          });
          handle.once('end', () => resolve(text));
        } else if (message.type === 'pipe') {
          handle?.resume();
          sawStderr();
        }
      });
    });
    sidecar.channel?.ref();
    try {
      // The stdout pipe's inode is wrong: the sidecar must not write into whatever that descriptor is.
      sidecar.send({
        ...bash('readlink /proc/$$/fd/1 | sed "s/:.*//"; echo made-there'),
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
        type: 'spawn',
        id,
        stdio: { pid: process.pid, stdout: { ...ends.stdout, ino: '1' }, stderr: ends.stderr },
      });
      expect(await output).toBe('pipe\nmade-there\n');
      // Node sends one handle at a time: stderr's follows once stdout's was acknowledged.
      await stderrCame;
    } finally {
      sidecar.channel?.unref();
      closeSharedReadEnds(ends);
    }
    expect(answers.slice(0, 3)).toEqual(['spawned', 'pipe:stdout', 'pipe:stderr']);
  });

  it('the sidecar closes pipes of its own when the command it makes them for cannot start', async () => {
    const { lifeline } = await sidecarLauncher();
    const sidecar = lifeline.sidecar!;
    const ends = createSharedReadEnds()!;
    /** The sidecar's last word on launch `id`: `spawn_failed` or `exited`. */
    const answerTo = (id: number) =>
      new Promise<string>((resolve) => {
        const onMessage = (message: { type: string; id: number }) => {
          if (message.id !== id || (message.type !== 'spawn_failed' && message.type !== 'exited')) return;
          sidecar.off('message', onMessage);
          resolve(message.type);
        };
        sidecar.on('message', onMessage);
      });
    const launch = (id: number, file: string) => {
      const answered = answerTo(id);
      sidecar.send({
        ...bash('true'),
        file,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
        type: 'spawn',
        id,
        // A wrong inode: the sidecar makes the pipes itself.
        stdio: { pid: process.pid, stdout: { ...ends.stdout, ino: '1' }, stderr: ends.stderr },
      });
      return answered;
    };
    sidecar.channel?.ref();
    try {
      // One first: what the channel and a spawn open once in the sidecar is not a leak.
      expect(await launch(9_000_101, '/nonexistent/errand-program')).toBe('spawn_failed');
      const inSidecar = descriptors(lifeline.pid!);
      for (let index = 0; index < 10; index += 1) {
        expect(await launch(9_000_102 + index, '/nonexistent/errand-program')).toBe('spawn_failed');
      }
      expect(await settlesTo(inSidecar, lifeline.pid!)).toBeLessThanOrEqual(inSidecar);
    } finally {
      sidecar.channel?.unref();
      closeSharedReadEnds(ends);
    }
  });
});

describe('openSharedStdio', () => {
  it('opens the write sides of pipes this process made, close-on-exec and blocking', () => {
    const ends = createSharedReadEnds()!;
    const opened = openSharedStdio({ pid: process.pid, ...ends });
    expect(opened).toBeDefined();
    try {
      for (const [fd, read] of [
        [opened!.stdout, ends.stdout.fd],
        [opened!.stderr, ends.stderr.fd],
      ] as const) {
        const flags = Number.parseInt(
          /flags:\s*([0-7]+)/.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))![1]!,
          8,
        );
        expect(flags & 0o3).toBe(1); // O_WRONLY
        expect(flags & 0o4000).toBe(0); // not O_NONBLOCK
        expect(flags & 0o2000000).not.toBe(0); // O_CLOEXEC
        writeSync(fd, 'through /proc');
        const buffer = Buffer.alloc(64);
        expect(buffer.toString('utf8', 0, readSync(read, buffer))).toBe('through /proc');
      }
    } finally {
      closeDescriptors(opened!.stdout, opened!.stderr);
      closeSharedReadEnds(ends);
    }
  });

  it('opens nothing for a wrong inode, a file, a closed descriptor, a gone process, or a FIFO with no reader', () => {
    const before = pipeLinks();
    const ends = createSharedReadEnds()!;
    const directory = mkdtempSync(join(tmpdir(), 'errand-shared-pipes-'));
    const file = openSync(join(directory, 'file'), 'w');
    // A named FIFO held for writing only: opening it for writing again would wait for a reader.
    const fifo = join(directory, 'fifo');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const writer = openSync(fifo, constants.O_WRONLY);
    closeSync(reader);
    try {
      for (const stdout of [
        { ...ends.stdout, ino: String(BigInt(ends.stdout.ino) + 1000n) },
        { fd: file, ino: inodeOf(file) },
        { fd: 1023, ino: ends.stdout.ino },
        { fd: writer, ino: inodeOf(writer) },
      ]) {
        expect(openSharedStdio({ pid: process.pid, stdout, stderr: ends.stderr })).toBeUndefined();
        expect(openSharedStdio({ pid: process.pid, stdout: ends.stdout, stderr: stdout })).toBeUndefined();
      }
      expect(openSharedStdio({ pid: 2 ** 22 + 1, ...ends })).toBeUndefined();
    } finally {
      closeDescriptors(file, writer);
      closeSharedReadEnds(ends);
      rmSync(directory, { recursive: true, force: true });
    }
    // Whatever was opened on the way (the stdout side, before stderr failed) was closed again.
    expect(pipeLinks()).toEqual(before);
  });
});

function inodeOf(fd: number): string {
  return String(fstatSync(fd, { bigint: true }).ino);
}

/** The first `count` lines a stream gives, leaving it flowing. */
function firstLines(stream: Socket, count: number): Promise<string[]> {
  return new Promise((resolve) => {
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString('utf8');
      const lines = text.split('\n');
      if (lines.length > count) {
        stream.off('data', onData);
        resolve(lines.slice(0, count));
      }
    };
    stream.on('data', onData);
  });
}
