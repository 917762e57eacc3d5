/**
 * What `errand install <client>` writes: the client's MCP server entry for `errand mcp` and its hooks
 * for `errand hook`, in the files that client reads for the chosen scope. Each file is merged, never
 * replaced (see `settings-merge.ts`); a file whose merge changes nothing is left untouched.
 *
 * | client      | scope   | MCP server entry                         | hooks                         |
 * | ----------- | ------- | ---------------------------------------- | ----------------------------- |
 * | claude-code | project | `.mcp.json`                              | `.claude/settings.json`       |
 * | claude-code | user    | `~/.claude.json`                         | `~/.claude/settings.json`     |
 * | codex       | project | `.codex/config.toml`                     | `.codex/hooks.json`           |
 * | codex       | user    | `$CODEX_HOME/config.toml` (`~/.codex`)   | `$CODEX_HOME/hooks.json`      |
 * | gemini      | project | `.gemini/settings.json`                  | `.gemini/settings.json`       |
 * | gemini      | user    | `~/.gemini/settings.json`                | `~/.gemini/settings.json`     |
 */
import { join } from 'node:path';
import { canWake, type HookClient, type HookMoment, hookEventFor, momentsOf } from './hook-clients.js';
import { RUN_HOOK_DEFAULTS } from './run-hook.js';
import {
  formatJsonSettings,
  type HookEntry,
  mergeJsonSettings,
  mergeTomlServer,
  parseJsonSettings,
  tomlString,
  unmergeJsonSettings,
  unmergeTomlServer,
} from './settings-merge.js';

export type InstallScope = 'project' | 'user';

export interface InstallOptions {
  readonly client: HookClient;
  readonly scope: InstallScope;
  /** The project's directory (project scope). */
  readonly projectDirectory: string;
  /** The user's home directory (user scope). */
  readonly userHome: string;
  /** Codex's home for the user scope. Default `<userHome>/.codex`. */
  readonly codexHome?: string;
  /** How the client runs Errand: an executable and the arguments before the command name. */
  readonly errand: { readonly command: string; readonly args: readonly string[] };
  /** The data directory passed to both `errand mcp` and `errand hook`. Default: theirs ($ERRAND_HOME, ~/.errand). */
  readonly errandHome?: string;
  /** `errand hook`'s interactive end-of-turn wait, in ms (`--stop-wait-ms`). Default: the hook's (120000). */
  readonly stopWaitMs?: number;
  /** `errand hook`'s hold of a headless run, in ms (`--headless-wait-ms`). Default: the hook's (1800000). */
  readonly headlessWaitMs?: number;
  /** The name of the MCP server entry. Default `errand`. */
  readonly serverName?: string;
}

/**
 * One file to merge: `merge` gets the file's current text (undefined when absent) and returns the new;
 * `unmerge` takes out what `merge` put in (undefined: nothing else is left, the file can go).
 */
export interface PlannedFile {
  readonly path: string;
  readonly merge: (text: string | undefined) => string;
  readonly unmerge: (text: string) => string | undefined;
}

export interface InstallPlan {
  readonly files: readonly PlannedFile[];
  /** What the person should know after installing (one line each). */
  readonly notes: readonly string[];
}

/** How long a tool-result or prompt hook may take before its client gives up on it, in seconds. */
const QUICK_HOOK_TIMEOUT_S = 30;
/** How much longer than its end-of-turn wait the stop hook may take, in seconds. */
const STOP_HOOK_SLACK_S = 30;

