/**
 * Spawns without fork (`native-spawn.ts`, `native/spawn.c`) against real processes: the child gets what
 * a detached `child_process.spawn` gives it (its own session, default signals, stdin on /dev/null, the
 * same descriptors, exactly the given environment, the directory), its exit or killing signal is heard
 * once, a failure is Node's error, a name is looked up on the request's PATH, 200 children at once are
 * each heard once, exits are heard past the zombies of Node's own children, no descriptor is held per
 * child, the event loop stays open exactly while a child is watched, and a worker thread that spawned
 * and is terminated leaves its child to be reaped without harm to the process.
 */
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  fstatSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ended } from '../../../test/fixtures/process/launches.js';
import { NODE_SPAWN_VARIABLE, nativeSpawnAvailable, spawnNative } from './native-spawn.js';
import { createSpawnLauncher } from './process-launcher.js';
import { closeDescriptors, createStdioPipes, readEndStream } from './stdio-pipes.js';

const directory = mkdtempSync(join(tmpdir(), 'errand-native-spawn-'));
/** The built module, for a process or a thread of its own (`npm test` builds before it runs the suites). */
const BUILT = new URL('../../../dist/process/launch/native-spawn.js', import.meta.url).pathname;
const PATH = process.env.PATH ?? '/usr/bin:/bin';

beforeAll(() => {
  // Built by `npm install` (scripts/build-native.mjs) with the compiler the SQLite store needs too.
  if (!nativeSpawnAvailable()) {
    throw new Error(
      'the native helper is not built here: run `npm rebuild` (needs python3, make and a C compiler; Linux)',
    );
  }
});

afterAll(() => rmSync(directory, { recursive: true, force: true }));

interface Outcome {
  readonly stdout: string;
  readonly stderr: string;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/**
 * Reads both pipes of a child to their end. `start` spawns it onto the write ends it is given and
 * leaves none of them open here (a native spawn closes them itself).
 */
function run(
  start: (
    stdout: number,
    stderr: number,
    onExit: (code: number | null, signal: NodeJS.Signals | null) => void,
  ) => unknown,
): Promise<Outcome> {
  const pipes = createStdioPipes()!;
  return new Promise<Outcome>((resolve, reject) => {
    const text = { stdout: '', stderr: '' };
    let open = 2;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    const done = () => {
      if (open === 0 && exit !== undefined) resolve({ ...text, ...exit });
    };
    try {
      start(pipes.stdout.write, pipes.stderr.write, (code, signal) => {
        exit = { code, signal };
        done();
      });
    } catch (error) {
      closeDescriptors(pipes.stdout.read, pipes.stderr.read);
      reject(error);
      return;
    }
    expect(isOpen(pipes.stdout.write) || isOpen(pipes.stderr.write)).toBe(false);
    for (const [name, fd] of [
      ['stdout', pipes.stdout.read],
      ['stderr', pipes.stderr.read],
    ] as const) {
      const stream = readEndStream(fd);
      stream.on('data', (chunk: Buffer) => {
        text[name] += chunk.toString();
      });
      stream.once('close', () => {
        open -= 1;
        done();
      });
    }
  });
}

function isOpen(fd: number): boolean {
  try {
    fstatSync(fd);
    return true;
  } catch {
    return false;
  }
}

function unforked(
  file: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string> } = {},
) {
  return run((stdout, stderr, onExit) =>
    spawnNative(
      { file, args, cwd: options.cwd ?? directory, env: options.env ?? { PATH }, stdout, stderr },
      onExit,
    ),
  );
}

function forked(file: string, args: string[], options: { cwd?: string; env?: Record<string, string> } = {}) {
  return run((stdout, stderr, onExit) => {
    try {
      const child = spawn(file, args, {
        cwd: options.cwd ?? directory,
        env: options.env ?? { PATH },
        detached: true,
        stdio: ['ignore', stdout, stderr],
      });
      child.once('exit', onExit);
    } finally {
      closeDescriptors(stdout, stderr);
    }
  });
}

/** The lines of /proc/self/status that say what a process was given: its ids and its signal masks. */
const STATUS_FIELDS = /^(Pid|NSpgid|NSsid|SigBlk|SigIgn):\t(.*)$/;

function statusOf(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const match = STATUS_FIELDS.exec(line);
    if (match) fields[match[1]!] = match[2]!;
  }
  return fields;
}

