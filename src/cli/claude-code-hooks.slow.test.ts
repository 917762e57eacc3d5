/**
 * The real Claude Code (the pinned version, fetched from the npm registry into a cache on first use:
 * `test/support/claude-code.ts`) against a scripted Anthropic model on 127.0.0.1, with `errand mcp` and
 * `errand hook` as `errand install claude-code` writes them. Headless (`claude -p`): twenty background
 * commands that end only after the turn's last tool call are told to the model, each once, in one
 * end-of-turn block, before the run exits — none recorded delivered that no request carried, none left
 * running. Interactive (a pseudo-terminal, nobody typing): a job that ends after the turn ended wakes
 * the model by itself through the `asyncRewake` hook, and the turn is not held open meanwhile.
 */
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  claudeCodeEnvironment,
  findClaudeCode,
  installForClaudeCode,
} from '../../test/support/claude-code.js';
import { pollUntil, processesNaming, runGrouped } from '../../test/support/real-clients.js';
import {
  type ModelReply,
  type ModelRequest,
  type ScriptedModelServer,
  startScriptedModelServer,
} from '../../test/support/scripted-model-server.js';
import { spawnInTerminal, type TerminalProgram } from '../../test/support/terminal.js';
import { listLiveServers } from '../hooks/index.js';
import { openSqliteSessionStore } from '../store/index.js';

const claude = findClaudeCode();

const directories: string[] = [];
const servers: ScriptedModelServer[] = [];
const terminals: TerminalProgram[] = [];

