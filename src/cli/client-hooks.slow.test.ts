/**
 * The real Codex CLI and Gemini CLI (exact-pinned dev dependencies), driven headless (`codex exec`,
 * `gemini -p`) against a scripted model server on 127.0.0.1, with `errand mcp` and `errand hook` as
 * `errand install` writes them. The model starts a background command, then ends its turn while the
 * command still runs; the command ends only after the model's last tool call (it waits for a file the
 * test creates when the model's second request arrives). The end-of-turn hook keeps the run going until
 * the command ends and hands the model its notification: the model server must receive it exactly once,
 * with its exit code, before the run ends — and nothing may be left running afterwards.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type ClientBox,
  clientArgs,
  clientBox,
  clientEnvironment,
  findErrandBash,
  installClient,
  runGrouped,
} from '../../test/support/real-clients.js';
import {
  type ModelReply,
  type ModelRequest,
  type ScriptedModelServer,
  startScriptedModelServer,
} from '../../test/support/scripted-model-server.js';
import { openSqliteSessionStore } from '../store/index.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
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

/** The client's tree; `go` is created when the model's second request arrives: the command ends then. */
type Sandbox = ClientBox & { readonly go: string };

function sandbox(): Sandbox {
  const box = clientBox();
  directories.push(box.root);
  return { ...box, go: join(box.root, 'go') };
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

function mentions(raw: string): number {
  return raw.match(NOTIFICATION_MARK)?.length ?? 0;
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
    await installClient('codex', box, model.origin);
    const result = await runGrouped(bin('codex'), clientArgs('codex', 'headless', 'Build the project.'), {
      cwd: box.work,
      env: clientEnvironment('codex', box, model.origin),
      timeoutMs: 90_000,
    });
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
    await installClient('gemini', box, model.origin);
    const result = await runGrouped(bin('gemini'), clientArgs('gemini', 'headless', 'Build the project.'), {
      cwd: box.work,
      env: clientEnvironment('gemini', box, model.origin),
      timeoutMs: 90_000,
    });
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