describe('spawnNative', () => {
  it('gives the child what a detached child_process.spawn gives it', async () => {
    const env = { PATH, ERRAND_PROBE: 'a value with spaces = and more' };
    // Each probe is a program that changes nothing of what it was given before it reports it.
    const both = async (file: string, args: string[]) => {
      const [mine, node] = await Promise.all([unforked(file, args, { env }), forked(file, args, { env })]);
      expect(mine.code).toBe(0);
      return { mine: mine.stdout, node: node.stdout };
    };
    const status = await both('/bin/cat', ['/proc/self/status']);
    for (const text of [status.mine, status.node]) {
      const fields = statusOf(text);
      // Its own session and process group; every signal at its default, none blocked.
      expect(fields).toEqual({
        Pid: fields.Pid,
        NSpgid: fields.Pid,
        NSsid: fields.Pid,
        SigBlk: '0000000000000000',
        SigIgn: '0000000000000000',
      });
    }
    // 0, 1, 2 and the directory ls reads; Node passes on whatever this process holds without
    // close-on-exec too (see the test of inherited descriptors below).
    const descriptors = await both('/bin/ls', ['/proc/self/fd']);
    expect(descriptors.mine).toBe('0\n1\n2\n3\n');
    expect(descriptors.node.startsWith('0\n1\n2\n')).toBe(true);
    const stdin = await both('/bin/readlink', ['/proc/self/fd/0']);
    expect(stdin).toEqual({ mine: '/dev/null\n', node: '/dev/null\n' });
    const cwd = await both('/bin/pwd', []);
    expect(cwd).toEqual({ mine: `${realpathSync(directory)}\n`, node: `${realpathSync(directory)}\n` });
    const environment = await both('/bin/cat', ['/proc/self/environ']);
    expect(environment.mine).toBe(environment.node);
    expect(environment.mine.split('\0').filter(Boolean)).toEqual(
      Object.entries(env).map(([name, value]) => `${name}=${value}`),
    );
  });

  it('closes in the child every descriptor above 2 that this process holds without close-on-exec', async () => {
    // A process whose descriptor 7 is inherited (so not close-on-exec): it spawns `ls /proc/self/fd`.
    const script = [
      `const { spawnNative } = await import(${JSON.stringify(BUILT)});`,
      `const { createStdioPipes, readEndStream } = await import(${JSON.stringify(BUILT.replace('native-spawn', 'stdio-pipes'))});`,
      'const pipes = createStdioPipes();',
      "spawnNative({ file: '/bin/ls', args: ['/proc/self/fd'], cwd: '/', env: {}, stdout: pipes.stdout.write, stderr: pipes.stderr.write }, () => {});",
      'readEndStream(pipes.stderr.read).resume();',
      'readEndStream(pipes.stdout.read).pipe(process.stdout);',
    ].join('\n');
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit', 'ignore', 'ignore', 'ignore', 'ignore', 'pipe'],
    });
    let listing = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      listing += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    (child.stdio as unknown as Array<{ destroy(): void } | null>)[7]?.destroy();
    expect(code).toBe(0);
    expect(listing).toBe('0\n1\n2\n3\n');
  });

  it("raises an exit listener's throw as an uncaught exception, as a ChildProcess does", async () => {
    const script = [
      `const { spawnNative } = await import(${JSON.stringify(BUILT)});`,
      `const { createStdioPipes } = await import(${JSON.stringify(BUILT.replace('native-spawn', 'stdio-pipes'))});`,
      "process.on('uncaughtException', (error) => { console.log('uncaught:', error.message); process.exit(3); });",
      'const pipes = createStdioPipes();',
      "spawnNative({ file: '/bin/true', args: [], cwd: '/', env: {}, stdout: pipes.stdout.write, stderr: pipes.stderr.write }, () => { throw new Error('from the listener'); });",
    ].join('\n');
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect({ code, output }).toEqual({ code: 3, output: 'uncaught: from the listener\n' });
  });

  it('reports the exit code, or the signal that killed it', async () => {
    expect(await unforked('bash', ['-c', 'echo out; echo err >&2; exit 7'])).toEqual({
      stdout: 'out\n',
      stderr: 'err\n',
      code: 7,
      signal: null,
    });
    expect(await unforked('bash', ['-c', 'kill -TERM $$'])).toMatchObject({ code: null, signal: 'SIGTERM' });
    expect(await unforked('bash', ['-c', 'kill -SEGV $$'])).toMatchObject({ code: null, signal: 'SIGSEGV' });
  });

  it("fails with Node's spawn error: a missing program, a missing directory, a file that is not executable", async () => {
    const plain = join(directory, 'not-executable');
    writeFileSync(plain, '#!/bin/sh\n');
    chmodSync(plain, 0o644);
    const nodeError = (file: string, cwd: string) =>
      new Promise<NodeJS.ErrnoException>((resolve) => {
        spawn(file, [], { cwd, stdio: 'ignore' }).once('error', resolve);
      });
    for (const [file, cwd] of [
      ['/nonexistent/program', directory],
      ['/usr/bin/env', join(directory, 'missing')],
      [plain, directory],
    ] as const) {
      const expected = await nodeError(file, cwd);
      const thrown = await unforked(file, [], { cwd }).then(
        () => undefined,
        (error: NodeJS.ErrnoException) => error,
      );
      expect(thrown).toBeInstanceOf(Error);
      const shape = (error: NodeJS.ErrnoException) => ({
        message: error.message,
        code: error.code,
        errno: error.errno,
        syscall: error.syscall,
        path: error.path,
      });
      expect(shape(thrown!)).toEqual(shape(expected));
    }
  });

  it("looks a name up on the request's PATH, not this process's, and leaves a name it cannot find to Node", async () => {
    const bin = mkdtempSync(join(directory, 'bin-'));
    writeFileSync(join(bin, 'errand-hello'), '#!/bin/sh\necho "hello from $0"\n');
    chmodSync(join(bin, 'errand-hello'), 0o755);
    expect(process.env.PATH?.split(':')).not.toContain(bin);
    const env = { PATH: `/nonexistent:${bin}:/usr/bin` };
    const [mine, node] = await Promise.all([
      unforked('errand-hello', [], { env }),
      forked('errand-hello', [], { env }),
    ]);
    expect(mine).toEqual(node);
    expect(mine).toMatchObject({ stdout: `hello from ${join(bin, 'errand-hello')}\n`, code: 0 });
    const out = openSync('/dev/null', 'w');
    try {
      const request = {
        file: 'errand-hello',
        args: [],
        cwd: directory,
        env: { PATH },
        stdout: out,
        stderr: out,
      };
      expect(spawnNative(request, () => {})).toBeUndefined();
      // Nothing spawned, nothing taken: the caller's descriptor is still its own.
      expect(isOpen(out)).toBe(true);
    } finally {
      closeSync(out);
    }
  });

  it('refuses an argument or a variable with a NUL in it, spawns nothing, and still closes the descriptors', () => {
    for (const request of [
      { args: ['a\0b'], env: { PATH } },
      { args: [], env: { PATH, BAD: 'x\0y' } },
    ]) {
      const out = openSync('/dev/null', 'w');
      const listener = vi.fn();
      expect(() =>
        spawnNative({ file: '/bin/true', cwd: directory, stdout: out, stderr: out, ...request }, listener),
      ).toThrow(TypeError);
      expect(isOpen(out)).toBe(false);
      expect(listener).not.toHaveBeenCalled();
    }
  });

  it('hears each of 200 children started at once exactly once, with its own status', async () => {
    const heard = new Map<number, (number | null)[]>();
    const outcomes = await Promise.all(
      Array.from({ length: 200 }, (_, index) =>
        run((stdout, stderr, onExit) => {
          const pid = spawnNative(
            {
              file: '/bin/sh',
              args: ['-c', `exit ${index % 256}`],
              cwd: directory,
              env: { PATH },
              stdout,
              stderr,
            },
            (code, signal) => {
              heard.set(pid!, [...(heard.get(pid!) ?? []), code]);
              onExit(code, signal);
            },
          );
        }),
      ),
    );
    expect(outcomes.map((outcome) => outcome.code)).toEqual(
      Array.from({ length: 200 }, (_, index) => index % 256),
    );
    // A second report would have come by now: every one of them was reaped and told, once.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect([...heard.values()].every((codes) => codes.length === 1)).toBe(true);
    expect(heard.size).toBe(200);
  });

  it('holds the event loop open while a child is watched, and lets it go once none is', async () => {
    const script = join(directory, 'hold.mjs');
    writeFileSync(
      script,
      [
        `const { spawnNative } = await import(${JSON.stringify(BUILT)});`,
        'const began = Date.now();',
        "const { openSync } = await import('node:fs');",
        // The spawn takes the descriptors it is given: its own, not this process's stdout.
        "const quiet = () => openSync('/dev/null', 'w');",
        `spawnNative({ file: '/bin/sleep', args: ['0.3'], cwd: '/', env: {}, stdout: quiet(), stderr: quiet() }, (code) => {`,
        '  const waited = Date.now() - began >= 250 ? "the sleep" : "too little";',
        "  console.log('exit ' + code + ' after ' + waited);",
        '});',
      ].join('\n'),
    );
    const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    // It ends by itself once the exit was heard: nothing of the reaper keeps it open.
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect({ code, output }).toEqual({ code: 0, output: 'exit 0 after the sleep\n' });
  });

  it('survives a worker thread that spawned being terminated while its child runs, and still reaps that child', async () => {
    const worker = new Worker(
      [
        `import(${JSON.stringify(BUILT)}).then(({ spawnNative }) => {`,
        "  const quiet = () => require('node:fs').openSync('/dev/null', 'w');",
        `  const pid = spawnNative({ file: '/bin/sleep', args: ['30'], cwd: '/', env: {}, stdout: quiet(), stderr: quiet() }, () => {});`,
        `  require('node:worker_threads').parentPort.postMessage(pid);`,
        '});',
      ].join('\n'),
      { eval: true },
    );
    const pid = await new Promise<number>((resolve) => worker.once('message', resolve));
    expect(pid).toBeGreaterThan(0);
    await worker.terminate();
    // This thread's listener is untouched: a child spawned here is heard as before.
    expect(await unforked('bash', ['-c', 'exit 5'])).toMatchObject({ code: 5 });
    // The worker's child is still the process's reaper's: once killed it is reaped (no zombie stays),
    // and its exit is told to nobody.
    const startTime = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[19];
    process.kill(pid, 'SIGKILL');
    const same = () => {
      try {
        return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[19] === startTime;
      } catch {
        return false;
      }
    };
    for (let tries = 0; tries < 500 && same(); tries += 1)
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect(same()).toBe(false);
  });

  it('hears exits past the zombies of children libuv spawned, which it leaves to libuv', async () => {
    const sleepSync = (milliseconds: number) =>
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, milliseconds);
    const gone = (pid: number) => {
      try {
        return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] === undefined;
      } catch {
        return true;
      }
    };
    // Node's own children end first; while this thread is blocked libuv cannot reap them, so their
    // zombies stand before ours in the kernel's list of children.
    const nodeChildren = Array.from({ length: 5 }, () => spawn('/bin/true', [], { stdio: 'ignore' }));
    const nodeExits = nodeChildren.map((child) => new Promise((resolve) => child.once('exit', resolve)));
    sleepSync(200);
    const heard: number[] = [];
    const pids = Array.from(
      { length: 10 },
      (_, index) =>
        spawnNative(
          {
            file: '/bin/sh',
            args: ['-c', `exit ${index}`],
            cwd: directory,
            env: { PATH },
            stdout: openSync('/dev/null', 'w'),
            stderr: openSync('/dev/null', 'w'),
          },
          (code) => void heard.push(code!),
        )!,
    );
    // Still blocked: the reaper asks for ours by pid past the zombies it leaves alone.
    for (let waited = 0; waited < 5000 && !pids.every(gone); waited += 20) sleepSync(20);
    expect(pids.every(gone)).toBe(true);
    expect(nodeChildren.every((child) => !gone(child.pid!))).toBe(true);
    await Promise.all(nodeExits);
    await vi.waitFor(() => expect(heard.length).toBe(10));
    expect(heard.sort((a, b) => a - b)).toEqual(Array.from({ length: 10 }, (_, index) => index));
  });

  it('holds no descriptor of its own per child: only the pipes the caller reads', async () => {
    const descriptors = () => readdirSync('/proc/self/fd').length;
    const gate = join(directory, 'hold-gate');
    expect(spawnSync('mkfifo', [gate]).status).toBe(0);
    const holder = openSync(gate, 'r+');
    try {
      const before = descriptors();
      const quiet = () => openSync('/dev/null', 'w');
      const exits: Promise<number | null>[] = [];
      for (let index = 0; index < 100; index += 1) {
        exits.push(
          new Promise((resolve) => {
            spawnNative(
              {
                file: '/bin/sh',
                args: ['-c', `read -r _ < ${gate}`],
                cwd: directory,
                env: { PATH },
                stdout: quiet(),
                stderr: quiet(),
              },
              (code) => resolve(code),
            );
          }),
        );
      }
      // A hundred children alive, and not one descriptor more in this process.
      expect(descriptors()).toBe(before);
      writeSync(holder, 'x\n'.repeat(100));
      expect(await Promise.all(exits)).toEqual(Array.from({ length: 100 }, () => 0));
    } finally {
      closeSync(holder);
    }
  });
});

describe('createSpawnLauncher without a spawn of its own', () => {
  it('spawns without a fork, and with child_process once ERRAND_NODE_SPAWN=1 asks for it', async () => {
    const launch = () =>
      createSpawnLauncher().launch({
        file: 'bash',
        args: ['-c', 'echo $PPID'],
        cwd: directory,
        env: { PATH },
      });
    const parentOf = async (child: ReturnType<typeof launch>) => {
      const result = await ended(child);
      return { text: result.stdout.trim(), unforked: child.constructor.name === 'UnforkedProcess' };
    };
    expect(await parentOf(launch())).toEqual({ text: String(process.pid), unforked: true });
    process.env[NODE_SPAWN_VARIABLE] = '1';
    try {
      expect(await parentOf(launch())).toEqual({ text: String(process.pid), unforked: false });
    } finally {
      delete process.env[NODE_SPAWN_VARIABLE];
    }
  });
});
