/**
 * Every `errand` command started on a data directory it cannot use prints one line naming the directory
 * and the file system's cause, and exits with code 2: a file in the way (always), a read-only and a full
 * tmpfs (as root).
 */
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI_PATH } from '../../test/support/mcp-client.js';
import { mountTmpfs, type Tmpfs, tmpfsSkipReason } from '../../test/support/tmpfs.js';
import { openSqliteSessionStore } from '../store/index.js';

const mounts: Tmpfs[] = [];
const directories: string[] = [];

afterEach(() => {
  for (const mount of mounts.splice(0)) mount.dispose();
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

/** Runs `errand <args>` with stdin closed; resolves with its exit code and output. */
function runCli(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI_PATH, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** Each command, started with its data directory at `home` (the demo's is its temporary directory). */
function commands(home: string): Array<{ name: string; args: string[]; env: Record<string, string> }> {
  return [
    { name: 'mcp', args: ['mcp', '--home', home], env: {} },
    { name: 'serve', args: ['serve', '--home', home], env: {} },
    { name: 'chat', args: ['chat', '--home', home], env: { ERRAND_MODEL: 'any-model' } },
    { name: 'demo', args: ['demo', '--no-dashboard'], env: { TMPDIR: home } },
  ];
}

async function expectOneLine(home: string, cause: RegExp, except: readonly string[] = []): Promise<void> {
  for (const command of commands(home).filter((each) => !except.includes(each.name))) {
    const result = await runCli(command.args, command.env);
    expect(result.code, `${command.name}: ${result.stderr}`).toBe(2);
    const lines = result.stderr.split('\n').filter((line) => line !== '');
    expect(lines, command.name).toHaveLength(1);
    expect(lines[0], command.name).toMatch(new RegExp(`^errand ${command.name}: `));
    expect(lines[0], command.name).toContain(home);
    expect(lines[0], command.name).toMatch(cause);
    expect(lines[0], command.name).not.toMatch(/\n\s+at /);
  }
}

describe('starting on a data directory that cannot be used', () => {
  it('a file where the directory should be: one line naming it and ENOTDIR, exit code 2', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'errand-home-'));
    directories.push(parent);
    writeFileSync(join(parent, 'file'), 'not a directory\n');
    await expectOneLine(
      join(parent, 'file', 'home'),
      /a part of the path is a file, not a directory \(ENOTDIR\)$/,
    );
  });

  it('an empty store file, and one that is not SQLite: one line naming the file, exit code 2', async () => {
    for (const [content, cause] of [
      ['', /the file is empty \(0 bytes\), not an SQLite database/],
      ['PK\u0003\u0004 a zip file, not a store', /the file is not an SQLite database/],
    ] as const) {
      const home = mkdtempSync(join(tmpdir(), 'errand-home-'));
      directories.push(home);
      writeFileSync(join(home, 'errand.sqlite'), content);
      // The demo makes a data directory of its own.
      await expectOneLine(home, cause, ['demo']);
    }
  });

  const skip = tmpfsSkipReason();
  it.skipIf(skip !== undefined)(
    `a read-only file system: one line naming the directory and EROFS${skip ? ` (skipped: ${skip})` : ''}`,
    async () => {
      const mount = mountTmpfs('1m', 'ro');
      mounts.push(mount);
      await expectOneLine(join(mount.path, 'home'), /the file system is read-only \(EROFS\)$/);
    },
  );

  it.skipIf(skip !== undefined)(
    `an existing data directory on a file system remounted read-only${skip ? ` (skipped: ${skip})` : ''}`,
    async () => {
      const mount = mountTmpfs('1m');
      mounts.push(mount);
      const home = join(mount.path, 'home');
      openSqliteSessionStore({ home }).close();
      mount.remount('ro');
      const result = await runCli(['mcp', '--home', home]);
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(
        `errand mcp: Cannot use the data directory ${home}: the file system is read-only (EROFS)\n`,
      );
    },
  );

  it.skipIf(skip !== undefined)(
    `a full file system: one line naming the store's file and SQLITE_FULL${skip ? ` (skipped: ${skip})` : ''}`,
    async () => {
      const mount = mountTmpfs('1m');
      mounts.push(mount);
      const descriptor = openSync(join(mount.path, 'filler'), 'w');
      try {
        for (const size of [1 << 16, 1 << 12, 1]) {
          try {
            for (;;) writeSync(descriptor, Buffer.alloc(size, 1));
          } catch (error) {
            if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
          }
        }
      } finally {
        closeSync(descriptor);
      }
      const home = join(mount.path, 'home');
      for (const command of commands(home).filter((candidate) => candidate.name !== 'demo')) {
        const result = await runCli(command.args, command.env);
        expect(result.code, command.name).toBe(2);
        expect(result.stderr, command.name).toBe(
          `errand ${command.name}: Cannot open the session store "${join(home, 'errand.sqlite')}": database or disk is full (SQLITE_FULL)\n`,
        );
      }
    },
  );
});
