/**
 * Claude Code for end-to-end tests. Its package is not open source, so it is no dependency of Errand:
 * the pinned version is fetched from the npm registry on first use into a cache directory
 * (`$ERRAND_EXTERNALS_CACHE`, else `~/.cache/errand-externals`) with npm itself, and found there
 * afterwards; `$ERRAND_CLAUDE_CODE` names an executable to use instead. When it cannot be had (no
 * registry), the suite is skipped with one line — an error where externals are required (CI).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { ExternalRequirementError, externalsRequired, findExecutable } from './external-requirement.js';
import { ERRAND_MAIN, runGrouped } from './real-clients.js';

export const CLAUDE_CODE_VERSION = '2.1.197';
const PACKAGE = '@anthropic-ai/claude-code';

function cacheDirectory(env: Readonly<Record<string, string | undefined>>): string {
  const base =
    env.ERRAND_EXTERNALS_CACHE || join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'errand-externals');
  return join(base, `claude-code-${CLAUDE_CODE_VERSION}`);
}

function binaryIn(directory: string): string | undefined {
  const modules = join(directory, 'node_modules', '@anthropic-ai');
  const platform = join(modules, `claude-code-${process.platform}-${process.arch}`, 'claude');
  if (existsSync(platform)) return platform;
  const wrapper = join(modules, 'claude-code', 'bin', 'claude.exe');
  return existsSync(wrapper) ? wrapper : undefined;
}

function versionOf(path: string): string | undefined {
  const result = spawnSync(path, ['--version'], { encoding: 'utf8', timeout: 60_000 });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

/** The path of Claude Code's executable, or undefined after one skip line (an error in CI). */
export function findClaudeCode(
  env: Readonly<Record<string, string | undefined>> = process.env,
): string | undefined {
  const named = env.ERRAND_CLAUDE_CODE;
  if (named) {
    const path = findExecutable(named, env);
    if (path === undefined) {
      throw new ExternalRequirementError(
        `ERRAND_CLAUDE_CODE=${JSON.stringify(named)} does not name an executable file`,
      );
    }
    return path;
  }
  const directory = cacheDirectory(env);
  let binary = binaryIn(directory);
  let why = '';
  if (binary === undefined) {
    mkdirSync(directory, { recursive: true });
    const installed = spawnSync(
      'npm',
      [
        'install',
        '--prefix',
        directory,
        '--no-save',
        '--no-audit',
        '--no-fund',
        `${PACKAGE}@${CLAUDE_CODE_VERSION}`,
      ],
      { encoding: 'utf8', timeout: 600_000 },
    );
    binary = binaryIn(directory);
    if (binary === undefined)
      why = (installed.stderr || installed.error?.message || '').trim().split('\n').at(-1) ?? '';
  }
  if (binary !== undefined && versionOf(binary)?.startsWith(CLAUDE_CODE_VERSION)) return binary;
  const line = `Skipping the Claude Code end-to-end tests: ${PACKAGE}@${CLAUDE_CODE_VERSION} could not be fetched into ${directory}${why ? ` (${why})` : ''}. Set ERRAND_CLAUDE_CODE to a claude ${CLAUDE_CODE_VERSION} executable, or allow npm to reach its registry.`;
  if (externalsRequired(env)) {
    throw new ExternalRequirementError(
      `${line.replace(/^Skipping /, 'Cannot run ')} ERRAND_REQUIRE_EXTERNALS is set, so this is an error, not a skip.`,
    );
  }
  process.stderr.write(`${line}\n`);
  return undefined;
}

/** The API key Claude Code sends the scripted model (approved in its settings, so it never asks). */
export const CLAUDE_CODE_API_KEY = 'sk-ant-scripted-0000000000000000000000';

/** Claude Code's environment: HOME in the test's tree, the scripted model at `origin`, nothing else called. */
export function claudeCodeEnvironment(userHome: string, origin: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    HOME: userHome,
    ANTHROPIC_BASE_URL: origin,
    ANTHROPIC_API_KEY: CLAUDE_CODE_API_KEY,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_ERROR_REPORTING: '1',
    // Root may not skip permissions unless it says it runs in a sandbox (it does: a temporary HOME).
    IS_SANDBOX: '1',
  };
}

/**
 * Marks Claude Code in `userHome` as set up (onboarding done, the API key approved, `work` trusted),
 * keeping what `errand install claude-code --scope user` wrote into `~/.claude.json`.
 */
export function markClaudeCodeSetUp(userHome: string, work: string): void {
  const file = join(userHome, '.claude.json');
  const settings = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  writeFileSync(
    file,
    JSON.stringify({
      ...settings,
      hasCompletedOnboarding: true,
      theme: 'dark',
      customApiKeyResponses: { approved: [CLAUDE_CODE_API_KEY.slice(-20)], rejected: [] },
      projects: { [work]: { hasTrustDialogAccepted: true, allowedTools: [] } },
    }),
  );
}

/** `errand install claude-code --scope user` into `userHome` (data directory `errandHome`), set up for `work`. */
export async function installForClaudeCode(
  userHome: string,
  errandHome: string,
  work: string,
): Promise<void> {
  const installed = await runGrouped(
    process.execPath,
    [ERRAND_MAIN, 'install', 'claude-code', '--scope', 'user', '--home', errandHome],
    { cwd: work, env: { ...process.env, HOME: userHome }, timeoutMs: 20_000 },
  );
  if (installed.code !== 0) throw new Error(`errand install claude-code failed: ${installed.output}`);
  markClaudeCodeSetUp(userHome, work);
}
