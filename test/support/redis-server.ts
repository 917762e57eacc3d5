/**
 * A `redis-server` of a suite's own: Debian's package, on a free port of 127.0.0.1, with its data in a
 * fresh directory (append-only file on, fsync always, so a restart keeps what was acknowledged). Found
 * the way a person has it ($ERRAND_REDIS_SERVER, else `redis-server` on PATH); missing, the suite skips
 * with one line — or fails where externals are required (`ERRAND_REQUIRE_EXTERNALS=1`, set by CI).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ExternalRequirement, type ResolveOptions, requireExternal } from './external-requirement.js';

export const REDIS_REQUIREMENT: ExternalRequirement = {
  name: 'redis-server',
  neededBy: 'the Redis provider and worker tests',
  variables: ['ERRAND_REDIS_SERVER'],
  commands: ['redis-server'],
  install: 'Debian/Ubuntu: sudo apt-get install redis-server',
};

/** The server's path, or undefined after one skip line (an error where externals are required). */
export function findRedisServer(options?: ResolveOptions): string | undefined {
  return requireExternal(REDIS_REQUIREMENT, options);
}

export interface TestRedis {
  readonly url: string;
  readonly port: number;
  /** Stops the server (SIGKILL: no save on exit; the append-only file holds what was acknowledged). */
  kill(): Promise<void>;
  /** Starts it again on the same port and data. */
  restart(): Promise<void>;
  /** Stops it and removes its data. */
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** Starts a server; resolves once it accepts connections. */
export async function startTestRedis(path: string): Promise<TestRedis> {
  const directory = await mkdtemp(join(tmpdir(), 'errand-redis-'));
  const port = await freePort();
  let child: ChildProcess | undefined;
  const launch = async () => {
    const started = spawn(
      path,
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        directory,
        '--save',
        '',
        '--appendonly',
        'yes',
        '--appendfsync',
        'always',
        '--protected-mode',
        'no',
        '--loglevel',
        'warning',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child = started;
    await new Promise<void>((resolve, reject) => {
      let output = '';
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (/Ready to accept connections/.test(output)) resolve();
      };
      started.stdout!.on('data', onData);
      started.stderr!.on('data', onData);
      started.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${output}`)));
      // Warning-level logs print no banner: poll the port instead.
      const poll = async () => {
        for (let attempt = 0; attempt < 400; attempt += 1) {
          if (await accepts(port)) return resolve();
          await new Promise((r) => setTimeout(r, 25));
        }
        reject(new Error(`redis-server did not accept connections on ${port}: ${output}`));
      };
      void poll();
    });
  };
  const kill = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      running.once('exit', () => resolve());
      running.kill('SIGKILL');
    });
  };
  await launch();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    kill,
    restart: launch,
    stop: async () => {
      await kill();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    import('node:net').then(({ connect }) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.write('PING\r\n');
        socket.once('data', (data) => {
          socket.destroy();
          resolve(data.toString().startsWith('+PONG'));
        });
      });
      socket.once('error', () => resolve(false));
    });
  });
}
