/**
 * `errand mcp` SIGKILLed while a background job runs, and the real client starting it again: the
 * pinned Claude Code (`claude -p`, then `claude -p --continue` in the same directory), Codex (`codex
 * exec`, then `codex exec resume --last`) and Gemini CLI (`gemini -p`, then `gemini -p --resume latest`):
 * a new server of the same client there takes over the dead one's session. Against a scripted model on
 * 127.0.0.1.
 * The model must be told exactly once what became of its work — stopped by the lifeline, naming the
 * case (`runtime_died`) — `task_list` must show it, and nothing of the dead server may stay `running`
 * in the store. Counted at the scripted model: the requests carrying the notification.
 */
import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import {
  claudeCodeEnvironment,
  findClaudeCode,
  installForClaudeCode,
} from '../../test/support/claude-code.js';
import {
  type ClientBox,
  clientArgs,
  clientBox,
  clientEnvironment,
  clientShell,
  findErrandBash,
  findErrandTool,
  findRealClient,
  installClient,
  notificationCount,
  pollUntil,
  processesNaming,
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

const boxes: ClientBox[] = [];
const servers: ScriptedModelServer[] = [];

/** Ends the client runs a failed test left behind. */
let runs = new AbortController();

afterEach(async () => {
  runs.abort();
  runs = new AbortController();
  for (const server of servers.splice(0)) await server.close();
  for (const box of boxes.splice(0)) rmSync(box.root, { recursive: true, force: true });
});

const MAX_PAUSES = 120;

const until = pollUntil;

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

interface Driver {
  readonly name: string;
  readonly executable: string | undefined;
  /** `errand install` into the box, the client's own settings, and its environment. */
  setUp(box: ClientBox, origin: string): Promise<NodeJS.ProcessEnv>;
  /** The first run's arguments, and the second's (continuing the directory's latest session). */
  readonly firstArgs: readonly string[];
  readonly secondArgs: readonly string[];
  bash(tools: readonly string[]): string | undefined;
  taskList(tools: readonly string[]): string | undefined;
  readonly pause: ModelReply;
  /** On the command line of its end-of-turn hook (not the wake's). */
  readonly stopHook: string;
}

const CLAUDE_FLAGS = ['--dangerously-skip-permissions', '--model', 'claude-sonnet-4-5'];

const drivers: readonly Driver[] = [
  {
    name: 'Claude Code',
    executable: findClaudeCode(),
    async setUp(box, origin) {
      await installForClaudeCode(box.userHome, box.errandHome, box.work);
      return claudeCodeEnvironment(box.userHome, origin);
    },
    firstArgs: ['-p', 'Build it.', ...CLAUDE_FLAGS],
    secondArgs: ['-p', '--continue', 'What happened to the build?', ...CLAUDE_FLAGS],
    bash: (tools) => tools.find((tool) => tool === 'mcp__errand__bash'),
    taskList: (tools) => tools.find((tool) => tool === 'mcp__errand__task_list'),
    pause: { kind: 'tool', name: 'Bash', args: { command: 'sleep 0.25', description: 'wait a moment' } },
    stopHook: 'hook claude-code Stop --home',
  },
  ...(['codex', 'gemini'] as const).map(
    (client): Driver => ({
      name: client === 'codex' ? 'Codex' : 'Gemini CLI',
      executable: findRealClient(client),
      async setUp(box, origin) {
        await installClient(client, box, origin);
        return clientEnvironment(client, box, origin);
      },
      firstArgs: clientArgs(client, 'headless', 'Build it.'),
      secondArgs: clientArgs(client, 'headless', 'What happened to the build?', { resume: true }),
      bash: findErrandBash,
      taskList: (tools) => findErrandTool(tools, 'task_list'),
      pause: clientShell(client, 0.25),
      stopHook: client === 'codex' ? 'hook codex Stop' : 'hook gemini AfterAgent',
    }),
  ),
];

describe('errand mcp SIGKILLed, started again by the client', () => {
  for (const driver of drivers) {
    it.skipIf(driver.executable === undefined)(
      `${driver.name}: the server killed mid-job in a headless run, then the run continued in the same directory: told once that the lifeline stopped it, task_list shows it, nothing left running`,
      async () => {
        const box = clientBox('errand-rs-');
        boxes.push(box);
        const marker = `restart-job-${process.pid}-${Date.now()}`;
        let phase: 'first' | 'second' = 'first';
        let started = false;
        let pauses = 0;
        const pause = (request: ModelRequest): ModelReply => {
          pauses += 1;
          if (pauses > MAX_PAUSES) throw new Error(`no Errand tools among ${request.tools.join(', ')}`);
          return driver.pause;
        };
        const carried: string[] = [];
        let listed = false;
        let answered = false;
        const model = await startScriptedModelServer((request) => {
          if (phase === 'first') {
            if (!started) {
              const bash = driver.bash(request.tools);
              if (bash === undefined) return pause(request);
              started = true;
              return {
                kind: 'tool',
                name: bash,
                args: {
                  command: `sleep 600; echo ${marker}`,
                  description: 'a long build',
                  run_in_background: true,
                },
              };
            }
            answered = true;
            return { kind: 'text', text: 'The build runs in the background.' };
          }
          if (notificationCount(request.raw, 'bash-1') > 0) carried.push(request.raw);
          const taskList = driver.taskList(request.tools);
          if (taskList === undefined || carried.length === 0) return pause(request);
          if (!listed) {
            listed = true;
            return { kind: 'tool', name: taskList, args: {} };
          }
          return { kind: 'text', text: 'The build was stopped when its server died.' };
        });
        servers.push(model);
        const env = await driver.setUp(box, model.origin);

        // First run: the job starts, the turn ends, the headless hold waits for it — and errand mcp dies.
        const first = runGrouped(driver.executable as string, driver.firstArgs, {
          cwd: box.work,
          env,
          timeoutMs: 180_000,
          signal: runs.signal,
        });
        await until(() => processesNaming(marker).length > 0, 'the job to run', 120_000);
        // The turn ended and its end-of-turn hook holds the run for the job.
        await until(
          () => answered && processesNaming(driver.stopHook).length > 0,
          'the held end of the turn',
          60_000,
        );
        const [server] = listLiveServers(box.errandHome);
        expect(server).toBeDefined();
        process.kill(server!.server.pid, 'SIGKILL');
        const firstRun = await first;
        // The lifeline stops the dead server's job; the store says running until someone settles it.
        await until(() => processesNaming(marker).length === 0, 'the job stopped', 15_000);
        expect(storedRunning(box.errandHome)).toEqual(['bash-1']);

        // Second run, same directory: the client starts errand mcp again; it takes over the dead session.
        phase = 'second';
        const turnsBefore = model.turns.length;
        const second = await runGrouped(driver.executable as string, driver.secondArgs, {
          cwd: box.work,
          env,
          timeoutMs: 180_000,
          signal: runs.signal,
        });
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
        expect(secondTurns.at(-1)!.raw).toMatch(/bash-1 \[bash\] killed/);
        expect(storedRunning(box.errandHome)).toEqual([]);
        process.stderr.write(
          `${driver.name} restart: first run exit ${firstRun.code}; second run: ${secondTurns.length} model requests, the notification first in request ${firstWith + 1}, carried once by each of the ${counts.length} from there; summary ${/summary(?:>|\\u003e)(.*?)(?:<|\\u003c)\/summary/.exec(told)?.[1] ?? '?'}\n`,
        );
      },
      400_000,
    );
  }
});
