/** Sandbox profiles without running anything: validation, the missing-bwrap error, the request rewrite. */
import { describe, expect, it } from 'vitest';
import { ErrandError } from '../../tasks/index.js';
import type { LaunchRequest } from './process-launcher.js';
import { resolveSandbox, sandboxSummaryOf } from './sandbox.js';

// A stand-in for bwrap where only the rewrite is looked at: any executable file will do.
const bwrap = process.execPath;

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
    const sandbox = resolveSandbox({ profile: 'workspace-write', bwrap });
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
    const sandbox = resolveSandbox({ profile: 'read-only', network: false, bwrap });
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
    const readOnly = resolveSandbox({ profile: 'read-only', bwrap }).confine(inTmp);
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
    const writable = resolveSandbox({ profile: 'workspace-write', bwrap }).confine(inTmp, '/tmp/errand-ws');
    expect(writable.args.slice(10, 13)).toEqual(['--bind', '/tmp/errand-ws', '/tmp/errand-ws']);
    expect(writable.args.filter((arg) => arg === '--ro-bind')).toHaveLength(1);
    // A workdir outside the workspace but inside /tmp is still there to chdir into, read-only.
    const outside = resolveSandbox({ profile: 'workspace-write', bwrap }).confine(inTmp, '/work/project');
    expect(outside.args).toContain('/tmp/errand-ws/sub');
    expect(outside.args.filter((arg) => arg === '--ro-bind')).toHaveLength(2);
  });

  it('full with the network off binds everything writable and unshares only the network', () => {
    const confined = resolveSandbox({ profile: 'full', network: false, bwrap }).confine(request);
    expect(confined.args).toEqual([
      '--bind',
      '/',
      '/',
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
