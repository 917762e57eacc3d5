/** Sandbox profiles without running anything: validation, the missing-bwrap error, the request rewrite. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrandError } from '../../tasks/index.js';
import { parseBubblewrapHelp } from './bubblewrap-features.js';
import { hideFromSandboxes } from './private-paths.js';
import type { LaunchRequest } from './process-launcher.js';
import { resolveSandbox, sandboxSummaryOf } from './sandbox.js';

// A stand-in for bwrap where only the rewrite is looked at: any executable file will do, with the
// features of Debian 12's bwrap 0.8 stated instead of read from its `--help`.
const bwrap = process.execPath;
const features = { unshareUser: true, capDrop: true, disableUserns: true };
const noCapabilities = ['--unshare-user', '--disable-userns', '--cap-drop', 'ALL'];

const request: LaunchRequest = {
  file: '/usr/bin/bash',
  args: ['-c', 'make test'],
  cwd: '/work/project/src',
  env: { PATH: '/usr/bin', TMPDIR: '/var/tmp/mine' },
  tag: { name: 'ERRAND_PROCESS_TAG', value: 'tree-1' },
};

describe('resolveSandbox', () => {
  it('refuses an unknown profile, naming the field and the value', () => {
    expect(() => resolveSandbox('sandboxed' as never)).toThrow(
      expect.objectContaining({
        code: 'INVALID_ARGUMENT',
        message:
          'Expected `sandbox` to be one of `read-only`, `workspace-write`, `full`, got "sandboxed" (string)',
      }),
    );
    expect(() => resolveSandbox({ profile: 'read-only', network: 'no' as never }, 'bash.sandbox')).toThrow(
      expect.objectContaining({
        code: 'INVALID_ARGUMENT',
        message: expect.stringContaining('`bash.sandbox.network`'),
      }),
    );
    expect(() => resolveSandbox({ profile: 'nope' } as never)).toThrow(
      expect.objectContaining({ message: expect.stringContaining('`sandbox.profile`') }),
    );
  });

  it('names the Debian package when a profile needs bwrap and PATH has none, and never falls back', () => {
    for (const setting of [
      { profile: 'workspace-write', searchPath: '/nonexistent:/also-not' },
      { profile: 'read-only', searchPath: '' },
      { profile: 'full', network: false, searchPath: '/nonexistent' },
    ] as const) {
      let thrown: unknown;
      try {
        resolveSandbox(setting);
      } catch (error) {
        thrown = error;
      }
      expect(ErrandError.hasCode(thrown, 'SANDBOX_UNAVAILABLE')).toBe(true);
      const error = thrown as ErrandError;
      expect(error.fault).toBe('system');
      expect(error.message).toContain("Install Debian's `bubblewrap` package (apt-get install bubblewrap)");
      expect(error.message).toContain('`bwrap` was not found on PATH');
      expect(error.context).toMatchObject({ profile: setting.profile, package: 'bubblewrap' });
    }
    expect(() => resolveSandbox({ profile: 'read-only', bwrap: '/nonexistent/bwrap' })).toThrow(
      expect.objectContaining({
        code: 'SANDBOX_UNAVAILABLE',
        message: expect.stringContaining('"/nonexistent/bwrap" is not an executable file'),
      }),
    );
  });

  it('needs nothing for full with the network on: the request is launched as it is', () => {
    const sandbox = resolveSandbox({ profile: 'full', searchPath: '/nonexistent' });
    expect(sandbox.confines).toBe(false);
    expect(sandbox.bwrapPath).toBeUndefined();
    expect(sandbox.confine(request)).toBe(request);
    expect(sandbox.summary).toBe('full, network on');
    expect(resolveSandbox(sandbox)).toBe(sandbox);
  });
});

describe('Sandbox.confine', () => {
  it('workspace-write: read-only root, a fresh /dev, its own pids, a private /tmp, then the workspace writable', () => {
    const sandbox = resolveSandbox({ profile: 'workspace-write', bwrap, features });
    const confined = sandbox.confine(request, '/work/project');
    expect(confined.file).toBe(bwrap);
    expect(confined.args).toEqual([
      '--ro-bind',
      '/',
      '/',
      '--dev',
      '/dev',
      '--unshare-pid',
      '--proc',
      '/proc',
      '--tmpfs',
      '/tmp',
      '--bind',
      '/work/project',
      '/work/project',
      ...noCapabilities,
      '--chdir',
      '/work/project/src',
      '--',
      '/usr/bin/bash',
      '-c',
      'make test',
    ]);
    // Same directory, same tag; temporary files go to the private /tmp.
    expect(confined.cwd).toBe(request.cwd);
    expect(confined.tag).toBe(request.tag);
    expect(confined.env).toEqual({ PATH: '/usr/bin', TMPDIR: '/tmp' });
    expect(request.env.TMPDIR).toBe('/var/tmp/mine');
  });

  it('read-only with the network off: no writable mount, its own network namespace', () => {
    const sandbox = resolveSandbox({ profile: 'read-only', network: false, bwrap, features });
    expect(sandbox.summary).toBe('read-only, network off');
    expect(sandbox.facts).toEqual({ profile: 'read-only', network: false });
    expect(sandbox.confine(request).args).toEqual([
      '--ro-bind',
      '/',
      '/',
      '--dev',
      '/dev',
      '--unshare-pid',
      '--proc',
      '/proc',
      '--tmpfs',
      '/tmp',
      ...noCapabilities,
      '--unshare-net',
      '--chdir',
      '/work/project/src',
      '--',
      '/usr/bin/bash',
      '-c',
      'make test',
    ]);
  });

  it('keeps a working directory inside /tmp visible, read-only unless the workspace covers it', () => {
    const inTmp = { ...request, cwd: '/tmp/errand-ws/sub' };
    const readOnly = resolveSandbox({ profile: 'read-only', bwrap, features }).confine(inTmp);
    expect(readOnly.args.slice(0, 13)).toEqual([
      '--ro-bind',
      '/',
      '/',
      '--dev',
      '/dev',
      '--unshare-pid',
      '--proc',
      '/proc',
      '--tmpfs',
      '/tmp',
      '--ro-bind',
      '/tmp/errand-ws/sub',
      '/tmp/errand-ws/sub',
    ]);
    const writable = resolveSandbox({ profile: 'workspace-write', bwrap, features }).confine(
      inTmp,
      '/tmp/errand-ws',
    );
    expect(writable.args.slice(10, 13)).toEqual(['--bind', '/tmp/errand-ws', '/tmp/errand-ws']);
    expect(writable.args.filter((arg) => arg === '--ro-bind')).toHaveLength(1);
    // A workdir outside the workspace but inside /tmp is still there to chdir into, read-only.
    const outside = resolveSandbox({ profile: 'workspace-write', bwrap, features }).confine(
      inTmp,
      '/work/project',
    );
    expect(outside.args).toContain('/tmp/errand-ws/sub');
    expect(outside.args.filter((arg) => arg === '--ro-bind')).toHaveLength(2);
  });

  it('full with the network off binds everything writable, devices included, and unshares the network', () => {
    const confined = resolveSandbox({ profile: 'full', network: false, bwrap, features }).confine(request);
    expect(confined.args).toEqual([
      '--dev-bind',
      '/',
      '/',
      ...noCapabilities,
      '--unshare-net',
      '--chdir',
      '/work/project/src',
      '--',
      '/usr/bin/bash',
      '-c',
      'make test',
    ]);
    expect(confined.env).toBe(request.env);
  });
});

describe('sandboxSummaryOf', () => {
  it('reads a task detail, and nothing from one without a sandbox', () => {
    expect(sandboxSummaryOf({ sandbox: { profile: 'workspace-write', network: false } })).toBe(
      'workspace-write, network off',
    );
    expect(sandboxSummaryOf({ sandbox: { profile: 'full', network: true } })).toBe('full, network on');
    expect(sandboxSummaryOf({})).toBeUndefined();
    expect(sandboxSummaryOf({ sandbox: 'odd' })).toBeUndefined();
  });
});

describe('bubblewrap features', () => {
  const help08 = [
    'usage: bwrap [OPTIONS...] [--] COMMAND [ARGS...]',
    '    --unshare-user               Create new user namespace (may be automatically implied if not setuid)',
    '    --disable-userns             Disable further use of user namespaces inside sandbox',
    '    --cap-drop CAP               Drop cap CAP when running as privileged user',
  ].join('\n');

  it('reads which options the installed bwrap has from its --help', () => {
    expect(parseBubblewrapHelp(help08)).toEqual(features);
    // bubblewrap 0.6 (Ubuntu 22.04): no --disable-userns, so none is passed.
    const help06 = help08.replace(/^.*--disable-userns.*$/m, '');
    const older = parseBubblewrapHelp(help06);
    expect(older).toEqual({ unshareUser: true, capDrop: true, disableUserns: false });
    const args = resolveSandbox({ profile: 'read-only', bwrap, features: older }).confine(request).args;
    expect(args).toEqual(expect.arrayContaining(['--unshare-user', '--cap-drop', 'ALL']));
    expect(args).not.toContain('--disable-userns');
  });

  it('refuses a bwrap that cannot drop every capability, never confining with it', () => {
    const old = parseBubblewrapHelp(help08.replace(/^.*--cap-drop.*$/m, ''));
    expect(() => resolveSandbox({ profile: 'read-only', bwrap, features: old })).toThrow(
      expect.objectContaining({
        code: 'SANDBOX_UNAVAILABLE',
        message: expect.stringContaining('has no --cap-drop (bubblewrap 0.2 or later is needed'),
      }),
    );
  });
});

describe("Errand's private paths", () => {
  it('covers a registered directory with an empty tmpfs and a file with /dev/null, after the workspace', () => {
    const root = mkdtempSync(join('/var/tmp', 'errand-sandbox-test-'));
    const home = join(root, 'home');
    const workspace = join(root, 'project');
    mkdirSync(join(home, 'run'), { recursive: true });
    mkdirSync(join(workspace, 'tmp', 'errand-bash-x'), { recursive: true });
    writeFileSync(join(root, 'errand.sqlite'), '');
    const releases = [
      hideFromSandboxes(home),
      hideFromSandboxes(join(root, 'errand.sqlite')),
      hideFromSandboxes(join(workspace, 'tmp', 'errand-bash-x')),
      hideFromSandboxes(join(root, 'not-there')),
    ];
    try {
      const args = resolveSandbox({ profile: 'workspace-write', bwrap, features }).confine(
        { ...request, cwd: workspace },
        workspace,
      ).args;
      const at = (value: string) => args.indexOf(value);
      expect(args.slice(at('--unshare-user'))).toEqual([
        ...noCapabilities,
        '--tmpfs',
        home,
        '--ro-bind',
        '/dev/null',
        join(root, 'errand.sqlite'),
        '--tmpfs',
        join(workspace, 'tmp', 'errand-bash-x'),
        '--chdir',
        workspace,
        '--',
        '/usr/bin/bash',
        '-c',
        'make test',
      ]);
      // Inside the workspace's bind, so it stays covered.
      expect(at('--bind')).toBeLessThan(at(join(workspace, 'tmp', 'errand-bash-x')));
    } finally {
      for (const release of releases) release();
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('binds a workspace inside a covered directory again (itself only), before what is inside it', () => {
    const home = mkdtempSync(join('/var/tmp', 'errand-sandbox-test-'));
    const workspace = join(home, 'project');
    const inner = join(workspace, '.errand');
    mkdirSync(inner, { recursive: true });
    const releases = [hideFromSandboxes(home), hideFromSandboxes(inner)];
    try {
      const args = resolveSandbox({ profile: 'workspace-write', bwrap, features }).confine(
        { ...request, cwd: workspace },
        workspace,
      ).args;
      expect(args.slice(args.indexOf('ALL') + 1, args.indexOf('--chdir'))).toEqual([
        '--tmpfs',
        home,
        '--bind',
        workspace,
        workspace,
        '--tmpfs',
        inner,
      ]);
      // Released: nothing is covered any more.
      for (const release of releases) release();
      const after = resolveSandbox({ profile: 'workspace-write', bwrap, features }).confine(
        { ...request, cwd: workspace },
        workspace,
      ).args;
      expect(after).not.toContain(home);
    } finally {
      for (const release of releases) release();
      rmSync(home, { recursive: true, force: true });
    }
  });
});
