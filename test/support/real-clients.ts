/**
 * The real Codex CLI and Gemini CLI (exact-pinned dev dependencies) set up for end-to-end tests: a
 * temporary HOME, `errand install <client>` into it, the client pointed at a scripted model on
 * 127.0.0.1 with everything that would leave the machine switched off, and the command line that starts
 * it headless or interactive. Found through `test/support/external-requirement.ts` (`$ERRAND_CODEX`,
 * `$ERRAND_GEMINI`, else the dev dependency), so a tree without them skips with one line.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { requireExternal } from './external-requirement.js';
import type { ModelReply } from './scripted-model-server.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const ERRAND_MAIN = join(root, 'dist/cli/main.js');

export type RealClient = 'codex' | 'gemini';

/** The client's executable, or undefined after one skip line (an error where externals are required). */
export function findRealClient(client: RealClient): string | undefined {
  return client === 'codex'
    ? requireExternal({
        name: 'Codex CLI 0.171.0',
        neededBy: 'the Codex end-to-end tests',
        variables: ['ERRAND_CODEX'],
        commands: [join(root, 'node_modules/.bin/codex')],
        install: 'npm install (it is a dev dependency)',
      })
    : requireExternal({
        name: 'Gemini CLI 0.61.0',
        neededBy: 'the Gemini CLI end-to-end tests',
        variables: ['ERRAND_GEMINI'],
        commands: [join(root, 'node_modules/.bin/gemini')],
        install: 'npm install (it is a dev dependency)',
      });
}

export interface ClientBox {
  readonly root: string;
  /** HOME of the client (its user settings live here). */
  readonly userHome: string;
  /** The Errand data directory. */
  readonly errandHome: string;
  /** The client's working directory. */
  readonly work: string;
}

/** A fresh temporary tree for one client run; the caller removes `root`. */
export function clientBox(prefix = 'errand-cl-'): ClientBox {
  const base = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  const box = {
    root: base,
    userHome: join(base, 'user'),
    errandHome: join(base, 'errand'),
    work: join(base, 'work'),
  };
  for (const directory of [box.userHome, box.work]) mkdirSync(directory, { recursive: true });
  return box;
}

/** Runs `command` in a process group of its own and resolves with its exit; kills the group at the end. */
export function runGrouped(
  command: string,
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number; signal?: AbortSignal },
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolvePromise) => {
    let output = '';
    const child: ChildProcess = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    // `codex` on PATH is a Node wrapper around a native binary: the group kill reaches both.
    const killGroup = () => {
      try {
        process.kill(-(child.pid as number), 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    const timer = setTimeout(() => {
      output += `\n[killed after ${options.timeoutMs} ms]`;
      killGroup();
    }, options.timeoutMs);
    // A test that failed half-way ends the run with it.
    options.signal?.addEventListener('abort', killGroup, { once: true });
    child.on('exit', (code) => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', killGroup);
      // Whatever the client left in its group (it must be nothing) goes too.
      killGroup();
      resolvePromise({ code, output });
    });
  });
}

const OFFLINE_CODEX_FEATURES = [
  'apps',
  'plugins',
  'remote_plugin',
  'plugin_sharing',
  'in_app_updates',
  'api_key_model_discovery',
  'skill_search',
];

/** The client's environment: its HOME in the box, the scripted model as its provider. */
export function clientEnvironment(client: RealClient, box: ClientBox, origin: string): NodeJS.ProcessEnv {
  return client === 'codex'
    ? {
        ...process.env,
        HOME: box.userHome,
        CODEX_HOME: join(box.userHome, '.codex'),
        OPENAI_API_KEY: 'scripted',
      }
    : {
        ...process.env,
        HOME: box.userHome,
        GEMINI_API_KEY: 'scripted',
        GOOGLE_GEMINI_BASE_URL: origin,
        // Headless runs in an untrusted folder exit 55; interactive ones ask.
        GEMINI_CLI_TRUST_WORKSPACE: 'true',
      };
}

/**
 * `errand install <client> --scope user` into the box (extra flags after it), then the client's own
 * settings: the scripted model at `origin`, the work directory trusted, nothing that leaves the machine.
 */
