/**
 * `errand mcp` SIGKILLed while a background job runs, and the real client starting it again: the
 * pinned Claude Code (`claude -p`, then `claude -p --continue` in the same directory: a new server of
 * the same client there takes over the dead one's session), against a scripted model on 127.0.0.1.
 * The model must be told exactly once what became of its work — stopped by the lifeline, naming the
 * case (`runtime_died`) — `task_list` must show it, and nothing of the dead server may stay `running`
 * in the store. Counted at the scripted model: the requests carrying the notification.
 */
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import {
  claudeCodeEnvironment,
  findClaudeCode,
  markClaudeCodeSetUp,
} from '../../test/support/claude-code.js';
import {
  type ClientBox,
  clientBox,
  ERRAND_MAIN,
  notificationCount,
  runGrouped,
} from '../../test/support/real-clients.js';
import {
  type ModelReply,
  type ModelRequest,
  type ScriptedModelServer,
  startScriptedModelServer,
} from '../../test/support/scripted-model-server.js';
import { listLiveServers } from '../hooks/index.js';
import { openSqliteSessionStore } from '../store/index.js';

const claude = findClaudeCode();

const boxes: ClientBox[] = [];
const servers: ScriptedModelServer[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
  for (const box of boxes.splice(0)) rmSync(box.root, { recursive: true, force: true });
});

const ERRAND_BASH = 'mcp__errand__bash';
const ERRAND_TASK_LIST = 'mcp__errand__task_list';
const MAX_PAUSES = 120;

/** Polls `predicate` every 50 ms until it holds; fails with `what` after `timeoutMs`. */
async function until(predicate: () => boolean, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolvePromise) => setTimeout(resolvePromise, 50));
  }
}

/** Pids of processes whose command line names `marker`. */
function processesNaming(marker: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'latin1').includes(marker)) found.push(Number(name));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

/** Tasks the store still records as running or stopping. */
function storedRunning(errandHome: string): string[] {
  const store = openSqliteSessionStore({ home: errandHome });
  try {
    return store
      .listTasks()
      .filter((task) => task.status === 'running' || task.status === 'stopping')
      .map((task) => task.id);
  } finally {
    store.close();
  }
}

describe.skipIf(claude === undefined)('errand mcp SIGKILLed, started again by the client', () => {
  it('Claude Code: claude -p, the server killed mid-job, then claude -p --continue: told once that the lifeline stopped it, task_list shows it, nothing left running', async () => {
    const box = clientBox('errand-rs-');
    boxes.push(box);
    const marker = `restart-job-${process.pid}-${Date.now()}`;
    let phase: 'first' | 'second' = 'first';
    let started = false;
    let pauses = 0;
    const pause = (request: ModelRequest): ModelReply => {
      pauses += 1;
      if (pauses > MAX_PAUSES) throw new Error(`no Errand tools among ${request.tools.join(', ')}`);
      return { kind: 'tool', name: 'Bash', args: { command: 'sleep 0.25', description: 'wait a moment' } };
    };
    /** Second run: requests carrying the notification, and whether task_list was called. */
    const carried: string[] = [];
    let listed = false;
    const model = await startScriptedModelServer((request) => {
      if (phase === 'first') {
        if (!started) {
          if (!request.tools.includes(ERRAND_BASH)) return pause(request);
          started = true;
          return {
            kind: 'tool',
            name: ERRAND_BASH,
            args: {
              command: `sleep 600; echo ${marker}`,
              description: 'a long build',
              run_in_background: true,
            },
          };
        }
        return { kind: 'text', text: 'The build runs in the background.' };
      }
      if (notificationCount(request.raw, 'bash-1') > 0) carried.push(request.raw);
      if (!request.tools.includes(ERRAND_TASK_LIST)) return pause(request);
      if (carried.length === 0) return pause(request);
      if (!listed) {
        listed = true;
        return { kind: 'tool', name: ERRAND_TASK_LIST, args: {} };
      }
      return { kind: 'text', text: 'The build was stopped when its server died.' };
    });
    servers.push(model);
    const installed = await runGrouped(
      process.execPath,
      [ERRAND_MAIN, 'install', 'claude-code', '--scope', 'user', '--home', box.errandHome],
      { cwd: box.work, env: { ...process.env, HOME: box.userHome }, timeoutMs: 20_000 },
    );
    expect(installed.code, installed.output).toBe(0);
    markClaudeCodeSetUp(box.userHome, box.work);
    const env = claudeCodeEnvironment(box.userHome, model.origin);
    const flags = ['--dangerously-skip-permissions', '--model', 'claude-sonnet-4-5'];

    // First run: the job starts, the turn ends, the headless hold waits for it — and errand mcp dies.
    const first = runGrouped(claude as string, ['-p', 'Build it.', ...flags], {
      cwd: box.work,
      env,
      timeoutMs: 180_000,
    });
    await until(() => processesNaming(marker).length > 0, 'the job to run', 120_000);
    await until(
      () => model.turns.some((turn) => turn.raw.includes('runs in the background')),
      'the final answer',
      60_000,
    );
    const [server] = listLiveServers(box.errandHome);
    expect(server).toBeDefined();
    process.kill(server!.server.pid, 'SIGKILL');
    const firstRun = await first;
    // The lifeline stops the dead server's job; the store still says running until someone settles it.
    await until(() => processesNaming(marker).length === 0, 'the job stopped', 15_000);
    expect(storedRunning(box.errandHome)).toEqual(['bash-1']);

    // Second run, same directory: Claude Code starts errand mcp again, which takes over the dead session.
    phase = 'second';
    const turnsBefore = model.turns.length;
    const second = await runGrouped(
      claude as string,
      ['-p', '--continue', 'What happened to the build?', ...flags],
      { cwd: box.work, env, timeoutMs: 180_000 },
    );
    expect(second.code, second.output).toBe(0);
    expect(second.output).toContain('stopped when its server died');
    const secondTurns = model.turns.slice(turnsBefore);
    // Told once: every request from the first that carried it carries it exactly once.
    const firstWith = secondTurns.findIndex((turn) => notificationCount(turn.raw, 'bash-1') > 0);
    expect(firstWith).toBeGreaterThanOrEqual(0);
    const counts = secondTurns.slice(firstWith).map((turn) => notificationCount(turn.raw, 'bash-1'));
    expect(counts.every((count) => count === 1)).toBe(true);
    const told = secondTurns[firstWith]!.raw;
    expect(told).toMatch(/runtime_died/);
    // task_list shows it, ended.
    const last = secondTurns.at(-1)!.raw;
    expect(last).toMatch(/bash-1 \[bash\] killed/);
    expect(storedRunning(box.errandHome)).toEqual([]);
    process.stderr.write(
      `Claude Code restart: first run exit ${firstRun.code}; second run: ${secondTurns.length} model requests, the notification first in request ${firstWith + 1}, carried once by each of the ${counts.length} from there; summary ${/<summary>([^<]*)<\/summary>/.exec(told)?.[1] ?? '?'}\n`,
    );
  }, 400_000);
});
