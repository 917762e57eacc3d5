/**
 * `errand install` as a person runs it: it writes the project's settings, a second run changes nothing,
 * `--print` shows the result without writing, and a broken settings file stops it with nothing written.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI_PATH } from '../../test/support/mcp-client.js';

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function install(
  project: string,
  args: readonly string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI_PATH, 'install', ...args, '--project', project], {
      stdio: ['ignore', 'pipe', 'pipe'],
      // What install records for a later uninstall goes to the project's own data directory.
      env: { ...process.env, ERRAND_HOME: join(project, '.errand-data') },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('errand install', () => {
  it('writes once, then reports unchanged; --print writes nothing', async () => {
    const project = realpathSync(mkdtempSync(join(tmpdir(), 'errand-inst-')));
    directories.push(project);
    const printed = await install(project, ['claude-code', '--print']);
    expect(printed.code).toBe(0);
    expect(printed.stdout).toContain(`# ${join(project, '.mcp.json')}`);
    expect(() => statSync(join(project, '.mcp.json'))).toThrow();

    const first = await install(project, ['claude-code']);
    expect(first.stdout).toContain(`created ${join(project, '.mcp.json')}`);
    expect(first.stdout).toContain(`created ${join(project, '.claude', 'settings.json')}`);
    const written = readFileSync(join(project, '.claude', 'settings.json'), 'utf8');
    expect(JSON.parse(written).hooks.Stop[0].hooks[0].command).toContain(`${CLI_PATH} hook claude-code Stop`);

    const second = await install(project, ['claude-code']);
    expect(second.stdout).toContain(`unchanged ${join(project, '.mcp.json')}`);
    expect(second.stdout).toContain(`unchanged ${join(project, '.claude', 'settings.json')}`);
    expect(readFileSync(join(project, '.claude', 'settings.json'), 'utf8')).toBe(written);
  });

  it('refuses a broken settings file and writes nothing, not even the other file', async () => {
    const project = realpathSync(mkdtempSync(join(tmpdir(), 'errand-inst-')));
    directories.push(project);
    mkdirSync(join(project, '.claude'));
    writeFileSync(join(project, '.claude', 'settings.json'), '{ "hooks": ');
    const result = await install(project, ['claude-code']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${join(project, '.claude', 'settings.json')}: not valid JSON`);
    expect(() => statSync(join(project, '.mcp.json'))).toThrow();
    const usage = await install(project, ['cursor']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/Expected `<client>` to be one of claude-code, codex, gemini, got "cursor"/);
    const near = await install(project, ['claude']);
    expect(near.code).toBe(2);
    expect(near.stderr).toContain('got "claude" (did you mean claude-code?)');
  });

  it('uninstall gives every file back byte for byte (or removes it when install created it), and says how to open the dashboard', async () => {
    const project = realpathSync(mkdtempSync(join(tmpdir(), 'errand-inst-')));
    directories.push(project);
    mkdirSync(join(project, '.claude'));
    // A person's own file, in a layout of their own (not the one install writes).
    const mine =
      '{"permissions":{"allow":["Bash(ls:*)"]},\n  "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}';
    writeFileSync(join(project, '.claude', 'settings.json'), mine);
    const installed = await install(project, ['claude-code']);
    expect(installed.code).toBe(0);
    expect(installed.stdout).toContain('errand dashboard');
    expect(readFileSync(join(project, '.claude', 'settings.json'), 'utf8')).not.toBe(mine);
    const removed = await install(project, ['claude-code', '--remove']);
    expect(removed.code, removed.stderr).toBe(0);
    expect(readFileSync(join(project, '.claude', 'settings.json'), 'utf8')).toBe(mine);
    expect(() => statSync(join(project, '.mcp.json'))).toThrow();
    expect(removed.stdout).toContain(`removed ${join(project, '.mcp.json')}`);
    // The same through `errand uninstall`, after the person edited the file since: only Errand's entries go.
    await install(project, ['claude-code']);
    const edited = JSON.parse(readFileSync(join(project, '.claude', 'settings.json'), 'utf8'));
    edited.theme = 'light';
    writeFileSync(join(project, '.claude', 'settings.json'), JSON.stringify(edited));
    const uninstall = await new Promise<{ code: number | null }>((resolve) => {
      const child = spawn(process.execPath, [CLI_PATH, 'uninstall', 'claude-code', '--project', project], {
        stdio: 'ignore',
        env: { ...process.env, ERRAND_HOME: join(project, '.errand-data') },
      });
      child.on('exit', (code) => resolve({ code }));
    });
    expect(uninstall.code).toBe(0);
    const left = JSON.parse(readFileSync(join(project, '.claude', 'settings.json'), 'utf8'));
    expect(left).toEqual({ ...JSON.parse(mine), theme: 'light' });
  });
});
