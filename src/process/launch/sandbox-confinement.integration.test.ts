/**
 * Attacks from inside the sandbox against real bwrap, as root and as an unprivileged user created for the
 * test: every profile leaves the command no capability (every `Cap*` line of its `/proc/self/status` is
 * zero), `mount -o remount,rw /` and `unshare -r` fail, a write outside the workspace lands nowhere, a
 * `ptrace` attach to a process outside (same user) is refused, and Errand's private files (a registered
 * data directory with a store and a socket) are not there to read. Without `--unshare-user --cap-drop ALL`
 * root's remount succeeds and the write lands on the host: these cases fail on the old command line.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findBubblewrap } from '../../../test/support/bubblewrap.js';
import {
  asUser,
  createTestUser,
  runsAsRoot,
  type TestUser,
} from '../../../test/support/unprivileged-user.js';
import { hideFromSandboxes } from './private-paths.js';
import { resolveSandbox, type SandboxOptions } from './sandbox.js';

const bwrap = findBubblewrap();

const ATTACK = String.raw`
grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status
if mount -o remount,rw / 2>/dev/null; then echo pwn > "$OUTSIDE/escaped-by-mount.txt"; echo mount=0; else echo mount=failed; fi
if unshare -r true 2>/dev/null; then echo unshare=0; else echo unshare=failed; fi
if unshare -U true 2>/dev/null; then echo userns=0; else echo userns=failed; fi
echo pwn 2>/dev/null > "$OUTSIDE/escaped-by-write.txt" && echo write=0 || echo write=failed
perl -e 'my $r = syscall(101, 16, $ARGV[0] + 0, 0, 0); print $r == 0 ? "ptrace=0\n" : "ptrace=failed\n"' "$VICTIM"
cat "$ERRAND_DATA/errand.sqlite" 2>/dev/null && echo store=read || echo store=hidden
test -S "$ERRAND_DATA/run/mcp.sock" && echo socket=visible || echo socket=hidden
`;

interface Identity {
  readonly name: string;
  readonly user: TestUser | undefined;
}

function run(file: string, args: readonly string[], env: NodeJS.ProcessEnv, cwd: string): Promise<string> {
  return new Promise((resolve) => {
    execFile(file, [...args], { env, cwd, encoding: 'utf8', timeout: 30_000 }, (_error, stdout, stderr) =>
      resolve(`${stdout}${stderr}`),
    );
  });
}

function facts(output: string): Record<string, string> {
  return Object.fromEntries(
    output
      .split('\n')
      .map((line) => /^(\w+)[=:]\s*(.*)$/.exec(line))
      .filter((match) => match !== null)
      .map((match) => [match[1]!, match[2]!.trim()]),
  );
}

describe.skipIf(bwrap === undefined)('confinement against the command itself', () => {
  let root: string;
  let user: TestUser | undefined;
  let socketServer: Server | undefined;
  let releaseData: (() => void) | undefined;
  const victims: ChildProcess[] = [];
  const identities: Identity[] = [];

  beforeAll(async () => {
    root = mkdtempSync(join('/var/tmp', 'errand-confine-'));
    chmodSync(root, 0o755);
    // Errand's data directory, readable by anyone: only the sandbox keeps the command out of it.
    const data = join(root, 'data');
    mkdirSync(join(data, 'run'), { recursive: true, mode: 0o755 });
    chmodSync(data, 0o755);
    chmodSync(join(data, 'run'), 0o755);
    writeFileSync(join(data, 'errand.sqlite'), 'SQLite format 3\0 the store', { mode: 0o644 });
    socketServer = createServer();
    await new Promise<void>((resolve) => socketServer!.listen(join(data, 'run', 'mcp.sock'), resolve));
    releaseData = hideFromSandboxes(data);
    identities.push({ name: runsAsRoot ? 'root' : 'this user', user: undefined });
    if (runsAsRoot) {
      user = createTestUser();
      identities.push({ name: `unprivileged user ${user.name}`, user });
    }
  });

  afterAll(async () => {
    for (const victim of victims) victim.kill('SIGKILL');
    releaseData?.();
    await new Promise<void>((resolve) => (socketServer ? socketServer.close(() => resolve()) : resolve()));
    rmSync(root, { recursive: true, force: true });
    user?.remove();
  });

  /** A directory for one case: a workspace and an "outside" both writable by `identity` on the host. */
  function prepare(identity: Identity, label: string): { workspace: string; outside: string } {
    const base = join(root, label);
    const workspace = join(base, 'workspace');
    const outside = join(base, 'outside');
    for (const directory of [base, workspace, outside]) {
      mkdirSync(directory, { recursive: true });
      chmodSync(directory, 0o755);
      if (identity.user) chownSync(directory, identity.user.uid, identity.user.gid);
    }
    return { workspace, outside };
  }

  /** A process outside the sandbox, of the same user, for the ptrace attack. */
  async function victimOf(identity: Identity): Promise<number> {
    const command = identity.user
      ? asUser(identity.user, 'sleep', ['1000'])
      : { file: 'sleep', args: ['1000'] };
    const victim = spawn(command.file, command.args, { stdio: 'ignore' });
    victims.push(victim);
    await new Promise((resolve) => victim.once('spawn', resolve));
    return victim.pid!;
  }

  const profiles: Array<{ label: string; options: Omit<SandboxOptions, 'bwrap'>; confinesFiles: boolean }> = [
    { label: 'read-only', options: { profile: 'read-only' }, confinesFiles: true },
    { label: 'workspace-write', options: { profile: 'workspace-write' }, confinesFiles: true },
    { label: 'read-only-offline', options: { profile: 'read-only', network: false }, confinesFiles: true },
    { label: 'full-offline', options: { profile: 'full', network: false }, confinesFiles: false },
  ];

  for (const profile of profiles) {
    it(`${profile.label}: no capability, no mount, no namespace, no ptrace, no write outside, no store`, async () => {
      for (const identity of identities) {
        const { workspace, outside } = prepare(
          identity,
          `${profile.label}-${identity.user ? 'user' : 'self'}`,
        );
        const victim = await victimOf(identity);
        const sandbox = resolveSandbox({ ...profile.options, bwrap });
        const confined = sandbox.confine(
          {
            file: '/bin/bash',
            args: ['-c', ATTACK],
            cwd: workspace,
            env: {
              ...process.env,
              OUTSIDE: outside,
              VICTIM: String(victim),
              ERRAND_DATA: join(root, 'data'),
            },
            tag: undefined,
          },
          workspace,
        );
        const command = identity.user
          ? asUser(identity.user, confined.file, confined.args)
          : { file: confined.file, args: confined.args };
        const output = await run(command.file, command.args, confined.env, workspace);
        const seen = facts(output);
        const context = `${profile.label} as ${identity.name}:\n${output}`;
        for (const line of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']) {
          expect(seen[line], context).toBe('0000000000000000');
        }
        expect(seen.mount, context).toBe('failed');
        expect(seen.unshare, context).toBe('failed');
        if (sandbox.features?.disableUserns) expect(seen.userns, context).toBe('failed');
        expect(seen.ptrace, context).toBe('failed');
        expect(existsSync(join(outside, 'escaped-by-mount.txt')), context).toBe(false);
        if (profile.confinesFiles) {
          expect(seen.write, context).toBe('failed');
          expect(existsSync(join(outside, 'escaped-by-write.txt')), context).toBe(false);
        }
        expect(seen.store, context).toBe('hidden');
        expect(seen.socket, context).toBe('hidden');
        expect(output, context).not.toContain('the store');
      }
    });
  }
});