export async function installClient(
  client: RealClient,
  box: ClientBox,
  origin: string,
  extraFlags: readonly string[] = [],
): Promise<string> {
  const installed = await runGrouped(
    process.execPath,
    [ERRAND_MAIN, 'install', client, '--scope', 'user', '--home', box.errandHome, ...extraFlags],
    {
      cwd: box.work,
      env: { ...process.env, HOME: box.userHome, CODEX_HOME: join(box.userHome, '.codex') },
      timeoutMs: 20_000,
    },
  );
  if (installed.code !== 0) throw new Error(`errand install ${client} failed: ${installed.output}`);
  if (client === 'codex') {
    const config = join(box.userHome, '.codex', 'config.toml');
    writeFileSync(
      config,
      [
        'model = "scripted-model"',
        'model_provider = "scripted"',
        // Offline: no update check, no analytics (measured with strace: no lookup leaves 127.0.0.1).
        'check_for_update_on_startup = false',
        '[analytics]',
        'enabled = false',
        '[feedback]',
        'enabled = false',
        '[model_providers.scripted]',
        'name = "scripted"',
        `base_url = "${origin}/v1"`,
        'wire_api = "responses"',
        `[projects.${JSON.stringify(box.work)}]`,
        'trust_level = "trusted"',
        '',
        readFileSync(config, 'utf8'),
      ].join('\n'),
    );
  } else {
    const file = join(box.userHome, '.gemini', 'settings.json');
    const settings = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    writeFileSync(
      file,
      JSON.stringify(
        {
          ...settings,
          security: { auth: { selectedType: 'gemini-api-key' }, folderTrust: { enabled: false } },
          // Offline: no usage statistics (play.googleapis.com), no update check.
          privacy: { usageStatisticsEnabled: false },
          general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
          ui: { theme: 'Default' },
        },
        null,
        2,
      ),
    );
  }
  return installed.output;
}

/**
 * The client's arguments: headless (`codex exec`, `gemini -p`) or interactive (the TUI with `prompt` as
 * its first message); `resume` continues the directory's latest session (`codex exec resume --last`,
 * `gemini --resume latest`). Codex runs the hooks errand install wrote without asking to trust them first.
 */
export function clientArgs(
  client: RealClient,
  mode: 'headless' | 'interactive',
  prompt: string,
  options: { readonly resume?: boolean } = {},
): string[] {
  const resume = options.resume === true;
  if (client === 'codex') {
    const common = [
      '--dangerously-bypass-hook-trust',
      '--dangerously-bypass-approvals-and-sandbox',
      // Features that reach chatgpt.com or api.github.com at start; nothing here may leave the machine.
      ...OFFLINE_CODEX_FEATURES.flatMap((feature) => ['--disable', feature]),
    ];
    if (mode === 'interactive')
      return ['--no-alt-screen', ...common, ...(resume ? ['resume', '--last'] : []), prompt];
    return ['exec', '--skip-git-repo-check', ...common, ...(resume ? ['resume', '--last'] : []), prompt];
  }
  return [
    mode === 'headless' ? '-p' : '-i',
    prompt,
    '--yolo',
    '-m',
    'gemini-2.5-flash',
    ...(resume ? ['--resume', 'latest'] : []),
  ];
}

/** A call of the client's built-in shell that takes `seconds` (the model waiting, or working). */
export function clientShell(client: RealClient, seconds: number): ModelReply {
  const command = `sleep ${seconds}`;
  return client === 'codex'
    ? { kind: 'tool', name: 'exec_command', args: { cmd: command } }
    : { kind: 'tool', name: 'run_shell_command', args: { command } };
}

/** Errand's bash among the client's tools, or undefined while its MCP server has not joined yet. */
export const findErrandBash = (tools: readonly string[]): string | undefined =>
  tools.find((tool) => /errand/.test(tool) && /bash$/.test(tool));

/** Errand's tool `name` among the client's tools (`task_list`, ...). */
export const findErrandTool = (tools: readonly string[], name: string): string | undefined =>
  tools.find((tool) => /errand/.test(tool) && tool.endsWith(name));

/**
 * Only a notification carries it (the server's instructions name `<task-notification>` itself). Codex
 * hands a Stop hook's reason to the model inside `<hook_prompt>`, XML-escaped.
 */
export function notificationCount(raw: string, taskId: string): number {
  return (
    raw.split(new RegExp(`(?:<|&lt;|\\\\u003c)task-id(?:>|&gt;|\\\\u003e)${taskId}(?:<|&lt;|\\\\u003c)`))
      .length - 1
  );
}

/** Polls `predicate` every 50 ms until it holds; fails with `what` after `timeoutMs`. */
export async function pollUntil(predicate: () => boolean, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolvePromise) => setTimeout(resolvePromise, 50));
  }
}

/** Pids of processes whose command line (its words joined by spaces) names `marker`. */
export function processesNaming(marker: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const commandLine = readFileSync(`/proc/${name}/cmdline`, 'latin1').replaceAll('\0', ' ');
      if (commandLine.includes(marker)) found.push(Number(name));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}