/** POSIX shell quoting, for the command strings clients run hooks with. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

export function planInstall(options: InstallOptions): InstallPlan {
  const name = options.serverName ?? 'errand';
  const homeArgs = options.errandHome === undefined ? [] : ['--home', options.errandHome];
  const serverEntry = {
    command: options.errand.command,
    args: [...options.errand.args, 'mcp', ...homeArgs],
  };
  const stopWaitMs = options.stopWaitMs ?? RUN_HOOK_DEFAULTS.stopWaitMs;
  const headlessWaitMs = options.headlessWaitMs ?? RUN_HOOK_DEFAULTS.headlessWaitMs;
  const wakeWaitMs = RUN_HOOK_DEFAULTS.wakeWaitMs;
  const hookCommand = (moment: HookMoment): string =>
    [
      options.errand.command,
      ...options.errand.args,
      'hook',
      options.client,
      hookEventFor(options.client, moment),
      ...(moment === 'wake' ? ['--wake'] : []),
      ...homeArgs,
      ...(moment === 'stop' && options.stopWaitMs !== undefined && !canWake(options.client)
        ? ['--stop-wait-ms', String(stopWaitMs)]
        : []),
      ...(moment === 'stop' && options.headlessWaitMs !== undefined
        ? ['--headless-wait-ms', String(headlessWaitMs)]
        : []),
    ]
      .map(shellQuote)
      .join(' ');
  // The client's own timeout of each hook matches the longest the hook may hold (plus slack).
  const timeoutSeconds = (moment: HookMoment) => {
    if (moment === 'wake') return Math.ceil(wakeWaitMs / 1000) + STOP_HOOK_SLACK_S;
    if (moment !== 'stop') return QUICK_HOOK_TIMEOUT_S;
    const longest = canWake(options.client) ? headlessWaitMs : Math.max(stopWaitMs, headlessWaitMs);
    return Math.ceil(longest / 1000) + STOP_HOOK_SLACK_S;
  };
  const isOurHook = (command: string) =>
    command.includes(` hook ${options.client} `) && /errand|main\.js/.test(command);
  // The client's moments, the wake where it has one (after the end of a turn).
  const moments: readonly HookMoment[] = momentsOf(options.client).flatMap((moment): HookMoment[] =>
    moment === 'stop' && canWake(options.client) ? ['stop', 'wake'] : [moment],
  );
  /** Claude Code matches a SessionStart hook on its source: only a compacted conversation's start. */
  const matcherOf = (moment: HookMoment): { matcher?: string } => {
    if (moment === 'tool') return { matcher: options.client === 'gemini' ? '.*' : '*' };
    if (moment === 'context' && options.client === 'claude-code') return { matcher: 'compact' };
    // Gemini CLI fires an automatic PreCompress before every turn, compressing or not: only /compress.
    if (moment === 'compact' && options.client === 'gemini') return { matcher: 'manual' };
    return {};
  };
  const base = options.scope === 'project' ? options.projectDirectory : options.userHome;
  const plan = (files: readonly PlannedFile[], notes: readonly string[]): InstallPlan => ({
    files,
    notes:
      options.scope === 'project'
        ? [
            ...notes,
            "The entries name this machine's Node and Errand by absolute path: keep them out of a repository others use, or install with --scope user.",
          ]
        : notes,
  });

  switch (options.client) {
    case 'claude-code': {
      const hooks: HookEntry[] = moments.map((moment) => ({
        event: hookEventFor('claude-code', moment),
        ...matcherOf(moment),
        command: hookCommand(moment),
        timeout: timeoutSeconds(moment),
        ...(moment === 'wake' ? { asyncRewake: true } : {}),
      }));
      const serverFile = options.scope === 'project' ? join(base, '.mcp.json') : join(base, '.claude.json');
      const hooksFile = join(base, '.claude', 'settings.json');
      return plan(
        [
          jsonFile(serverFile, { servers: { key: 'mcpServers', name, entry: serverEntry } }),
          jsonFile(hooksFile, { hooks, isOurHook }),
        ],
        [
          options.scope === 'project'
            ? 'Claude Code asks once whether to use the MCP servers in .mcp.json; approve "errand".'
            : 'Claude Code loads the user-scope MCP server and hooks at its next start; it rewrites ~/.claude.json while it runs, so install with Claude Code closed.',
        ],
      );
    }
    case 'codex': {
      const directory =
        options.scope === 'project' ? join(base, '.codex') : (options.codexHome ?? join(base, '.codex'));
      const hooks: HookEntry[] = moments.map((moment) => ({
        event: hookEventFor('codex', moment),
        command: hookCommand(moment),
        timeout: timeoutSeconds(moment),
      }));
      const table = [
        `[mcp_servers.${name}]`,
        `command = ${tomlString(serverEntry.command)}`,
        `args = [${serverEntry.args.map(tomlString).join(', ')}]`,
      ].join('\n');
      const configFile = join(directory, 'config.toml');
      return plan(
        [
          {
            path: configFile,
            merge: (text) => mergeTomlServer(configFile, text, name, table),
            unmerge: (text) => {
              const rest = unmergeTomlServer(configFile, text, name);
              return rest === '' ? undefined : rest;
            },
          },
          jsonFile(join(directory, 'hooks.json'), { hooks, isOurHook }),
        ],
        [
          'Codex runs new or changed hooks only once you trust them: review them with /hooks in Codex (a headless `codex exec` needs them trusted, or --dangerously-bypass-hook-trust).',
          ...(options.scope === 'project'
            ? ['Codex reads .codex/ of a project only once you trust the project.']
            : []),
        ],
      );
    }
    case 'gemini': {
      const hooks: HookEntry[] = moments.map((moment) => ({
        event: hookEventFor('gemini', moment),
        ...matcherOf(moment),
        name: `errand-${moment}`,
        command: hookCommand(moment),
        // Gemini CLI counts hook timeouts in milliseconds.
        timeout: timeoutSeconds(moment) * 1000,
      }));
      return {
        files: [
          jsonFile(join(base, '.gemini', 'settings.json'), {
            servers: { key: 'mcpServers', name, entry: serverEntry },
            hooks,
            isOurHook,
          }),
        ],
        notes: [
          options.scope === 'project'
            ? "Gemini CLI runs a project's hooks only in a trusted folder, and warns once about new ones."
            : 'Gemini CLI loads the user-scope MCP server and hooks at its next start.',
        ],
      };
    }
  }
}

function jsonFile(path: string, plan: Parameters<typeof mergeJsonSettings>[2]): PlannedFile {
  return {
    path,
    merge: (text) => {
      const settings = parseJsonSettings(path, text);
      const merged = mergeJsonSettings(path, settings, plan);
      // Unchanged settings keep their text exactly (formatting included).
      return text !== undefined && isDeepEqual(settings, merged) ? text : formatJsonSettings(merged);
    },
    unmerge: (text) => {
      const settings = parseJsonSettings(path, text);
      const rest = unmergeJsonSettings(path, settings, plan);
      if (Object.keys(rest).length === 0) return undefined;
      return isDeepEqual(settings, rest) ? text : formatJsonSettings(rest);
    },
  };
}

function isDeepEqual(left: unknown, right: unknown): boolean {
  return JSON.stringify(left) === JSON.stringify(right);
}