afterEach(async () => {
  for (const terminal of terminals.splice(0)) terminal.kill();
  for (const server of servers.splice(0)) await server.close();
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

interface Box {
  readonly userHome: string;
  readonly errandHome: string;
  readonly work: string;
  /** Created when the test lets the background commands end. */
  readonly go: string;
}

function box(): Box {
  const base = realpathSync(mkdtempSync(join(tmpdir(), 'errand-cc-')));
  directories.push(base);
  const made = {
    userHome: join(base, 'user'),
    errandHome: join(base, 'errand'),
    work: join(base, 'work'),
    go: join(base, 'go'),
  };
  for (const directory of [made.userHome, made.work]) mkdirSync(directory, { recursive: true });
  return made;
}

function environment(sandbox: Box, model: ScriptedModelServer): NodeJS.ProcessEnv {
  return claudeCodeEnvironment(sandbox.userHome, model.origin);
}

/** Installs Errand for Claude Code (user scope), and marks the sandbox's Claude Code as set up. */
function install(sandbox: Box): Promise<void> {
  return installForClaudeCode(sandbox.userHome, sandbox.errandHome, sandbox.work);
}

const ERRAND_BASH = 'mcp__errand__bash';

/** At most this many pauses while Claude Code's MCP server connects (it does not wait for it). */
const MAX_PAUSES = 120;
let pauses = 0;

/** Claude Code's own shell, for a moment: its MCP servers join later requests. */
function pause(request: ModelRequest): ModelReply {
  pauses += 1;
  if (pauses > MAX_PAUSES) {
    const at = request.raw.indexOf('mcp__errand');
    throw new Error(
      `no ${ERRAND_BASH} among ${request.tools.join(', ')}; ${at < 0 ? 'never named' : request.raw.slice(at - 300, at + 300)}`,
    );
  }
  return { kind: 'tool', name: 'Bash', args: { command: 'sleep 0.25', description: 'wait a moment' } };
}

/** How many times the request's conversation carries task `id`'s notification. */
function mentions(raw: string, id: string): number {
  return raw.split(`<task-id>${id}</task-id>`).length - 1;
}

/** Task ids whose notification the ledger records delivered. */
function deliveredTasks(errandHome: string): string[] {
  const store = openSqliteSessionStore({ home: errandHome });
  try {
    return store
      .listSessions()
      .flatMap((session) => store.listLedger(session.id))
      .filter((entry) => entry.kind === 'notification' && entry.state === 'delivered')
      .map((entry) => entry.taskId ?? '');
  } finally {
    store.close();
  }
}

const until = pollUntil;

describe.skipIf(claude === undefined)('Claude Code with errand install claude-code', () => {
  it('claude -p, 20 background commands: all 20 told once before exit, none recorded unseen, none left running', async () => {
    const sandbox = box();
    const total = 20;
    const started: string[] = [];
    const script = (request: ModelRequest): ModelReply => {
      if (!request.tools.includes(ERRAND_BASH)) return pause(request);
      if (started.length < total) {
        const index = started.length + 1;
        started.push(`#${index}`);
        return {
          kind: 'tool',
          name: ERRAND_BASH,
          args: {
            command: `while [ ! -e ${sandbox.go} ]; do sleep 0.05; done; echo job-${index}; exit ${index % 4}`,
            description: `job ${index}`,
            run_in_background: true,
          },
        };
      }
      // Every command is started and its tool result is in: only now may they end.
      writeFileSync(sandbox.go, '');
      return /<task-id>bash-/.test(request.raw)
        ? { kind: 'text', text: 'All jobs reported.' }
        : { kind: 'text', text: 'Started twenty jobs.' };
    };
    const model = await startScriptedModelServer(script);
    servers.push(model);
    await install(sandbox);
    const result = await runGrouped(
      claude as string,
      ['-p', 'Run the twenty jobs.', '--dangerously-skip-permissions', '--model', 'claude-sonnet-4-5'],
      { cwd: sandbox.work, env: environment(sandbox, model), timeoutMs: 240_000 },
    );
    expect(result.code, result.output).toBe(0);
    expect(result.output).toContain('All jobs reported.');
    const ids: string[] = Array.from({ length: total }, (_, index) => `bash-${index + 1}`);
    const last = model.turns.at(-1)?.raw ?? '';
    // Told once: the final conversation carries each ending exactly once, with its exit code.
    const told = ids.filter((id) => mentions(last, id) === 1);
    expect(told).toHaveLength(total);
    expect(last).toMatch(/exit code 3/);
    // One end-of-turn block carried them all: the request after the start of the jobs' ending has all 20.
    const firstWith = model.turns.findIndex((turn) => ids.some((id) => mentions(turn.raw, id) > 0));
    expect(ids.every((id) => mentions(model.turns[firstWith]!.raw, id) === 1)).toBe(true);
    // Nothing recorded delivered that no request carried; nothing left running.
    const delivered = deliveredTasks(sandbox.errandHome);
    expect(delivered.filter((id) => !model.turns.some((turn) => mentions(turn.raw, id) > 0))).toEqual([]);
    expect(new Set(delivered).size).toBe(total);
    expect(delivered).toHaveLength(total);
    await until(() => processesNaming(sandbox.go).length === 0, 'the jobs to be gone', 10_000);
    process.stderr.write(
      `claude -p, ${total} background commands: ${told.length}/${total} told once, ${delivered.length} recorded delivered, ${model.turns.length} model requests\n`,
    );
  }, 300_000);

  it('claude -p with a 3-minute job: held until it ends, told once, then the run exits', async () => {
    const sandbox = box();
    let started = false;
    const script = (request: ModelRequest): ModelReply => {
      if (!started) {
        if (!request.tools.includes(ERRAND_BASH)) return pause(request);
        started = true;
        return {
          kind: 'tool',
          name: ERRAND_BASH,
          args: {
            command: 'sleep 180; echo built; exit 4',
            description: 'a 3-minute build',
            run_in_background: true,
          },
        };
      }
      return /<task-id>bash-1<\/task-id>/.test(request.raw)
        ? { kind: 'text', text: 'The build exited with 4.' }
        : { kind: 'text', text: 'The build runs in the background.' };
    };
    const model = await startScriptedModelServer(script);
    servers.push(model);
    await install(sandbox);
    const result = await runGrouped(
      claude as string,
      ['-p', 'Build it.', '--dangerously-skip-permissions', '--model', 'claude-sonnet-4-5'],
      { cwd: sandbox.work, env: environment(sandbox, model), timeoutMs: 400_000 },
    );
    expect(result.code, result.output).toBe(0);
    expect(result.output).toContain('The build exited with 4.');
    const last = model.turns.at(-1)?.raw ?? '';
    expect(mentions(last, 'bash-1')).toBe(1);
    expect(last).toMatch(/exit code 4/);
    expect(deliveredTasks(sandbox.errandHome)).toEqual(['bash-1']);
  }, 420_000);

  it('interactive, nobody typing: a 25 s job that ends after the turn wakes the model within 10 s, and the turn is not held open', async () => {
    const sandbox = box();
    const ended = join(sandbox.work, 'ended-at');
    let startedAt: number | undefined;
    let finalAnswerAt: number | undefined;
    const woken: Array<{ at: number; raw: string }> = [];
    const script = (request: ModelRequest): ModelReply => {
      if (startedAt === undefined) {
        if (!request.tools.includes(ERRAND_BASH)) return pause(request);
        startedAt = Date.now();
        return {
          kind: 'tool',
          name: ERRAND_BASH,
          args: {
            command: `sleep 25; date +%s%3N > ${ended}; echo build-done; exit 3`,
            description: 'a 25 s build',
            run_in_background: true,
          },
        };
      }
      if (/<task-id>bash-1<\/task-id>/.test(request.raw)) {
        woken.push({ at: Date.now(), raw: request.raw });
        return { kind: 'text', text: 'The build exited with 3.' };
      }
      finalAnswerAt ??= Date.now();
      return { kind: 'text', text: 'The build runs in the background.' };
    };
    const model = await startScriptedModelServer(script);
    servers.push(model);
    await install(sandbox);
    const env = environment(sandbox, model);
    const terminal = await spawnInTerminal(
      claude as string,
      ['--allowedTools', `${ERRAND_BASH},Bash`, '--model', 'claude-sonnet-4-5', 'Start the build.'],
      { cwd: sandbox.work, env: env as Record<string, string>, cols: 120, rows: 40 },
    );
    terminals.push(terminal);
    await terminal.waitFor(
      (screen) => screen.includes('The build runs in the background.'),
      'the final answer',
      90_000,
    );
    // The turn is over while the build runs: the only hook the server is serving is the waiting wake.
    const [server] = listLiveServers(sandbox.errandHome);
    expect(server).toBeDefined();
    await until(() => hookConnections(server!.server.pid) === 1, 'the wake hook to wait', 20_000);
    await until(() => woken.length > 0, 'the model to be woken', 60_000);
    const endedAt = Number(readFileSync(ended, 'utf8').trim());
    const latency = (woken[0]?.at ?? 0) - endedAt;
    expect(latency).toBeLessThan(10_000);
    expect(woken[0]?.raw).toMatch(/exit code 3/);
    await terminal.waitFor(
      (screen) => screen.includes('The build exited with 3.'),
      'the woken answer',
      30_000,
    );
    // Once: no later request carries it a second time.
    expect(woken.every((request) => mentions(request.raw, 'bash-1') === 1)).toBe(true);
    expect(deliveredTasks(sandbox.errandHome)).toEqual(['bash-1']);
    process.stderr.write(
      `claude interactive, 25 s job: woken ${latency} ms after its end (${woken.length} request carried it, final answer ${
        (finalAnswerAt ?? 0) - (startedAt ?? 0)
      } ms after the start)\n`,
    );
    terminal.kill();
    await terminal.exited;
  }, 240_000);
});

/** Connected sockets of process `pid` on its hook socket (`*.sock`), read from /proc. */
function hookConnections(pid: number): number {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match) inodes.add(match[1] as string);
    } catch {
      // Closed meanwhile.
    }
  }
  return readFileSync('/proc/net/unix', 'utf8')
    .split('\n')
    .slice(1)
    .filter((line) => {
      const fields = line.trim().split(/\s+/);
      return fields[5] === '03' && inodes.has(fields[6] as string) && (fields[7] ?? '').endsWith('.sock');
    }).length;
}
