/**
 * The real Codex CLI and Gemini CLI (exact-pinned dev dependencies), driven headless (`codex exec`,
 * `gemini -p`) against a scripted model server on 127.0.0.1, with `errand mcp` and `errand hook` as
 * `errand install` writes them. The model starts a background command, then ends its turn while the
 * command still runs; the command ends only after the model's last tool call (it waits for a file the
 * test creates when the model's second request arrives). The end-of-turn hook keeps the run going until
 * the command ends and hands the model its notification: the model server must receive it exactly once,
 * with its exit code, before the run ends — and nothing may be left running afterwards.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type ModelReply,
  type ModelRequest,
  type ScriptedModelServer,
  startScriptedModelServer,
} from '../../test/support/scripted-model-server.js';
import { openSqliteSessionStore } from '../store/index.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const main = join(root, 'dist/cli/main.js');
const bin = (name: string) => join(root, 'node_modules/.bin', name);

/**
 * Only a notification carries it (the server's instructions name `<task-notification>` itself). Codex
 * hands a Stop hook's reason to the model inside `<hook_prompt>`, XML-escaped.
 */
const NOTIFICATION_MARK = /(?:<|&lt;)task-id(?:>|&gt;)bash-/g;

const directories: string[] = [];
const servers: ScriptedModelServer[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

interface Sandbox {
  readonly root: string;
  /** HOME of the client (its user settings live here). */
  readonly userHome: string;
  /** The Errand data directory. */
  readonly errandHome: string;
  /** The client's working directory. */
  readonly work: string;
  /** Created when the model's second request arrives: the background command ends then. */
  readonly go: string;
}

function sandbox(): Sandbox {
  const base = realpathSync(mkdtempSync(join(tmpdir(), 'errand-cl-')));
  directories.push(base);
  const sandbox = {
    root: base,
    userHome: join(base, 'user'),
    errandHome: join(base, 'errand'),
    work: join(base, 'work'),
    go: join(base, 'go'),
  };
  for (const directory of [sandbox.userHome, sandbox.work]) mkdirSync(directory, { recursive: true });
  return sandbox;
}

/** How the scripted model waits for a client whose MCP servers are still starting: the client's own shell. */
interface ClientTools {
  /** Errand's bash among the offered tools, or undefined while the client has not listed it yet. */
  readonly errandBash: (tools: readonly string[]) => string | undefined;
  /** A call of the client's built-in shell that takes a moment. */
  readonly pause: ModelReply;
}

/** At most this many pauses while the client's MCP server starts. */
const MAX_PAUSES = 120;

/**
 * The model: start the command in the background (once the client offers Errand's bash: a loaded machine
 * may start the MCP server after the client's first request), end the turn, then acknowledge the
 * notification.
 */
function script(box: Sandbox, client: ClientTools) {
  let started: number | undefined;
  let pauses = 0;
  return (request: ModelRequest): ModelReply => {
    if (started === undefined) {
      const name = client.errandBash(request.tools);
      if (name === undefined) {
        pauses += 1;
        if (pauses > MAX_PAUSES) throw new Error(`no errand bash among ${request.tools.join(', ')}`);
        return client.pause;
      }
      started = request.turn;
      return {
        kind: 'tool',
        name,
        args: {
          command: `while [ ! -e ${box.go} ]; do sleep 0.05; done; echo build-finished; exit 7`,
          description: 'slow build',
          run_in_background: true,
        },
      };
    }
    // The model's last tool call is behind it: only now may the command end.
    writeFileSync(box.go, '');
    if (mentions(request.raw) > 0) return { kind: 'text', text: 'The build exited with 7.' };
    return { kind: 'text', text: 'The build runs in the background; I am done for now.' };
  };
}

const findErrandBash = (tools: readonly string[]) =>
  tools.find((tool) => /errand/.test(tool) && /bash$/.test(tool));

const OFFLINE_CODEX_FEATURES = [
  'apps',
  'plugins',
  'remote_plugin',
  'plugin_sharing',
  'in_app_updates',
  'api_key_model_discovery',
  'skill_search',
];

function mentions(raw: string): number {
  return raw.match(NOTIFICATION_MARK)?.length ?? 0;
}

/** Runs `command` in a process group of its own and resolves with its exit; kills the group at the end. */
function run(
  command: string,
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number },
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
    child.on('exit', (code) => {
      clearTimeout(timer);
      // Whatever the client left in its group (it must be nothing) goes too.
      killGroup();
      resolvePromise({ code, output });
    });
  });
}

async function install(box: Sandbox, client: string): Promise<string> {
  const result = await run(
    process.execPath,
    [main, 'install', client, '--scope', 'user', '--home', box.errandHome],
    {
      cwd: box.work,
      env: { ...process.env, HOME: box.userHome, CODEX_HOME: join(box.userHome, '.codex') },
      timeoutMs: 20_000,
    },
  );
  expect(result.code, result.output).toBe(0);
  return result.output;
}

/** The index of the request the model answered by starting the command. */
function startIndex(model: ScriptedModelServer): number {
  const index = model.turns.findIndex((turn) => findErrandBash(turn.tools) !== undefined);
  return index < 0 ? model.turns.length : index;
}

