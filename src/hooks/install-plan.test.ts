/**
 * `errand install`'s plans and merges: the user's settings survive (keys, other servers, other hooks,
 * TOML comments), Errand's entries are written once however often it runs, a moved Errand replaces its
 * old hooks instead of adding a second set, and a broken file is refused without writing anything.
 */

import { parse as parseToml } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { type InstallOptions, planInstall, shellQuote } from './install-plan.js';
import { SettingsFileError } from './settings-merge.js';

const errand = { command: '/usr/bin/node', args: ['/opt/errand/dist/cli/main.js'] };

function plan(overrides: Partial<InstallOptions> & Pick<InstallOptions, 'client'>) {
  return planInstall({
    scope: 'project',
    projectDirectory: '/work/project',
    userHome: '/home/me',
    errand,
    ...overrides,
  });
}

/** Applies a plan to in-memory files and returns them. */
function apply(files: Record<string, string>, planned: ReturnType<typeof plan>): Record<string, string> {
  const next = { ...files };
  for (const file of planned.files) next[file.path] = file.merge(files[file.path]);
  return next;
}

describe('errand install', () => {
  it('claude-code, project scope: .mcp.json and .claude/settings.json, keeping what was there', () => {
    const before = {
      '/work/project/.mcp.json': JSON.stringify({ mcpServers: { other: { command: 'other-server' } } }),
      '/work/project/.claude/settings.json': JSON.stringify({
        permissions: { allow: ['Bash(ls:*)'] },
        hooks: { PostToolUse: [{ matcher: 'Write', hooks: [{ type: 'command', command: 'prettier' }] }] },
      }),
    };
    const after = apply(before, plan({ client: 'claude-code' }));
    const servers = JSON.parse(after['/work/project/.mcp.json']!).mcpServers;
    expect(servers.other).toEqual({ command: 'other-server' });
    expect(servers.errand).toEqual({
      command: '/usr/bin/node',
      args: ['/opt/errand/dist/cli/main.js', 'mcp'],
    });
    const settings = JSON.parse(after['/work/project/.claude/settings.json']!);
    expect(settings.permissions).toEqual({ allow: ['Bash(ls:*)'] });
    expect(settings.hooks.PostToolUse).toEqual([
      { matcher: 'Write', hooks: [{ type: 'command', command: 'prettier' }] },
      {
        matcher: '*',
        hooks: [
          {
            type: 'command',
            command: '/usr/bin/node /opt/errand/dist/cli/main.js hook claude-code PostToolUse',
            timeout: 30,
          },
        ],
      },
    ]);
    expect(settings.hooks.UserPromptSubmit[0].hooks[0].command).toMatch(/hook claude-code UserPromptSubmit$/);
    // The end-of-turn hook holds a headless run up to 30 minutes: its timeout leaves room for that.
    expect(settings.hooks.Stop[0].hooks[0]).toMatchObject({ timeout: 1830 });
    // The wake: a background end-of-turn hook that wakes the model when it exits 2.
    expect(settings.hooks.Stop[1].hooks[0]).toEqual({
      type: 'command',
      command: '/usr/bin/node /opt/errand/dist/cli/main.js hook claude-code Stop --wake',
      timeout: 86_430,
      asyncRewake: true,
    });
    // Compaction: PreCompact marks the task digest due; a compacted conversation's start hands it over.
    expect(settings.hooks.PreCompact[0].hooks[0].command).toMatch(/hook claude-code PreCompact$/);
    expect(settings.hooks.SessionStart[0]).toMatchObject({ matcher: 'compact' });
    expect(settings.hooks.SessionStart[0].hooks[0].command).toMatch(/hook claude-code SessionStart$/);
  });

  it('compaction hooks: Codex PreCompact and SessionStart, Gemini CLI PreCompress; uninstall takes them out', () => {
    const codex = apply({}, plan({ client: 'codex' }));
    const codexHooks = JSON.parse(codex['/work/project/.codex/hooks.json']!).hooks;
    expect(Object.keys(codexHooks)).toEqual([
      'PostToolUse',
      'UserPromptSubmit',
      'Stop',
      'PreCompact',
      'SessionStart',
    ]);
    const gemini = apply({}, plan({ client: 'gemini' }));
    const geminiHooks = JSON.parse(gemini['/work/project/.gemini/settings.json']!).hooks;
    expect(Object.keys(geminiHooks)).toEqual(['AfterTool', 'BeforeAgent', 'AfterAgent', 'PreCompress']);
    expect(geminiHooks.PreCompress[0]).toMatchObject({ matcher: 'manual' });
    expect(geminiHooks.PreCompress[0].hooks[0]).toMatchObject({ name: 'errand-compact' });
    const planned = plan({ client: 'claude-code' });
    const installed = apply({}, planned);
    for (const file of planned.files) {
      expect(file.unmerge(installed[file.path]!)).toBeUndefined();
    }
  });

  it('is idempotent: a second run changes no byte', () => {
    const planned = plan({ client: 'gemini', errandHome: '/data/errand' });
    const once = apply({}, planned);
    const twice = apply(once, planned);
    expect(twice).toEqual(once);
    const settings = JSON.parse(once['/work/project/.gemini/settings.json']!);
    expect(settings.mcpServers.errand.args).toEqual([
      '/opt/errand/dist/cli/main.js',
      'mcp',
      '--home',
      '/data/errand',
    ]);
    expect(settings.hooks.AfterTool[0]).toMatchObject({ matcher: '.*' });
    // Gemini CLI counts hook timeouts in milliseconds.
    expect(settings.hooks.AfterAgent[0].hooks[0]).toMatchObject({ name: 'errand-stop', timeout: 1_830_000 });
    expect(settings.hooks.AfterAgent[0].hooks[0].command).toMatch(
      /hook gemini AfterAgent --home \/data\/errand$/,
    );
  });

  it('replaces the hooks of an Errand installed elsewhere instead of adding a second set', () => {
    const first = apply({}, plan({ client: 'claude-code' }));
    const moved = apply(
      first,
      plan({ client: 'claude-code', errand: { command: '/new/node', args: ['/new/errand/main.js'] } }),
    );
    const hooks = JSON.parse(moved['/work/project/.claude/settings.json']!).hooks;
    expect(hooks.PostToolUse).toHaveLength(1);
    expect(hooks.PostToolUse[0].hooks[0].command).toMatch(/^\/new\/node \/new\/errand\/main.js hook/);
  });

  it('codex: rewrites only [mcp_servers.errand] in config.toml, keeping comments and other tables', () => {
    const config = [
      '# my settings',
      'model = "gpt-5" # the one I like',
      '',
      '[mcp_servers.errand]',
      'command = "old"',
      '[mcp_servers.errand.env]',
      'A = "1"',
      '',
      '[mcp_servers.docs]',
      'command = "docs-server"',
      '',
    ].join('\n');
    const planned = plan({ client: 'codex', scope: 'user', codexHome: '/home/me/.codex' });
    const after = apply({ '/home/me/.codex/config.toml': config }, planned);
    const text = after['/home/me/.codex/config.toml']!;
    expect(text).toContain('# my settings\nmodel = "gpt-5" # the one I like');
    expect(text).not.toContain('command = "old"');
    const parsed = parseToml(text) as { mcp_servers: Record<string, Record<string, unknown>> };
    expect(parsed.mcp_servers.docs).toEqual({ command: 'docs-server' });
    expect(parsed.mcp_servers.errand).toEqual({
      command: '/usr/bin/node',
      args: ['/opt/errand/dist/cli/main.js', 'mcp'],
    });
    const hooks = JSON.parse(after['/home/me/.codex/hooks.json']!).hooks;
    expect(Object.keys(hooks)).toEqual([
      'PostToolUse',
      'UserPromptSubmit',
      'Stop',
      'PreCompact',
      'SessionStart',
    ]);
    expect(hooks.PostToolUse[0]).not.toHaveProperty('matcher');
    expect(apply(after, planned)).toEqual(after);
    expect(planned.notes.join(' ')).toMatch(/trust/);
  });

  it('refuses a file it cannot read as settings, naming it', () => {
    const planned = plan({ client: 'claude-code' });
    const broken = planned.files[1]!;
    expect(() => broken.merge('{ "hooks": ')).toThrow(SettingsFileError);
    expect(() => broken.merge('{ "hooks": ')).toThrow(
      /\/work\/project\/.claude\/settings.json: not valid JSON/,
    );
    expect(() => broken.merge(JSON.stringify({ hooks: { Stop: {} } }))).toThrow(
      /`hooks.Stop` is not an array/,
    );
    const codex = plan({ client: 'codex' }).files[0]!;
    expect(() => codex.merge('mcp_servers = { errand = { command = "x" } }')).toThrow(
      /defined in a form Errand does not rewrite/,
    );
    expect(() => codex.merge('= nope')).toThrow(/not valid TOML/);
  });

  it('takes out exactly what it put in: every client, a file that existed and one it created', () => {
    for (const client of ['claude-code', 'codex', 'gemini'] as const) {
      const planned = plan({ client, scope: 'user', codexHome: '/home/me/.codex' });
      const before: Record<string, string> = {};
      // The first file existed with settings of the person's own; the others did not exist.
      const existing = planned.files[0]!.path;
      before[existing] = existing.endsWith('.toml')
        ? '# mine\nmodel = "gpt-5"\n\n[mcp_servers.docs]\ncommand = "docs"\n'
        : `${JSON.stringify(
            {
              theme: 'dark',
              mcpServers: { other: { command: 'x' } },
              hooks: { Stop: [{ hooks: [{ type: 'command', command: 'say done' }] }] },
            },
            null,
            2,
          )}\n`;
      const installed = apply(before, planned);
      expect(installed[existing]).not.toBe(before[existing]);
      for (const file of planned.files) {
        const rest = file.unmerge(installed[file.path]!);
        if (file.path === existing) expect(rest).toBe(before[existing]);
        else expect(rest).toBeUndefined();
      }
    }
  });

  it('quotes words for the shell a client runs hooks with', () => {
    expect(shellQuote('/usr/bin/node')).toBe('/usr/bin/node');
    expect(shellQuote("/my dir/it's")).toBe(`'/my dir/it'\\''s'`);
  });
});