/** What the model server received, in the terms the assertions need. */
function deliveries(model: ScriptedModelServer) {
  return {
    turns: model.turns.length - startIndex(model),
    /**
     * Notification blocks each main request carried (the whole conversation so far), from the request
     * that started the command on (requests before it only waited for the client's MCP server).
     */
    perRequest: model.turns.slice(startIndex(model)).map((turn) => mentions(turn.raw)),
    last: model.turns.at(-1)?.raw ?? '',
  };
}

/** The ledger's view: entries delivered through a client hook, and entries still queued. */
function ledgerOf(errandHome: string): { viaHook: number; delivered: number; undelivered: number } {
  const store = openSqliteSessionStore({ home: errandHome });
  try {
    let viaHook = 0;
    let delivered = 0;
    let undelivered = 0;
    for (const session of store.listSessions()) {
      for (const entry of store.listLedger(session.id)) {
        if (entry.kind !== 'notification') continue;
        if (entry.state === 'delivered') delivered += 1;
        else undelivered += 1;
      }
      viaHook += store.listMessages(session.id).filter((message) => message.source === 'client_hook').length;
    }
    return { viaHook, delivered, undelivered };
  } finally {
    store.close();
  }
}

describe('client hooks with the real clients', () => {
  it('codex exec: a background command that ends after the last tool call reaches the model once, with its exit code', async () => {
    const box = sandbox();
    const model = await startScriptedModelServer(
      script(box, {
        errandBash: findErrandBash,
        pause: { kind: 'tool', name: 'exec_command', args: { cmd: 'sleep 0.25' } },
      }),
    );
    servers.push(model);
    const codexHome = join(box.userHome, '.codex');
    await install(box, 'codex');
    // The scripted model as Codex's model provider (Responses API over SSE).
    const config = join(codexHome, 'config.toml');
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
        `base_url = "${model.origin}/v1"`,
        'wire_api = "responses"',
        '',
        readFileSync(config, 'utf8'),
      ].join('\n'),
    );
    const result = await run(
      bin('codex'),
      [
        'exec',
        '--skip-git-repo-check',
        // The hooks errand install wrote are not trusted yet in this fresh CODEX_HOME.
        '--dangerously-bypass-hook-trust',
        '--dangerously-bypass-approvals-and-sandbox',
        // Features that reach chatgpt.com or api.github.com at start; nothing here may leave the machine.
        ...OFFLINE_CODEX_FEATURES.flatMap((feature) => ['--disable', feature]),
        'Build the project.',
      ],
      {
        cwd: box.work,
        env: { ...process.env, HOME: box.userHome, CODEX_HOME: codexHome, OPENAI_API_KEY: 'scripted' },
        timeoutMs: 90_000,
      },
    );
    expect(result.code, result.output).toBe(0);
    const seen = deliveries(model);
    expect(seen.turns, result.output).toBe(3);
    // Not before the command ended; then once, and it stays once in the conversation.
    expect(seen.perRequest).toEqual([0, 0, 1]);
    expect(seen.last).toMatch(/exit code 7/);
    // The model's own call id, from Codex's `_meta.callId`, not a JSON-RPC request number.
    expect(seen.last).toMatch(/tool-use-id(?:>|&gt;)call_\d+/);
    expect(result.output).toContain('The build exited with 7.');
    expect(ledgerOf(box.errandHome)).toEqual({ viaHook: 1, delivered: 1, undelivered: 0 });
  }, 120_000);

  it('gemini -p: a background command that ends after the last tool call reaches the model once, with its exit code', async () => {
    const box = sandbox();
    const model = await startScriptedModelServer(
      script(box, {
        errandBash: findErrandBash,
        pause: { kind: 'tool', name: 'run_shell_command', args: { command: 'sleep 0.25' } },
      }),
    );
    servers.push(model);
    await install(box, 'gemini');
    const settingsFile = join(box.userHome, '.gemini', 'settings.json');
    const settings = JSON.parse(readFileSync(settingsFile, 'utf8')) as Record<string, unknown>;
    writeFileSync(
      settingsFile,
      JSON.stringify(
        {
          ...settings,
          security: { auth: { selectedType: 'gemini-api-key' } },
          // Offline: no usage statistics (play.googleapis.com), no update check.
          privacy: { usageStatisticsEnabled: false },
          general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
        },
        null,
        2,
      ),
    );
    const result = await run(
      bin('gemini'),
      ['-p', 'Build the project.', '--yolo', '-m', 'gemini-2.5-flash'],
      {
        cwd: box.work,
        env: {
          ...process.env,
          HOME: box.userHome,
          GEMINI_API_KEY: 'scripted',
          GOOGLE_GEMINI_BASE_URL: model.origin,
          // Headless runs in an untrusted folder exit 55.
          GEMINI_CLI_TRUST_WORKSPACE: 'true',
        },
        timeoutMs: 90_000,
      },
    );
    expect(result.code, result.output).toBe(0);
    const seen = deliveries(model);
    expect(seen.turns, result.output).toBe(3);
    expect(seen.perRequest).toEqual([0, 0, 1]);
    expect(seen.last).toMatch(/exit code 7/);
    // Gemini's own token for the call (it sends no call id), not the JSON-RPC request's number.
    expect(seen.last).toMatch(/tool-use-id>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}</);
    expect(seen.last).not.toMatch(/tool-use-id>mcp-/);
    expect(result.output).toContain('The build exited with 7.');
    expect(ledgerOf(box.errandHome)).toEqual({ viaHook: 1, delivered: 1, undelivered: 0 });
  }, 120_000);
});
